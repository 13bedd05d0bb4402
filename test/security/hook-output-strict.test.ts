/**
 * @module test/security/hook-output-strict
 * A PreToolUse hook's answer is read strictly (docs/spec.md §5): output whose meaning is ambiguous —
 * a key given twice, a legacy `decision` that disagrees with `permissionDecision`, a key or type the
 * protocol does not name, JSON with more text around it, an unknown decision — is
 * `hook_output_invalid` (an ask), never read as the allow a lenient parser would pick. Each output
 * comes from a real hook process, judged as root and as `nobody`.
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

const AMBIGUOUS = [
  // a key given twice: JSON.parse would keep the last one silently
  '{"decision":"block","decision":"approve"}',
  '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecision":"allow"}}',
  '{"hookSpecificOutput":{"permissionDecision":"deny","permission\\u0044ecision":"allow"}}',
  // a legacy decision and a permissionDecision that disagree
  '{"decision":"block","hookSpecificOutput":{"permissionDecision":"allow"}}',
  '{"decision":"approve","hookSpecificOutput":{"permissionDecision":"deny"}}',
  '{"decision":"approve","hookSpecificOutput":{"permissionDecision":"ask"}}',
  // a decision under a key the protocol does not name, or at the wrong level
  '{"permissionDecision":"deny"}',
  '{"hookSpecificOutput":{"decision":"block"}}',
  '{"hookSpecificOutput":{"permisionDecision":"deny"}}',
  // wrong types
  '{"suppressOutput":"yes"}',
  '{"systemMessage":5}',
  '{"continue":"false"}',
  '{"hookSpecificOutput":{"permissionDecision":"allow","updatedInput":"rm -rf /"}}',
  '{"hookSpecificOutput":null}',
  // unknown decision values
  '{"decision":"allow"}',
  '{"hookSpecificOutput":{"permissionDecision":"Allow"}}',
  // JSON with more text, or an attempt at JSON that is not JSON
  '{"hookSpecificOutput":{"permissionDecision":"allow"}} and also deny',
  '{"decision":"approve"}\n{"decision":"block"}',
  'checking…\n{"hookSpecificOutput":{"permissionDecision":"allow"}}',
  "{decision: 'block'}",
  '"allow"',
];

for (const user of testUsers()) {
  describe(`as ${user.name}: hook output is parsed strictly`, () => {
    test("every ambiguous answer is hook_output_invalid, an ask", () => {
      const got = judge(user.prefix, AMBIGUOUS);
      const wrong = AMBIGUOUS.map((o, i) => ({ output: o, verdict: got[i] })).filter((x) => x.verdict?.kind !== "ask" || x.verdict.code !== "hook_output_invalid");
      expect(wrong).toEqual([]);
    });

    test("clear answers keep their authors' decisions, including a legacy decision that agrees", () => {
      const clear = [
        '{"decision":"block","hookSpecificOutput":{"permissionDecision":"deny"}}',
        '{"decision":"approve","hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}',
        '{"suppressOutput":true,"systemMessage":"ok","hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"look"}}',
        '{"decision":"block","reason":"no"}',
        "",
        "{}",
        '{"decision":"block","decision":"block"}',
      ];
      expect(judge(user.prefix, clear)).toEqual([
        { kind: "deny", code: "denied" },
        { kind: "allow" },
        { kind: "ask" },
        { kind: "deny", code: "denied" },
        { kind: "allow" },
        { kind: "allow" },
        { kind: "ask", code: "hook_output_invalid" },
      ]);
    });
  });
}
