/**
 * @module test/security/headless-always-exits
 * Headless runs under attack: `airlock run --headless` as a real process must always
 * exit, refuse every ask at once, and leave no running turn and no process behind — with a background
 * subagent nobody watches, a hook that never exits, and a script in a grandchild awaiting a call that
 * would need a person. Each run is bounded at 20 s; the test fails if the process had to be killed.
 */
import { Database } from "bun:sqlite";
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { harnessSse, startHarness, type Harness } from "../harness.ts";
import { processesWith } from "../processes.ts";

const MAIN = join(import.meta.dir, "../../src/main.ts");
const WALL_MS = 20_000;
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function box(config: Record<string, unknown>, turns: Record<string, unknown>): { dir: string; ws: string } {
  const dir = mkdtempSync(join(tmpdir(), "airlock-r2-headless-"));
  dirs.push(dir);
  const ws = join(dir, "ws");
  mkdirSync(ws);
  writeFileSync(join(dir, "airlock.yaml"), stringify({ provider: { name: "scripted", script: "turns.yaml" }, sandbox: "workspace-write", ...config }));
  writeFileSync(join(dir, "turns.yaml"), stringify(turns));
  return { dir, ws };
}

/** Runs `airlock run go --headless --output-format json`; kills it after WALL_MS (then `killed` is true). */
async function runHeadless(b: { dir: string; ws: string }) {
  const p = Bun.spawn([process.execPath, MAIN, "run", "go", "--headless", "--output-format", "json", "--data-dir", b.dir], {
    cwd: b.ws,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, AIRLOCK_HOME: "" },
  });
  let killed = false;
  const timer = setTimeout(() => {
    killed = true;
    p.kill("SIGKILL");
  }, WALL_MS);
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  clearTimeout(timer);
  return { stdout, stderr, code, killed, result: killed ? null : (JSON.parse(stdout) as any) };
}

/** Turns left `running` in the run's database (a turn nobody will ever finish). */
function runningTurns(dir: string): number {
  const db = new Database(join(dir, "airlock.db"), { readonly: true });
  try {
    return db.query<{ n: number }, []>("SELECT COUNT(*) AS n FROM turns WHERE status = 'running'").get()!.n;
  } finally {
    db.close();
  }
}


