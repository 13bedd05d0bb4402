/**
 * @module test/integration/cancel-waits
 * Every wait of a turn honours cancel (`POST /sessions/:id/cancel`): each case starts a turn that is
 * stuck on a real thing for far longer than the test timeout (600 s), waits until it is stuck, cancels,
 * and expects the turn to end `cancelled`. Only a working cancel can pass; no wall-clock assertion.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, rmSync, watch } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { harnessSse, startHarness, type Harness, type SseStream } from "../harness.ts";

const STUCK_S = 600;
let h: Harness | undefined;
let stopFake: (() => void) | undefined;
let cleanup: (() => void) | undefined;
afterEach(async () => {
  await h?.close();
  stopFake?.();
  cleanup?.();
  h = undefined;
  stopFake = cleanup = undefined;
});

function scripted(calls: { name: string; arguments: Record<string, unknown> }[]): string {
  return `turns:\n  - tool_calls:\n${calls.map((c) => `      - name: ${c.name}\n        arguments: ${JSON.stringify(c.arguments)}\n`).join("")}  - text: "after"\n`;
}

/** Resolves when file `name` exists in folder `dir` (watched, not polled). */
function fileAppears(dir: string, name: string): Promise<void> {
  return new Promise((resolve) => {
    const w = watch(dir, () => {
      if (existsSync(join(dir, name))) {
        w.close();
        resolve();
      }
    });
    if (existsSync(join(dir, name))) {
      w.close();
      resolve();
    }
  });
}

/** Posts a reply, waits until `stuck()` holds, cancels over HTTP, and returns the turn_finished event. */
async function cancelWhenStuck(sessionId: string, stuck: (reply: SseStream) => Promise<unknown>): Promise<{ status: string; error?: { code: string } }> {
  const reply = await harnessSse(h!, `/sessions/${sessionId}/reply`, { method: "POST", json: { message: "go" } });
  await stuck(reply);
  const res = await h!.api(`/sessions/${sessionId}/cancel`, { method: "POST" });
  expect(res.status).toBeLessThan(300);
  const fin = await reply.waitFor((e) => e.event === "turn_finished", 50_000);
  reply.close();
  return fin.data;
}

describe("cancel ends a turn while an MCP server starts or answers", () => {
  test("an MCP server that never answers initialize (timeout_s 600): the turn ends cancelled", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "airlock-test-"));
    mkdirSync(join(dataDir, "workspace"));
    cleanup = () => rmSync(dataDir, { recursive: true, force: true });
    h = await startHarness({
      dataDir,
      config: {
        provider: { name: "scripted", script: "turns.yaml" },
        mode: "autonomous",
        // runs under bwrap in the test's workspace; `started` says it is up and will never answer
        mcp_servers: { mute: { command: "sh", args: ["-c", `touch started; exec sleep ${STUCK_S}`], timeout_s: STUCK_S, cwd: join(dataDir, "workspace") } },
      },
      // the first call of a server's tool starts it (and waits for its tool list)
      files: { "turns.yaml": scripted([{ name: "mute__anything", arguments: {} }]) },
    });
    const s = await h.createSession();
    const fin = await cancelWhenStuck(s.id, () => fileAppears(h!.workspace, "started"));
    expect(fin).toMatchObject({ status: "cancelled", error: { code: "cancelled" } });
    expect(h.rt.inflight.has(s.id)).toBe(false);
    // shutting down does not wait out the start either
    await h.close();
    h = undefined;
  });

  test("an MCP server that starts, then never answers a call (timeout_s 600): the turn ends cancelled", async () => {
    h = await startHarness({
      config: {
        provider: { name: "scripted", script: "turns.yaml" },
        mode: "autonomous",
        mcp_servers: { ev: { command: process.execPath, args: [join(import.meta.dir, "..", "fixtures", "mcp-hang.ts")], timeout_s: STUCK_S, sandbox: "danger-full-access" } },
      },
      files: { "turns.yaml": scripted([{ name: "ev__hang", arguments: {} }]) },
    });
    const s = await h.createSession();
    const fin = await cancelWhenStuck(s.id, (r) => r.waitFor((e) => e.event === "tool_request" && e.data.tool === "ev__hang", 50_000));
    expect(fin).toMatchObject({ status: "cancelled" });
  });

});

