/**
 * `combine`: the strictest verdict wins, except that the mode's ask is answerable — a permission
 * rule's allow or a hook's explicit allow removes it (as in Claude Code) — while every other ask and
 * every deny stands.
 */
import { describe, expect, test } from "bun:test";
import { combine, type Verdict } from "./verdict.ts";

const modeAsk: Verdict = { kind: "ask", inspector: "mode", userProof: false, reason: "smart mode asks" };
const floorAsk: Verdict = { kind: "ask", inspector: "sensitive_ops", userProof: true, reason: "credential read" };
const ruleAsk: Verdict = { kind: "ask", inspector: "rule", userProof: false, reason: "rule asks", rule: "Bash(git push:*)" };
const hookAsk: Verdict = { kind: "ask", inspector: "hook", userProof: false, reason: "hook asks" };
const toolAsk: Verdict = { kind: "ask", inspector: "tool_config", userProof: false, reason: "tools.x is ask" };
const elevationAsk: Verdict = { kind: "ask", inspector: "elevation", userProof: true, reason: "elevate", elevate: "danger-full-access" };
const ruleAllow: Verdict = { kind: "allow", inspector: "rule", rule: "Bash(npm test)", answersMode: true };
const hookAllow: Verdict = { kind: "allow", inspector: "hook", answersMode: true };
const hookSilent: Verdict = { kind: "allow", inspector: "hook" };
const modeAllow: Verdict = { kind: "allow", inspector: "mode" };
const hookDeny: Verdict = { kind: "deny", inspector: "hook", code: "denied", reason: "hook says no" };
const ruleDeny: Verdict = { kind: "deny", inspector: "rule", code: "denied", reason: "rule says no", rule: "Bash(rm:*)" };
const chat: Verdict = { kind: "deny", inspector: "mode", code: "mode_chat", reason: "chat" };

describe("an answering allow removes the mode's ask", () => {
  test("a rule's allow answers the mode's ask", () => expect(combine([ruleAllow, modeAsk]).kind).toBe("allow"));
  test("a hook's explicit allow answers the mode's ask", () => expect(combine([hookAllow, modeAsk]).kind).toBe("allow"));
  test("a hook with no decision answers nothing", () => expect(combine([hookSilent, modeAsk]).kind).toBe("ask"));
  test("the mode's own allow answers nothing (no ask to answer)", () => expect(combine([modeAllow]).kind).toBe("allow"));
});

describe("an allow never answers anything else", () => {
  const others: [string, Verdict][] = [
    ["the floor's ask", floorAsk],
    ["a rule's ask", ruleAsk],
    ["a hook's ask", hookAsk],
    ["per-tool config's ask", toolAsk],
    ["elevation's ask", elevationAsk],
  ];
  for (const [what, ask] of others) {
    test(`${what} stands against a rule's allow and a hook's allow`, () => {
      const j = combine([ruleAllow, hookAllow, ask, modeAsk]);
      expect(j.kind).toBe("ask");
      if (j.kind !== "ask") return;
      expect(j.asks).toEqual([ask] as never);
      expect(j.primary).toEqual(ask as never);
    });
  }
  test("a hook's deny stands against a rule's allow", () => expect(combine([ruleAllow, hookDeny, modeAsk])).toEqual({ kind: "deny", verdict: hookDeny as never }));
  test("a rule's deny stands against a hook's allow", () => expect(combine([ruleDeny, hookAllow])).toEqual({ kind: "deny", verdict: ruleDeny as never }));
  test("chat mode's deny stands against a rule's allow", () => expect(combine([ruleAllow, chat]).kind).toBe("deny"));
  test("floor's ask keeps needing user proof", () => {
    const j = combine([floorAsk, ruleAllow, modeAsk]);
    expect(j).toMatchObject({ kind: "ask", userProof: true, reason: "credential read" });
  });
});
