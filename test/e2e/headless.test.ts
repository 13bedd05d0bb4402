/**
 * End-to-end: headless `airlock run` through the compiled binary with the scripted provider.
 * Asks are refused at once (`no_human_surface`) — from scripts, hooks and grandchild subagents — the
 * run never hangs, stdout holds exactly the result (one JSON value, or valid NDJSON), exit codes per SPEC §2.
 */
import { Database } from "bun:sqlite";
import { afterEach, beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { ensureBinary, HOOKS, makeSandbox, parseNdjson, requestToResultMs, spawnAirlock, type Sandbox } from "./headless-helpers.ts";

beforeAll(async () => {
  await ensureBinary();
}, 300_000);

let boxes: Sandbox[] = [];
afterEach(() => {
  for (const b of boxes) b.cleanup();
  boxes = [];
});
function box(opts: Parameters<typeof makeSandbox>[0]): Sandbox {
  const b = makeSandbox(opts);
  boxes.push(b);
  return b;
}

/** The script of the first test: a write to ~/.ssh/config (security floor) and a shell call (hook answers ask). */
function floorAndHookScript(home: string): string {
  return [
    "const out = {};",
    `try { out.write = await tools.developer__write_file({ path: ${JSON.stringify(join(home, ".ssh", "config"))}, content: "Host *\\n" }); } catch (e) { out.write = String(e); }`,
    'try { out.shell = await tools.developer__shell({ command: "echo hello" }); } catch (e) { out.shell = String(e); }',
    "return out;",
  ].join("\n");
}

/**
 * A recipe that overrides the config: the config says `approve` (which would ask — and so refuse — even
 * `code_execution__execute`), the recipe says `autonomous` and adds a hook answering `ask` for Bash.
 */
function floorAndHookBox(direct = false): { b: Sandbox; recipe: string } {
  const b = box({ config: { mode: "approve", provider: { name: "openai", model: "none" } } });
  const calls = direct
    ? [
        { name: "developer__write_file", arguments: { path: join(b.home, ".ssh", "config"), content: "Host *\n" } },
        { name: "developer__shell", arguments: { command: "echo hello" } },
      ]
    : [{ name: "code_execution__execute", arguments: { code: floorAndHookScript(b.home) } }];
  b.write("recipe/turns.yaml", stringify({ turns: [{ tool_calls: calls }, { text: "" }] }));
  const recipe = b.write(
    "recipe/r.yaml",
    stringify({
      name: "floor-and-hook",
      instructions: "touch the ssh config in {{ where }}",
      parameters: { where: { type: "string", default: "home" } },
      provider: { name: "scripted", script: "turns.yaml" },
      mode: "autonomous",
      hooks: { PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: join(HOOKS, "ask.sh"), timeout: 10 }] }] },
    }),
  );
  return { b, recipe };
}

