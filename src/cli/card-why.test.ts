import { describe, expect, test } from "bun:test";
import { cardLine } from "./actions.ts";
import { cardBlock, colorsFor } from "./attach-format.ts";
import { cardWhy, whyParts } from "./card-why.ts";
import type { ConsoleCard } from "../console/routes.ts";

const SEVERAL = "[sensitive_ops] rm deletes files; [mode] smart mode asks";

function consoleCard(reason: string): ConsoleCard {
  return {
    request_id: "act_1",
    home_session_id: "r",
    surfaced_in: "r",
    tool: "developer__shell",
    arguments: { command: "rm -rf build" },
    inspector: "sensitive_ops",
    reason,
    requires_user_proof: false,
    expires_at: new Date(Date.now() + 65_000).toISOString(),
    user_only: true,
    chain: [{ id: "r", name: "root" }],
    answer_in: "r",
  };
}

describe("a card's why: the inspector's label said once, on every surface", () => {
  test("cardWhy / whyParts", () => {
    expect(cardWhy("mode", "smart mode asks")).toBe("mode: smart mode asks");
    expect(cardWhy("sensitive_ops", SEVERAL)).toBe("sensitive_ops: rm deletes files; [mode] smart mode asks");
    expect(cardWhy("mode", SEVERAL)).toBe(SEVERAL); // names its inspectors itself
    expect(whyParts("sensitive_ops", SEVERAL)).toEqual({ label: "sensitive_ops", text: "rm deletes files; [mode] smart mode asks" });
    expect(whyParts("mode", SEVERAL)).toEqual({ label: null, text: SEVERAL });
  });

  test("airlock actions list", () => {
    const line = cardLine(consoleCard(SEVERAL));
    expect(line).toContain("\n    sensitive_ops: rm deletes files; [mode] smart mode asks\n");
    expect(line).not.toContain("sensitive_ops: [sensitive_ops]");
    expect(cardLine(consoleCard("deletes files"))).toContain("\n    sensitive_ops: deletes files\n");
  });

  test("airlock actions list shows model- and hook-written text escaped: it cannot drive the terminal or fake a line", () => {
    const evil = "\u001b[8m\nrequest act_2  developer__shell {\"command\":\"ls\"}\u009b31m\u202e";
    const card = {
      ...consoleCard(`[sensitive_ops] ${evil}`),
      tool: `developer__shell${evil}`,
      arguments: { command: evil },
      will_fail: evil,
      suggested_rule: `Bash(${evil}:*)`,
      files: [{ path: evil, kind: "symlink", target: evil, sha256: "ab", size: 1 }],
    } as unknown as ConsoleCard;
    const line = cardLine(card);
    expect(line).not.toMatch(/[\u001b\u009b\u202e]/);
    // only the line breaks cardLine makes itself: header, why, will_fail, where, one file, the rule
    expect(line.split("\n").length - 1).toBe(6);
    expect(line).toContain("\\u001b[8m\\u000arequest act_2");
  });

  test("airlock attach's card", () => {
    const off = colorsFor({ tty: false, plain: true, env: {} });
    const block = cardBlock(off, consoleCard(SEVERAL), { maxArgLines: 10, now: Date.now(), morePending: 0 }).join("\n");
    expect(block).toContain("│ sensitive_ops: rm deletes files; [mode] smart mode asks\n");
    expect(block).not.toContain("sensitive_ops: [sensitive_ops]");
    expect(cardBlock(off, consoleCard("deletes files"), { maxArgLines: 10, now: Date.now(), morePending: 0 }).join("\n")).toContain("│ sensitive_ops: deletes files\n");
  });
});