// These waits already honoured cancel before the MCP fix; kept so none of them regresses.
describe("cancel ends a turn whatever it waits on (held)", () => {
  test("a provider that accepts the connection and never sends: the turn ends cancelled", async () => {
    let arrived!: () => void;
    const requested = new Promise<void>((r) => (arrived = r));
    const server = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      idleTimeout: 0,
      fetch() {
        arrived();
        return new Promise<Response>(() => {}); // never answers
      },
    });
    stopFake = () => server.stop(true);
    h = await startHarness({ config: { provider: { name: "openai", base_url: `http://127.0.0.1:${server.port}/v1`, model: "m" }, mode: "autonomous" }, env: { OPENAI_API_KEY: "k" } });
    const s = await h.createSession();
    const fin = await cancelWhenStuck(s.id, () => requested);
    expect(fin).toMatchObject({ status: "cancelled" });
  });

  test("a PreToolUse hook that sleeps: the turn ends cancelled", async () => {
    h = await startHarness({
      config: {
        provider: { name: "scripted", script: "turns.yaml" },
        mode: "autonomous",
        hooks: { PreToolUse: [{ matcher: "", hooks: [{ type: "command", command: `touch hooked; sleep ${STUCK_S}`, timeout: STUCK_S }] }] },
      },
      files: { "turns.yaml": scripted([{ name: "developer__list_dir", arguments: { path: "." } }]) },
    });
    const s = await h.createSession();
    const fin = await cancelWhenStuck(s.id, () => fileAppears(h!.workspace, "hooked"));
    expect(fin).toMatchObject({ status: "cancelled" });
  });

  test("a script in an infinite loop (script_timeout_ms 600 s): the turn ends cancelled", async () => {
    h = await startHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous", limits: { script_timeout_ms: STUCK_S * 1000, script_wall_timeout_ms: STUCK_S * 1000 } },
      files: { "turns.yaml": scripted([{ name: "code_execution__execute", arguments: { code: "for (;;) {}" } }]) },
    });
    const s = await h.createSession();
    const fin = await cancelWhenStuck(s.id, (r) => r.waitFor((e) => e.event === "tool_request" && e.data.tool === "code_execution__execute", 50_000));
    expect(fin).toMatchObject({ status: "cancelled" });
  });

  test("a shell running sleep 600: the turn ends cancelled", async () => {
    h = await startHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous" },
      files: { "turns.yaml": scripted([{ name: "developer__shell", arguments: { command: `sleep ${STUCK_S}` } }]) },
    });
    const s = await h.createSession();
    const fin = await cancelWhenStuck(s.id, (r) => r.waitFor((e) => e.event === "tool_request" && e.data.tool === "developer__shell", 50_000));
    expect(fin).toMatchObject({ status: "cancelled" });
  });

  test("a card nobody answers, and a subagent waiting on its own card: the turn ends cancelled", async () => {
    h = await startHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "smart", approvals: { ttl_seconds: STUCK_S } },
      files: {
        "turns.yaml": `turns:\n  - tool_calls:\n      - name: subagent__spawn\n        arguments: { instructions: "write" }\n  - text: "after"\nsubagents:\n  - turns:\n      - tool_calls: [{ name: developer__write_file, arguments: { path: "x.txt", content: "x" } }]\n      - text: "child done"\n`,
      },
    });
    const s = await h.createSession();
    const fin = await cancelWhenStuck(s.id, (r) => r.waitFor((e) => e.event === "action_required", 50_000));
    expect(fin).toMatchObject({ status: "cancelled" });
    expect(existsSync(join(h.workspace, "x.txt"))).toBe(false);
  });
});
