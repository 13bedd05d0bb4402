/**
 * An MCP server that cannot start, through the whole runtime: a run that never touches MCP never
 * starts (or waits on) it — the model's roster and plain scripts list only static tools — and a call
 * to one of its tools fails with `mcp_server_unavailable` naming the server and why, not `unknown_tool`.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { stringify } from "yaml";
import { Config } from "../../src/config/schema.ts";
import { createRuntime, type Runtime } from "../../src/runtime.ts";

let rt: Runtime | undefined;
let dir: string | undefined;
afterEach(async () => {
  await rt?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  rt = dir = undefined;
});

/** A runtime whose MCP server `bad` records each start in `<workspace>/bad-started` and exits at once with code 1. */
async function start(turns: unknown[]) {
  dir = mkdtempSync(path.join(tmpdir(), "airlock-mcp-bad-"));
  const dataDir = path.join(dir, "data");
  const ws = path.join(dir, "ws");
  mkdirSync(dataDir);
  mkdirSync(ws);
  writeFileSync(path.join(dataDir, "turns.yaml"), stringify({ turns }));
  const config = Config.parse({
    provider: { name: "scripted", script: "turns.yaml" },
    mode: "autonomous",
    mcp_servers: { bad: { command: "node", args: ["-e", "require('fs').appendFileSync('bad-started', 'x'); process.exit(1)"] } },
  });
  const logs: string[] = [];
  rt = await createRuntime({ config, configDir: dataDir, dataDir, workspace: ws, env: {}, log: (l) => logs.push(l) });
  const events: { type: string; data: any }[] = [];
  rt.bus.subscribeAll((e) => {
    if (e.type === "tool_result") events.push({ type: e.type, data: e.data });
  });
  const session = await rt.createSession({ workspace: ws });
  return { rt, ws, logs, events, session, marker: path.join(ws, "bad-started") };
}

describe("an MCP server that fails to start", () => {
  test("a run that never touches MCP never starts it: not for the model's roster, not for a script", async () => {
    const t = await start([{ tool_calls: [{ name: "code_execution__execute", arguments: { code: "return 6 * 7" } }] }, { text: "forty-two" }]);
    const r = await t.rt.runTurn(t.session.id, "compute");
    expect(r).toMatchObject({ status: "completed", answer: "forty-two", error: null, iterations: 2 });
    expect(t.events.map((e) => [e.data.tool, e.data.ok, e.data.result?.value])).toEqual([["code_execution__execute", true, 42]]);
    expect(existsSync(t.marker)).toBe(false);
    expect(t.logs.filter((l) => l.includes("[mcp:bad]"))).toEqual([]);
  });

  test("a call to bad__x (from a script, and directly) fails with mcp_server_unavailable naming the server and the reason", async () => {
    const t = await start([
      {
        tool_calls: [
          {
            name: "code_execution__execute",
            arguments: { code: "try { await tools.bad__x({}); return 'ran'; } catch (e) { return { code: e.code, message: e.message }; }" },
          },
        ],
      },
      { tool_calls: [{ name: "bad__x", arguments: {} }] },
      { text: "done" },
    ]);
    const r = await t.rt.runTurn(t.session.id, "use the bad server");
    expect(r.status).toBe("completed");
    const bad = t.events.filter((e) => e.data.tool === "bad__x").map((e) => e.data);
    expect(bad.length).toBe(2);
    for (const b of bad) {
      expect(b.ok).toBe(false);
      expect(b.error.code).toBe("mcp_server_unavailable");
      expect(b.error.message).toContain('MCP server "bad"');
      expect(b.error.message).toContain("exited with code 1");
    }
    const script = t.events.find((e) => e.data.tool === "code_execution__execute")!.data;
    expect(script.ok).toBe(true);
    expect(script.result.value.code).toBe("mcp_server_unavailable");
    expect(script.result.value.message).toContain('MCP server "bad"');
    // the server was really tried (each call lists it; backoff may skip the second start)
    expect(readFileSync(t.marker, "utf8").length).toBeGreaterThanOrEqual(1);
  });

  test("code_execution__list_tools does list (and so starts) the MCP servers", async () => {
    const t = await start([{ tool_calls: [{ name: "code_execution__list_tools", arguments: {} }] }, { text: "listed" }]);
    const r = await t.rt.runTurn(t.session.id, "what tools?");
    expect(r.status).toBe("completed");
    const listed = t.events.find((e) => e.data.tool === "code_execution__list_tools")!.data;
    expect(listed.ok).toBe(true);
    expect(listed.result.map((s: { name: string }) => s.name)).toContain("developer__shell");
    expect(existsSync(t.marker)).toBe(true);
    expect(t.logs.some((l) => l.startsWith("[mcp:bad] tools not listed:"))).toBe(true);
  });
});
