/**
 * `GET /openapi.json` (a real server on loopback): a valid OpenAPI 3.1 document (checked by a real validator),
 * behind the bearer token, naming every route the Hono app registers and no other, in step with docs/api.md's
 * route table; and real answers of the routes match the schemas the document gives them.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Validator } from "@seriousme/openapi-schema-validator";
import type { z } from "zod";
import { createApp } from "../../src/server/app.ts";
import { API_ROUTES, openApiPath } from "../../src/server/openapi.ts";
import { harnessSse, startHarness, type Harness } from "../harness.ts";

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "approve" },
    files: { "turns.yaml": `turns:\n  - tool_calls: [{ name: developer__write_file, arguments: { path: "a.txt", content: "hi" } }]\n  - text: "done"\n` },
  });
});
afterAll(async () => {
  await h?.close();
});

/** `METHOD /path` (Hono spelling) of every route the app registers: middleware (`ALL`, `*`) left out. */
function appRoutes(): Set<string> {
  const app = createApp(h.rt);
  return new Set(app.routes.filter((r) => r.method !== "ALL" && !r.path.includes("*")).map((r) => `${r.method} ${r.path}`));
}

/** `METHOD /path` of every operation in the document, with OpenAPI's `{id}` turned back into Hono's `:id`. */
function documentedRoutes(doc: { paths: Record<string, Record<string, unknown>> }): Set<string> {
  const out = new Set<string>();
  for (const [p, ops] of Object.entries(doc.paths)) for (const m of Object.keys(ops)) out.add(`${m.toUpperCase()} ${p.replace(/\{([^}]+)\}/g, ":$1")}`);
  return out;
}

/**
 * The routes named in the first column of docs/api.md's "## Routes" table: each backticked `METHOD[/METHOD…] /path`,
 * a bare `/path` taking the methods of the one before it in its cell.
 */
