/**
 * @module test/security/hook-matchers-never-hang-airlock
 * A hook group's `matcher` is a regular expression that airlock tests, in its own thread, against the tool's
 * names at every call. A trusted workspace's `.claude/settings.json` — which the model writes under
 * `workspace-write` — could give one that backtracks catastrophically: `.*` twenty times took over 30 s for
 * one test against `developer__shell` (a quantified group, 12–17 s), and nothing can interrupt it, so the
 * gate, the API, SSE and every other session of `airlock serve` stood still. Such a matcher is refused like
 * a broken one: its hooks fail (`hook_error`, naming it), never run blind and never skipped. Real runtime,
 * gate and shell; the run is bounded, so a hang fails the test instead of stalling it.
 */
import { afterAll, expect, test } from "bun:test";
import { chownSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { testUsers } from "../as-user.ts";
import { backtrackingRisk } from "../../src/hook/run.ts";
import { ownedDir, probeEnv, removeTempDirs, tempBase } from "./probe.ts";

afterAll(removeTempDirs);

const RUN = join(import.meta.dir, "fixtures", "settings-hook-run.ts");
const RISKY = ".*".repeat(20) + "X";

test("a trusted project's matcher that would backtrack for minutes fails its hooks at once (hook_error naming it)", async () => {
  const user = testUsers().at(-1)!;
  const base = tempBase("airlock-hook-matcher-");
  const home = ownedDir(user, base, "home");
  const data = ownedDir(user, base, "data");
  const ws = ownedDir(user, base, "ws");
  mkdirSync(join(ws, ".claude"));
  chownSync(join(ws, ".claude"), user.uid, user.uid);
  writeFileSync(join(ws, ".claude", "settings.json"), JSON.stringify({ hooks: { PreToolUse: [{ matcher: RISKY, hooks: [{ type: "command", command: "true" }] }] } }));
  chownSync(join(ws, ".claude", "settings.json"), user.uid, user.uid);
  const proc = Bun.spawn([...user.prefix, process.execPath, RUN], { stdin: "pipe", stdout: "pipe", stderr: "pipe", env: probeEnv(home), cwd: "/" });
  proc.stdin.write(JSON.stringify({ dataDir: data, workspace: ws, trust: true, sandbox: "workspace-write" }));
  await proc.stdin.end();
  // generous: the fixed run takes a second or two; the hang it replaces takes minutes per call
  const bound = setTimeout(() => proc.kill("SIGKILL"), 90_000);
  const [code, out] = await Promise.all([proc.exited, new Response(proc.stdout).text()]);
  clearTimeout(bound);
  expect(code).toBe(0);
  const r = JSON.parse(out.trim().split("\n").at(-1)!);
  expect(r.refused_calls).toMatchObject([{ code: "hook_error", inspector: "hook", reason: expect.stringContaining("catastrophic backtracking") }]);
}, 120_000);

test("Claude Code's documented matchers pass; quantified groups and many quantifiers are refused", () => {
  for (const ok of ["Bash", "Edit|Write|MultiEdit", "mcp__memory__.*", "mcp__.*__write.*", "Notebook.*", "^mcp__fs__write_file$", "(Edit|Write)", "(?:Edit|Write)", "[a-z]+_[a-z]*", "a\\(b\\)*"]) {
    expect({ ok, risk: backtrackingRisk(ok) }).toEqual({ ok, risk: null });
  }
  for (const bad of [RISKY, "(.*.*.*.*.*.*.*.*.*.*)*X", "((.+)+)+X", "(a|ab)+X", "(.*){12}X", "(x)?", ".*.*.*.*.*X", "a?a?a?a?a?aaaaa"]) {
    expect({ bad, risk: backtrackingRisk(bad) }).toEqual({ bad, risk: expect.any(String) });
  }
});