describe("airlock run --headless (binary)", () => {
  test("a script's write to ~/.ssh/config and a hook's ask are both refused; exit 3; stdout is exactly one JSON value", async () => {
    const { b, recipe } = floorAndHookBox();
    const r = await spawnAirlock(b, ["run", "--recipe", recipe, "--headless", "--output-format", "json", "--data-dir", b.dataDir]).done;
    expect(r.stderr).not.toContain("Error:");
    expect(r.code).toBe(3);
    expect(r.stdout.endsWith("\n")).toBe(true);
    expect(r.stdout.trimEnd().split("\n")).toHaveLength(1);
    const result = JSON.parse(r.stdout);
    // tool_calls counts the whole tree: the script and the two calls it made
    expect(result).toMatchObject({ status: "blocked", tool_calls: 3, error: { code: "no_human_surface" } });
    expect(result.refused_calls).toHaveLength(2);
    const byTool = Object.fromEntries(result.refused_calls.map((c: any) => [c.tool, c]));
    expect(byTool.developer__write_file).toMatchObject({ code: "no_human_surface", session_id: result.session_id, from_script: true });
    expect(byTool.developer__shell).toMatchObject({ code: "no_human_surface", session_id: result.session_id, from_script: true });
    expect(byTool.developer__write_file.reason).toMatch(/ssh/i);
    expect(byTool.developer__shell.reason).toContain("hook wants a person");
    expect([byTool.developer__write_file.inspector, byTool.developer__shell.inspector]).toEqual(["sensitive_ops", "hook"]);
    expect(existsSync(join(b.home, ".ssh", "config"))).toBe(false);
  }, 30_000);

  test("stream-json: both refusals arrive at once (no card waits its TTL); every line is JSON; the last is the result", async () => {
    const { b, recipe } = floorAndHookBox();
    const p = spawnAirlock(b, ["run", "--recipe", recipe, "--headless", "--output-format", "stream-json", "--data-dir", b.dataDir]);
    const r = await p.done;
    expect(r.code).toBe(3);
    const events = parseNdjson(r.stdout);
    expect(events.at(-1)).toMatchObject({ type: "result", status: "blocked" });
    expect(events.filter((e) => e.type === "result")).toHaveLength(1);
    const timings = [...requestToResultMs(p.lines).values()].filter((t) => t.result.ok === false && t.result.error.code === "no_human_surface");
    expect(timings.map((t) => t.tool).sort()).toEqual(["developer__shell", "developer__write_file"]);
    // "at once": far below any card TTL (3600 s). How fast is a benchmark's question (scripts/bench/headless.ts,
    // ask_to_refusal_*), never a test's: a loaded machine must not fail this test.
    for (const t of timings) expect(t.ms).toBeLessThan(20_000);
  }, 30_000);

  test("the same asks made directly by the model (recipe overrides mode and hooks): both refused, exit 3", async () => {
    const { b, recipe } = floorAndHookBox(true);
    const r = await spawnAirlock(b, ["run", "--recipe", recipe, "--headless", "--output-format", "json", "--data-dir", b.dataDir]).done;
    expect(r.code).toBe(3);
    const result = JSON.parse(r.stdout);
    expect(result).toMatchObject({ status: "blocked", tool_calls: 2, result: "" });
    const rows = result.refused_calls.map((c: any) => [c.tool, c.code, c.inspector, c.from_script, c.session_id]).sort();
    expect(rows).toEqual([
      ["developer__shell", "no_human_surface", "hook", false, result.session_id],
      ["developer__write_file", "no_human_surface", "sensitive_ops", false, result.session_id],
    ]);
    expect(existsSync(join(b.home, ".ssh", "config"))).toBe(false);
  }, 30_000);

  test("an ask raised in a grandchild subagent is refused; the whole tree ends; exit 3", async () => {
    const b = box({});
    b.write(
      "data/turns.yaml",
      stringify({
        turns: [{ tool_calls: [{ name: "subagent__spawn", arguments: { instructions: "spawn a grandchild" } }] }, { text: "" }],
        subagents: [
          { turns: [{ tool_calls: [{ name: "subagent__spawn", arguments: { instructions: "edit the ssh config" } }] }, { text: "" }] },
          { turns: [{ tool_calls: [{ name: "developer__shell", arguments: { command: `echo 'Host *' >> ${join(b.home, ".ssh", "config")}` } }] }, { text: "" }] },
        ],
      }),
    );
    const r = await spawnAirlock(b, ["run", "go", "--headless", "--output-format", "json", "--data-dir", b.dataDir]).done;
    expect(r.code).toBe(3);
    const result = JSON.parse(r.stdout);
    expect(result.status).toBe("blocked");
    expect(result.refused_calls).toHaveLength(1);
    const refused = result.refused_calls[0];
    expect(refused).toMatchObject({ tool: "developer__shell", code: "no_human_surface", from_script: false });
    const db = new Database(join(b.dataDir, "airlock.db"), { readonly: true });
    try {
      const parentOf = (id: string) => db.query<{ parent_session_id: string | null }, [string]>("SELECT parent_session_id FROM sessions WHERE id = ?").get(id)!.parent_session_id;
      const child = parentOf(refused.session_id)!;
      expect(parentOf(child)).toBe(result.session_id); // the refusal came from depth 2
      const sessions = db.query<{ headless: number }, []>("SELECT headless FROM sessions").all();
      expect(sessions).toHaveLength(3);
      expect(sessions.every((s) => s.headless === 1)).toBe(true);
      expect(db.query<{ n: number }, []>("SELECT COUNT(*) AS n FROM turns WHERE status = 'running'").get()!.n).toBe(0);
    } finally {
      db.close();
    }
    expect(existsSync(join(b.home, ".ssh", "config"))).toBe(false);
  }, 30_000);

  test("`cmd > /dev/null` in a headless run is not refused", async () => {
    const b = box({
      turns: { turns: [{ tool_calls: [{ name: "developer__shell", arguments: { command: "echo quiet > /dev/null && echo done" } }] }, { text: "ran it" }] },
    });
    const r = await spawnAirlock(b, ["run", "go", "--headless", "--output-format", "json", "--data-dir", b.dataDir]).done;
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: "completed", result: "ran it", tool_calls: 1, refused_calls: [], error: null });
  }, 30_000);

  test("a recipe parameter of the wrong type exits 2 naming it; so does a bad declared type; json stdout is only the invalid result", async () => {
    const b = box({});
    const good = b.write("r.yaml", stringify({ instructions: "count to {{ count }}", parameters: { count: { type: "integer" } } }));
    const r1 = await spawnAirlock(b, ["run", "--recipe", good, "--param", "count=ten", "--headless", "--output-format", "json", "--data-dir", b.dataDir]).done;
    expect(r1.code).toBe(2);
    expect(r1.stdout.trimEnd().split("\n")).toHaveLength(1);
    expect(JSON.parse(r1.stdout)).toMatchObject({ status: "invalid", session_id: null, error: { code: "recipe_invalid" } });
    expect(r1.stderr).toContain('parameters.count: expected integer, got "ten"');
    const r2 = await spawnAirlock(b, ["run", "--recipe", good, "--param", "colour=red", "--param", "count=1", "--data-dir", b.dataDir]).done;
    expect(r2.code).toBe(2);
    expect(r2.stderr).toContain('unknown parameter "colour"');
    const r3 = await spawnAirlock(b, ["run", "--recipe", good, "--data-dir", b.dataDir]).done;
    expect(r3.code).toBe(2);
    expect(r3.stderr).toContain('missing required parameter "count"');
    const bad = b.write("bad.yaml", stringify({ instructions: "x {{ count }}", parameters: { count: { type: "numbr" } } }));
    const r4 = await spawnAirlock(b, ["run", "--recipe", bad, "--data-dir", b.dataDir]).done;
    expect(r4.code).toBe(2);
    expect(r4.stdout).toBe("");
    expect(r4.stderr).toContain("parameters.count.type");
  }, 30_000);

  test("stream-json stays valid NDJSON with multi-line tool output and concurrent events", async () => {
    const parallel = Array.from({ length: 6 }, (_, i) => `tools.developer__shell({ command: "printf 'line1\\\\nline2 ${i}\\\\n\\\\n{\\"not\\": \\"json\\"\\\\n'; seq 1 3000" })`);
    const b = box({
      turns: {
        turns: [
          {
            tool_calls: [
              { name: "code_execution__execute", arguments: { code: `const r = await Promise.all([${parallel.join(", ")}]); console.log("a\\nb"); return r.length;` } },
              { name: "developer__shell", arguments: { command: "printf 'x\\ny\\n'; seq 1 20000" } },
              { name: "developer__shell", arguments: { command: "printf '\\r\\n\\t\\u2028end'" } },
            ],
          },
          { text: "multi\nline\nanswer" },
        ],
      },
    });
    const r = await spawnAirlock(b, ["run", "go", "--headless", "--output-format", "stream-json", "--data-dir", b.dataDir]).done;
    expect(r.code).toBe(0);
    const events = parseNdjson(r.stdout);
    const last = events.at(-1);
    expect(last).toMatchObject({ type: "result", status: "completed", result: "multi\nline\nanswer", refused_calls: [] });
    const requests = events.filter((e) => e.type === "tool_request");
    const results = events.filter((e) => e.type === "tool_result");
    expect(requests).toHaveLength(3 + 6);
    expect(new Set(results.map((e) => e.call_id))).toEqual(new Set(requests.map((e) => e.call_id)));
    expect(results.every((e) => e.ok === true)).toBe(true);
    expect(JSON.stringify(results)).toContain("line1\\nline2");
    // the calls really overlapped: some call's request line came while another call was still open
    const open = new Set<string>();
    let maxOpen = 0;
    for (const e of events) {
      if (e.type === "tool_request") open.add(e.call_id);
      if (e.type === "tool_result") open.delete(e.call_id);
      maxOpen = Math.max(maxOpen, open.size);
    }
    expect(maxOpen).toBeGreaterThan(2);
    for (const e of events) expect(typeof e.type).toBe("string");
  }, 60_000);

  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    test(`${signal} cancels the turn: exit 130 and the result object says cancelled`, async () => {
      const b = box({ turns: { turns: [{ tool_calls: [{ name: "developer__shell", arguments: { command: "sleep 60" } }] }, { text: "never" }] } });
      const p = spawnAirlock(b, ["run", "go", "--headless", "--output-format", "stream-json", "--data-dir", b.dataDir]);
      await p.waitForLine((v) => v.type === "tool_request" && v.tool === "developer__shell");
      p.proc.kill(signal);
      const r = await p.done;
      expect(r.code).toBe(130);
      const events = parseNdjson(r.stdout);
      expect(events.at(-1)).toMatchObject({ type: "result", status: "cancelled" });
      expect(r.wallMs).toBeLessThan(30_000);
    }, 40_000);
  }
});
