/**
 * @module test/security/headless-ask-outranks-hook-failure
 * Status precedence in a headless run, through the real CLI (`airlock run --headless` with the scripted
 * provider): a call that needed a person ends the run `blocked` (exit 3) whatever else failed with it —
 * a PreToolUse hook that fails on the same call must not turn the refusal into `hook_error` and the run
 * into `completed` — and the refusal names every inspector that asked or failed.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";

const MAIN = join(import.meta.dir, "../../src/main.ts");
const HOOKS = join(import.meta.dir, "..", "fixtures", "hooks");
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A data dir whose model writes ~/.ssh/config directly (the security floor asks), then answers "". */
function box(hooks: string[]): { dir: string; ws: string; home: string } {
  const top = mkdtempSync(join(tmpdir(), "airlock-precedence-"));
  dirs.push(top);
  // The data dir sits beside HOME, not above it: a file-tool path inside the data dir is refused outright.
  const dir = join(top, "data");
  const ws = join(top, "ws");
  const home = join(top, "home");
  mkdirSync(dir);
  mkdirSync(ws);
  mkdirSync(join(home, ".ssh"), { recursive: true });
  const PreToolUse = hooks.length ? [{ matcher: "*", hooks: hooks.map((command) => ({ type: "command", command, timeout: 10 })) }] : [];
  writeFileSync(
    join(dir, "airlock.yaml"),
    stringify({ provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous", sandbox: "workspace-write", hooks: { PreToolUse } }),
  );
  writeFileSync(
    join(dir, "turns.yaml"),
    stringify({ turns: [{ tool_calls: [{ name: "developer__write_file", arguments: { path: join(home, ".ssh", "config"), content: "Host *\n" } }] }, { text: "" }] }),
  );
  return { dir, ws, home };
}

async function runHeadless(b: { dir: string; ws: string; home: string }) {
  const p = Bun.spawn([process.execPath, MAIN, "run", "go", "--headless", "--output-format", "json", "--data-dir", b.dir], {
    cwd: b.ws,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: b.home, LANG: "C.UTF-8" },
  });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  let result: any = null;
  try {
    result = JSON.parse(stdout);
  } catch {
    throw new Error(`stdout is not one JSON value (exit ${code}): ${stdout}\nstderr: ${stderr}`);
  }
  return { code, result, stderr };
}

describe("airlock run --headless: a call that needed a person", () => {
  test("the floor asks alone: refused no_human_surface, run blocked, exit 3", async () => {
    const b = box([]);
    const r = await runHeadless(b);
    expect(r.code).toBe(3);
    expect(r.result.status).toBe("blocked");
    expect(r.result.refused_calls.map((c: any) => [c.tool, c.code, c.inspector])).toEqual([["developer__write_file", "no_human_surface", "sensitive_ops"]]);
    expect(existsSync(join(b.home, ".ssh", "config"))).toBe(false);
  }, 60_000);

  test("the floor asks and a hook fails on the same call: still no_human_surface, blocked, exit 3, and both reasons listed", async () => {
    const b = box([join(HOOKS, "crash.sh")]);
    const r = await runHeadless(b);
    expect(r.code).toBe(3);
    expect(r.result).toMatchObject({ status: "blocked", error: { code: "no_human_surface" } });
    expect(r.result.refused_calls).toHaveLength(1);
    const refusal = r.result.refused_calls[0];
    expect(refusal).toMatchObject({ tool: "developer__write_file", code: "no_human_surface", inspector: "sensitive_ops" });
    expect(refusal.reason).toContain("[sensitive_ops]");
    expect(refusal.reason).toContain("[hook]");
    expect(refusal.reason).toContain("hook_error");
    expect(refusal.reason).toContain("boom");
    expect(existsSync(join(b.home, ".ssh", "config"))).toBe(false);
  }, 60_000);

  test("the floor asks and a hook prints invalid output: blocked, exit 3, the hook's failure listed too", async () => {
    const b = box([join(HOOKS, "not-json.sh")]);
    const r = await runHeadless(b);
    expect(r.code).toBe(3);
    expect(r.result.status).toBe("blocked");
    const refusal = r.result.refused_calls[0];
    expect(refusal.code).toBe("no_human_surface");
    expect(refusal.reason).toContain("hook_output_invalid");
  }, 60_000);

  test("a hook failure alone (no inspector needed a person) keeps its own code and does not block the run", async () => {
    const b = box([join(HOOKS, "crash.sh")]);
    // a call the floor does not ask about: only the hook fails
    writeFileSync(join(b.dir, "turns.yaml"), stringify({ turns: [{ tool_calls: [{ name: "developer__shell", arguments: { command: "echo hi" } }] }, { text: "" }] }));
    const r = await runHeadless(b);
    expect(r.result.refused_calls.map((c: any) => c.code)).toEqual(["hook_error"]);
    expect(r.result.status).not.toBe("blocked");
    expect(r.code).not.toBe(3);
  }, 60_000);
});