describe("airlock run --headless always exits (held)", () => {
  test("background subagents nobody watches: one's ask is refused at once, one's long shell is stopped; nothing keeps running", async () => {
    const b = box(
      { mode: "smart", tools: { developer__shell: { permission: "allow" } } },
      {
        turns: [
          {
            tool_calls: [
              { name: "subagent__spawn", arguments: { instructions: "write a file", background: true } },
              { name: "subagent__spawn", arguments: { instructions: "sleep long", background: true } },
            ],
          },
          // the root answers after 2 s without ever watching its children
          { text: "root done", delay_ms: 2000 },
        ],
        subagents: [
          { turns: [{ tool_calls: [{ name: "developer__write_file", arguments: { path: "bg.txt", content: "x" } }] }, { text: "child a done" }] },
          { turns: [{ tool_calls: [{ name: "developer__shell", arguments: { command: "exec sleep 617.25" } }] }, { text: "child b done" }] },
        ],
      },
    );
    const r = await runHeadless(b);
    expect(r.killed).toBe(false);
    expect(r.code).toBe(0);
    expect(r.result).toMatchObject({ status: "completed", result: "root done" });
    expect(r.result.refused_calls.map((c: any) => [c.tool, c.code])).toEqual([["developer__write_file", "no_human_surface"]]);
    expect(existsSync(join(b.ws, "bg.txt"))).toBe(false);
    expect(runningTurns(b.dir)).toBe(0);
    expect(processesWith("617.25")).toEqual([]);
  }, 30_000);

  test("a hook that never exits (ignores SIGTERM, has a background child) is a refusal at its timeout; the hook's processes are gone", async () => {
    const b = box(
      {
        mode: "autonomous",
        hooks: { PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: "trap '' TERM; sleep 618.25 & sleep 619.25; wait", timeout: 1 }] }] },
      },
      { turns: [{ tool_calls: [{ name: "developer__shell", arguments: { command: "echo ran > ran.txt" } }] }, { text: "done" }] },
    );
    const r = await runHeadless(b);
    expect(r.killed).toBe(false);
    expect(r.result.refused_calls.map((c: any) => [c.tool, c.code, c.inspector])).toEqual([["developer__shell", "hook_timeout", "hook"]]);
    expect(r.result.status).toBe("completed");
    expect(existsSync(join(b.ws, "ran.txt"))).toBe(false);
    expect(runningTurns(b.dir)).toBe(0);
    expect(processesWith("618.25")).toEqual([]);
    expect(processesWith("619.25")).toEqual([]);
  }, 30_000);

  test("a script in a grandchild awaiting a call that needs a person is refused at once; the tree ends", async () => {
    const code = "try { await tools.developer__write_file({ path: ['deep', 'txt'].join('.'), content: 'x' }); return 'ran'; } catch (e) { return e.code; }";
    const b = box(
      { mode: "smart" },
      {
        turns: [{ tool_calls: [{ name: "subagent__spawn", arguments: { instructions: "child" } }] }, { text: "root done" }],
        subagents: [
          { turns: [{ tool_calls: [{ name: "subagent__spawn", arguments: { instructions: "grandchild" } }] }, { text: "child done" }] },
          { turns: [{ tool_calls: [{ name: "code_execution__execute", arguments: { code } }] }, { text: "grandchild done" }] },
        ],
      },
    );
    const r = await runHeadless(b);
    expect(r.killed).toBe(false);
    expect(r.code).toBe(0);
    expect(r.result.refused_calls).toHaveLength(1);
    expect(r.result.refused_calls[0]).toMatchObject({ tool: "developer__write_file", code: "no_human_surface", from_script: true, inspector: "mode" });
    const db = new Database(join(b.dir, "airlock.db"), { readonly: true });
    try {
      const parentOf = (id: string) => db.query<{ parent_session_id: string | null }, [string]>("SELECT parent_session_id FROM sessions WHERE id = ?").get(id)!.parent_session_id;
      expect(parentOf(parentOf(r.result.refused_calls[0].session_id)!)).toBe(r.result.session_id);
      // the script saw the refusal as its call's error
      const toolMsgs = db.query<{ content: string }, [string]>("SELECT content FROM messages WHERE session_id = ? AND role = 'tool'").all(r.result.refused_calls[0].session_id);
      expect(JSON.parse(toolMsgs[0]!.content).value).toBe("no_human_surface");
    } finally {
      db.close();
    }
    expect(existsSync(join(b.ws, "deep.txt"))).toBe(false);
    expect(runningTurns(b.dir)).toBe(0);
  }, 30_000);
});

// A hook's setsid child is now killed with the hook (pipe holders): tested in src/gate/inspectors/hooks.test.ts.

describe("headless over HTTP (held)", () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  test("a child created over the API as headless: false under a headless session is still headless; its ask is never parked", async () => {
    h = await startHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "smart" },
      files: { "turns.yaml": `subagents:\n  - turns:\n      - tool_calls: [{ name: developer__write_file, arguments: { path: "x.txt", content: "x" } }]\n      - text: done\n` },
    });
    const root = await h.createSession({ headless: true, mode: "smart" });
    const child = await h.createSession({ parent_session_id: root.id, headless: false });
    expect(child.headless).toBe(true);
    const parked: string[] = [];
    h.rt.bus.subscribeAll((ev) => {
      if (ev.type === "action_required") parked.push(String(ev.data.request_id));
    });
    const reply = await harnessSse(h, `/sessions/${child.id}/reply`, { method: "POST", json: { message: "go" } });
    const res = await reply.waitFor((e) => e.event === "tool_result");
    expect(res.data).toMatchObject({ ok: false, error: { code: "no_human_surface" } });
    await reply.waitFor((e) => e.event === "turn_finished");
    reply.close();
    expect(parked).toEqual([]);
    expect(h.rt.inflight.size()).toBe(0);
    expect(h.rt.permits.inUse).toBe(0);
  });
});
