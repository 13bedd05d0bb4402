/**
 * @module test/security/hook-updated-input-refused
 * A PreToolUse hook may answer with `hookSpecificOutput.updatedInput` (Claude Code runs the rewritten
 * input instead of the model's). airlock never rewrites a call's arguments, and it used to drop the
 * field silently: a hook that "sanitised" `rm -rf /` into `echo skipped` and allowed it got the original
 * command run. Such an answer is now `hook_output_invalid` (an ask, never an allow), whatever decision
 * comes with it. Each output comes from a real hook process, judged as root and as `nobody`.
 */
import { describe, expect, test } from "bun:test";
import path from "node:path";
import { testUsers } from "../as-user.ts";

const JUDGE = path.join(import.meta.dir, "..", "fixtures", "hook-judge.ts");

function judge(prefix: string[], outputs: string[]): { kind: string; code?: string }[] {
  const r = Bun.spawnSync([...prefix, process.execPath, JUDGE, JSON.stringify(outputs)], { cwd: "/", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`hook-judge failed: ${r.stderr.toString()}`);
  return JSON.parse(r.stdout.toString()) as { kind: string; code?: string }[];
}

const REWRITES = [
  '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"command":"echo skipped"}}}',
  '{"hookSpecificOutput":{"permissionDecision":"ask","updatedInput":{"command":"echo skipped"}}}',
  '{"hookSpecificOutput":{"updatedInput":{"path":"safe.txt"}}}',
  '{"decision":"approve","hookSpecificOutput":{"permissionDecision":"allow","updatedInput":{}}}',
];

for (const user of testUsers()) {
  describe(`as ${user.name}`, () => {
    test("a hook answer carrying updatedInput is hook_output_invalid, never an allow of the original input", () => {
      expect(judge(user.prefix, REWRITES)).toEqual(REWRITES.map(() => ({ kind: "ask", code: "hook_output_invalid" })));
    });
  });
}
