/**
 * `tools.offer` (issue 19): what the model is offered, as the provider receives it on the wire, for
 * `code` (the default), `direct` and `both`; and a direct `developer__shell` call the model makes from
 * that roster is judged by the same gate (approve mode parks a card; the call runs once allowed).
 */
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { startFakeOpenAI, textChunks, toolCallChunks, type FakeOpenAI } from "../fixtures/fake-openai.ts";
import { harnessSse, startHarness, type Harness } from "../harness.ts";

const ROOT = path.resolve(import.meta.dir, "../..");
const EVERYTHING = path.join(ROOT, "node_modules/@modelcontextprotocol/server-everything/dist/index.js");

let h: Harness | undefined;
let fake: FakeOpenAI | undefined;
afterEach(async () => {
  await h?.close();
  await fake?.close();
  h = fake = undefined;
});

/** One turn answered "done" at once; returns the tool names and the system prompt of the request. */
async function rosterFor(offer: "code" | "direct" | "both" | undefined): Promise<{ names: string[]; system: string; params: Record<string, any> }> {
  fake = startFakeOpenAI(() => textChunks("done"));
  h = await startHarness({
    config: {
      provider: { name: "openai", base_url: fake.url, model: "fake-model" },
      mode: "autonomous",
      ...(offer ? { tools: { offer } } : {}),
      mcp_servers: { ev: { command: "node", args: [EVERYTHING, "stdio"], sandbox: "read-only" } },
    },
  });
  const s = await h.createSession();
  const r = await h.rt.runTurn(s.id, "hello");
  expect(r.status).toBe("completed");
  const body = fake.requests[0];
  const names: string[] = (body.tools ?? []).map((t: any) => t.function.name).sort();
  const params = Object.fromEntries((body.tools ?? []).map((t: any) => [t.function.name, t.function.parameters]));
  return { names, system: body.messages[0].content, params };
}

describe("tools.offer: the roster the provider receives", () => {
  test("code (the default): code_execution__* and subagent__* only, no MCP server started", async () => {
    const { names, system } = await rosterFor(undefined);
    expect(names).toEqual(["code_execution__execute", "code_execution__list_tools", "subagent__spawn", "subagent__watch"]);
    expect(system).toContain("code_execution__execute");
  });

  test("direct: the direct tools with their schemas (shell, file tools, interpreters, MCP tools), no code_execution__*", async () => {
    const { names, system, params } = await rosterFor("direct");
    for (const n of ["developer__shell", "developer__read_file", "developer__write_file", "developer__edit_file", "developer__list_dir", "interpreter__python", "interpreter__js", "subagent__spawn"]) {
      expect(names).toContain(n);
    }
    expect(names.some((n) => n.startsWith("ev__"))).toBe(true);
    expect(names.some((n) => n.startsWith("code_execution__"))).toBe(false);
    expect(params.developer__shell.properties.command.type).toBe("string");
    expect(params.developer__shell.required).toContain("command");
    expect(system).toContain("developer__shell");
    expect(system).not.toContain("code_execution__execute");
  });

  test("both: the direct tools and code execution", async () => {
    const { names, system } = await rosterFor("both");
    for (const n of ["code_execution__execute", "code_execution__list_tools", "developer__shell", "developer__read_file", "interpreter__python", "subagent__spawn"]) {
      expect(names).toContain(n);
    }
    expect(names.some((n) => n.startsWith("ev__"))).toBe(true);
    expect(system).toContain("code_execution__execute");
    expect(system).toContain("developer__shell");
  });

  test("a tools.offer outside code | direct | both is a config error", async () => {
    const { Config } = await import("../../src/config/schema.ts");
    expect(Config.safeParse({ tools: { offer: "all" } }).success).toBe(false);
    expect(Config.parse({}).tools.offer).toBe("code");
    expect(Config.parse({ tools: { offer: "both", developer__shell: { permission: "ask" } } }).tools as unknown).toEqual({ offer: "both", developer__shell: { permission: "ask" } });
  });
});

describe("tools.offer: a direct call goes through the gate", () => {
  test("offer both, approve mode: the model's direct developer__shell call parks a card, runs once allowed, and its result goes back", async () => {
    fake = startFakeOpenAI((body, n) => {
      if (n === 0) return toolCallChunks({ name: "developer__shell", arguments: { command: "echo offered > out.txt && echo wrote" }, id: "call_direct" });
      const last = body.messages[body.messages.length - 1];
      return textChunks(`shell said: ${last.content}`);
    });
    h = await startHarness({ config: { provider: { name: "openai", base_url: fake.url, model: "fake-model" }, mode: "approve", tools: { offer: "both" } } });
    const s = await h.createSession();
    const sse = await harnessSse(h, `/sessions/${s.id}/reply`, { method: "POST", json: { message: "write out.txt" } });
    const card = (await sse.waitFor((e) => e.event === "action_required", 60_000)).data;
    expect(card).toMatchObject({ tool: "developer__shell", inspector: "mode", home_session_id: s.id });
    expect(existsSync(path.join(h.workspace, "out.txt"))).toBe(false);
    const res = await h.api(`/sessions/${s.id}/actions/${card.request_id}`, { method: "POST", json: { decision: "allow_once" } });
    expect(res.status).toBe(200);
    const fin = await sse.waitFor((e) => e.event === "turn_finished", 60_000);
    expect(fin.data.status).toBe("completed");
    expect(fin.data.answer).toContain("wrote");
    expect(readFileSync(path.join(h.workspace, "out.txt"), "utf8")).toBe("offered\n");
    const result = sse.events.find((e) => e.event === "tool_result")!.data;
    expect(result).toMatchObject({ call_id: "call_direct", tool: "developer__shell", ok: true });
    // the shell was on the roster the model saw
    expect(fake.requests[0].tools.map((t: any) => t.function.name)).toContain("developer__shell");
  });
});
