/** The `call_judged` row built from what the gate recorded of a call (pure: no store, no clock but the given one). */
import { describe, expect, test } from "bun:test";
import { callJudgedRow, decidingVerdict, newCallLog } from "./decision-log.ts";
import { combine, type Verdict } from "./verdict.ts";

const call = { name: "developer__shell", callId: "call_1", fromScript: false };

describe("the deciding verdict", () => {
  test("an allow is decided by a verdict carrying a rule, read generically, before the mode's allow", () => {
    // a permission rule's allow (another inspector adds `rule`): logged with its text
    const ruled = { kind: "allow", inspector: "tool_config", rule: "Bash(npm test)" } as unknown as Verdict;
    const verdicts: Verdict[] = [{ kind: "allow", inspector: "sensitive_ops" }, { kind: "allow", inspector: "mode" }, ruled, { kind: "allow", inspector: "elevation" }];
    expect(decidingVerdict(combine(verdicts), verdicts)).toBe(ruled);
    const log = { ...newCallLog(), sessionId: "ses_1", judgement: combine(verdicts), verdicts, judgedAt: 0, ran: true };
    const row = callJudgedRow(log, call, { ok: true });
    expect(row).toMatchObject({ kind: "call_judged", decision: "allow", code: null, session_id: "ses_1" });
    expect(row.detail).toMatchObject({ inspector: "tool_config", rule: "Bash(npm test)", ran: true });
    expect((row.detail as { verdicts: unknown[] }).verdicts).toContainEqual({ inspector: "tool_config", kind: "allow", rule: "Bash(npm test)" });
  });

  test("without a rule, the mode's allow decides, not the floor's or elevation's", () => {
    const verdicts: Verdict[] = [{ kind: "allow", inspector: "sensitive_ops" }, { kind: "allow", inspector: "mode" }, { kind: "allow", inspector: "elevation" }];
    expect(decidingVerdict(combine(verdicts), verdicts)?.inspector).toBe("mode");
  });

  test("a deny's rule is logged with its reason; a call refused before judging is `refused` with its code", () => {
    const deny = { kind: "deny", inspector: "tool_config", code: "denied", reason: "matches deny rule Read(./.env)", rule: "Read(./.env)" } as unknown as Verdict;
    const log = { ...newCallLog(), sessionId: "ses_1", judgement: combine([deny]), verdicts: [deny], judgedAt: 0 };
    const row = callJudgedRow(log, call, { ok: false, error: { code: "denied", message: "x" } });
    expect(row).toMatchObject({ decision: "deny", code: "denied" });
    expect(row.detail).toMatchObject({ inspector: "tool_config", rule: "Read(./.env)", reason: "matches deny rule Read(./.env)", ran: false });
    const refused = callJudgedRow(newCallLog(), call, { ok: false, error: { code: "unknown_tool", message: "no tool" } });
    expect(refused).toMatchObject({ decision: "refused", code: "unknown_tool", session_id: null });
    expect((refused.detail as { ms: Record<string, number> }).ms.judge).toBeUndefined();
  });

  test("a call that ran and failed keeps no refusal code (its error is in the detail)", () => {
    const log = { ...newCallLog(), judgement: combine([]), verdicts: [], judgedAt: 0, ran: true };
    const row = callJudgedRow(log, call, { ok: false, error: { code: "tool_failed", message: "exit 1" } });
    expect(row).toMatchObject({ decision: "allow", code: null });
    expect(row.detail).toMatchObject({ ran: true, error: { code: "tool_failed" } });
  });
});