function docsRoutes(): Set<string> {
  const text = readFileSync(join(import.meta.dir, "../../docs/api.md"), "utf8");
  const section = text.slice(text.indexOf("\n## Routes\n"), text.indexOf("\n## ", text.indexOf("\n## Routes\n") + 5));
  const out = new Set<string>();
  for (const line of section.split("\n")) {
    if (!line.startsWith("| `")) continue;
    const cell = line.split("|")[1]!;
    let methods: string[] = [];
    for (const m of cell.matchAll(/`([^`]+)`/g)) {
      const parts = /^(?:([A-Z/]+) )?(\/\S*)$/.exec(m[1]!.trim());
      if (!parts) throw new Error(`docs/api.md route cell not understood: ${m[1]}`);
      if (parts[1]) methods = parts[1].split("/");
      for (const meth of methods) out.add(`${meth} ${parts[2]}`);
    }
  }
  return out;
}

describe("GET /openapi.json", () => {
  test("needs the bearer token, and is a valid OpenAPI 3.1 document", async () => {
    const anon = await fetch(`${h.url}/openapi.json`);
    expect(anon.status).toBe(401);
    expect(((await anon.json()) as { error: string }).error).toBe("unauthorized");

    const res = await h.api("/openapi.json");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("application/json");
    const doc = (await res.json()) as Record<string, any>;
    expect(doc.openapi).toBe("3.1.0");
    const result = await new Validator().validate(doc);
    if (!result.valid) writeFileSync("/tmp/openapi-invalid.json", JSON.stringify(result.errors, null, 1));
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    // the error object and the whole status table are there
    expect(doc.components.schemas.ApiError.required).toEqual(["error", "message"]);
    expect(doc["x-airlock-error-status"].session_busy).toBe(409);
    expect(doc.components.responses.Error409.description).toContain("session_busy");
    // SSE routes carry one frame schema per event, each event's data its schema
    const events = doc.paths["/sessions/{id}/events"].get.responses["200"].content["text/event-stream"].schema.oneOf;
    expect(events.map((e: any) => e.title)).toEqual(["snapshot", "turn_started", "delta", "message", "tool_request", "tool_result", "action_required", "action_resolved", "turn_finished", "error", "hook_message"]);
    expect(events[6].properties.data).toEqual({ $ref: "#/components/schemas/Card" });
    expect(doc.paths["/health"].get.security).toEqual([]);
  });

  test("names every route the app registers, with the same method and path, and no other", async () => {
    const doc = (await (await h.api("/openapi.json")).json()) as { paths: Record<string, Record<string, unknown>> };
    const registered = appRoutes();
    const documented = documentedRoutes(doc);
    expect([...registered].filter((r) => !documented.has(r))).toEqual([]);
    expect([...documented].filter((r) => !registered.has(r))).toEqual([]);
    expect(registered.size).toBeGreaterThan(25);
    expect(openApiPath("/sessions/:id/actions/:request_id")).toBe("/sessions/{id}/actions/{request_id}");
  });

  test("docs/api.md's route table lists the same routes as the document", async () => {
    const doc = (await (await h.api("/openapi.json")).json()) as { paths: Record<string, Record<string, unknown>> };
    const documented = documentedRoutes(doc);
    const inDocs = docsRoutes();
    expect([...documented].filter((r) => !inDocs.has(r))).toEqual([]);
    expect([...inDocs].filter((r) => !documented.has(r))).toEqual([]);
  });

  test("real answers match the schemas the document gives them", async () => {
    const schemaOf = (method: string, path: string): z.ZodType => {
      const r = API_ROUTES.find((x) => x.method === method && x.path === path);
      if (!r || !("json" in r.ok)) throw new Error(`no JSON route ${method} ${path}`);
      return r.ok.json;
    };
    const check = async (method: string, path: string, url: string, init: RequestInit & { json?: unknown } = {}) => {
      const res = await h.api(url, { method: method.toUpperCase(), ...init });
      const body = await res.json();
      const r = schemaOf(method, path).safeParse(body);
      if (!r.success) throw new Error(`${method} ${url}: ${JSON.stringify(r.error.issues)}\n${JSON.stringify(body)}`);
      return body as any;
    };
    await check("get", "/health", "/health");
    const s = await check("post", "/sessions", "/sessions", { json: { workspace: h.workspace } });
    const reply = await harnessSse(h, `/sessions/${s.id}/reply`, { method: "POST", json: { message: "write it" } });
    const card = (await reply.waitFor((e) => e.event === "action_required")).data;
    await check("get", "/sessions", "/sessions");
    await check("get", "/actions", "/actions");
    await check("get", "/sessions/:id/actions", `/sessions/${s.id}/actions`);
    await check("get", "/sessions/:id/actions/:request_id/preview", `/sessions/${s.id}/actions/${card.request_id}/preview`);
    const outcome = await check("post", "/sessions/:id/actions/:request_id", `/sessions/${s.id}/actions/${card.request_id}`, { json: { decision: "allow_session" } });
    expect(outcome.rule_id).toBeString();
    await reply.waitFor((e) => e.event === "turn_finished");
    await check("get", "/sessions/:id", `/sessions/${s.id}`);
    await check("get", "/sessions/:id/rules", `/sessions/${s.id}/rules`);
    await check("delete", "/sessions/:id/rules/:rule_id", `/sessions/${s.id}/rules/${outcome.rule_id}`);
    await check("post", "/sessions/:id/cancel", `/sessions/${s.id}/cancel`);
    const audit = await check("get", "/audit", `/audit?session=${s.id}`);
    expect(audit.audit.length).toBeGreaterThan(0);
    await check("get", "/schedules", "/schedules");
    await check("get", "/runs", "/runs");
    const sch = await check("post", "/schedules", "/schedules", { json: { cron: "0 3 1 1 *", recipe_path: "/r.yaml", recipe_text: 'name: yearly\ninstructions: "check"\n' } });
    await check("get", "/schedules", "/schedules");
    await check("get", "/schedules/:id", `/schedules/${sch.id}`);
    await check("get", "/schedules/:id/runs", `/schedules/${sch.id}/runs`);
    await check("delete", "/schedules/:id", `/schedules/${sch.id}`);
    // the snapshots of both SSE routes that open with one match the schemas the document gives them
    const sseSchemas = (path: string) => (API_ROUTES.find((x) => x.path === path)!.ok as { sse: Record<string, z.ZodType> }).sse;
    for (const [path, url] of [["/sessions/:id/events", `/sessions/${s.id}/events`], ["/console/events", "/console/events"]] as const) {
      const stream = await harnessSse(h, url);
      const snap = await stream.waitFor((e) => e.event === "snapshot");
      stream.close();
      const r = sseSchemas(path).snapshot!.safeParse(snap.data);
      if (!r.success) throw new Error(`${url} snapshot: ${JSON.stringify(r.error.issues)}`);
    }
    // every event of the turn matches its event schema in the document's registry
    const sse = API_ROUTES.find((x) => x.path === "/sessions/:id/reply")!.ok as { sse: Record<string, z.ZodType> };
    for (const e of reply.events) expect([e.event, sse.sse[e.event]!.safeParse(e.data).success]).toEqual([e.event, true]);
  });
});
