import { describe, expect, test } from "bun:test";
import { argumentLines } from "./attach-format.ts";
import { callSummary } from "./call-summary.ts";
import { boundedLines, CARD_ARG_CHARS, CARD_ARG_LINES, CARD_WHY_CHARS, cardQuestion, DENY_REASON_MAX, cardText, parseAnswer, type ShownCard } from "./terminal-approver.ts";

function card(over: Partial<ShownCard> = {}): ShownCard {
  return {
    request_id: "act_1",
    home_session_id: "ses_root",
    surfaced_in: "ses_root",
    tool: "developer__shell",
    arguments: { command: "ls" },
    inspector: "mode",
    reason: "smart mode asks before a shell command",
    requires_user_proof: false,
    expires_at: "2026-12-03T17:00:00.000Z",
    user_only: true,
    ...over,
  };
}

const text = (c: ShownCard, label = "", width?: number) => cardText(c, label, argumentLines(c.arguments), callSummary(c.tool, c.arguments), width);

describe("parseAnswer: what a line typed at a card means", () => {
  test("y / yes allow once; a allows for the session only when a rule is offered", () => {
    for (const a of ["y", "Y", "yes", "YES", " y "]) expect(parseAnswer(a, false)).toEqual({ kind: "allow_once" });
    expect(parseAnswer("a", true)).toEqual({ kind: "allow_session" });
    expect(parseAnswer("A", true)).toEqual({ kind: "allow_session" });
    expect(parseAnswer("a", false)).toEqual({ kind: "no_rule" });
  });

  test("an empty line, n and no deny; n REASON denies with the reason for the model", () => {
    for (const a of ["", "  ", "n", "N", "no", "No"]) expect(parseAnswer(a, true)).toEqual({ kind: "deny" });
    expect(parseAnswer("n use ls -la instead", true)).toEqual({ kind: "deny", reason: "use ls -la instead" });
    expect(parseAnswer("no  not on main ", false)).toEqual({ kind: "deny", reason: "not on main" });
  });

  test("v shows the arguments; anything else is unknown, never an allow", () => {
    expect(parseAnswer("v", false)).toEqual({ kind: "view" });
    expect(parseAnswer("view", false)).toEqual({ kind: "view" });
    for (const a of ["yy", "yes please", "ok", "allow", "y y", "nope", "always", "q", "x"]) expect(parseAnswer(a, true)).toEqual({ kind: "unknown" });
  });
});

describe("cardQuestion", () => {
  test("lists the answers; [a]session only with a rule", () => {
    expect(cardQuestion(true)).toBe("  allow? [y]once [a]session [n]o (n REASON tells the model why) [v]iew › ");
    expect(cardQuestion(false)).toBe("  allow? [y]once [n]o (n REASON tells the model why) [v]iew › ");
  });
});

describe("boundedLines", () => {
  test("at most the lines and characters allowed; the rest counted in bytes", () => {
    const lines = Array.from({ length: 100 }, (_, i) => `line ${i}`);
    const { shown, moreBytes } = boundedLines(lines, 20, 10_000);
    expect(shown).toEqual(lines.slice(0, 20));
    expect(moreBytes).toBe(Buffer.byteLength(lines.join("\n")) - Buffer.byteLength(lines.slice(0, 20).join("\n")));
    expect(boundedLines(["a", "b"], 20, 100)).toEqual({ shown: ["a", "b"], moreBytes: 0 });
  });

  test("one long line is cut at the character budget, never inside an escape or a surrogate pair", () => {
    const { shown, moreBytes } = boundedLines(["x".repeat(5000)], 20, 2000);
    expect(shown).toEqual(["x".repeat(2000)]);
    expect(moreBytes).toBe(3000);
    expect(boundedLines(["ab\\u001b"], 20, 5).shown).toEqual(["ab"]);
    expect(boundedLines(["ab😀"], 20, 3).shown).toEqual(["ab"]);
  });
});

describe("parseAnswer: a deny's reason", () => {
  test("a reason over DENY_REASON_MAX characters is not taken (asked again), as over HTTP", () => {
    expect(parseAnswer(`n ${"r".repeat(DENY_REASON_MAX)}`, false)).toEqual({ kind: "deny", reason: "r".repeat(DENY_REASON_MAX) });
    expect(parseAnswer(`n ${"r".repeat(DENY_REASON_MAX + 1)}`, false)).toEqual({ kind: "reason_too_long" });
  });
});

describe("cardText: the card before its question", () => {
  test("a 160 KB write_file shows a bounded part of its arguments, and the tool and path right above the question", () => {
    const content = Array.from({ length: 4000 }, (_, i) => `row ${i} ${"z".repeat(30)}`).join("\n");
    expect(content.length).toBeGreaterThan(150_000);
    const c = card({ tool: "developer__write_file", arguments: { path: "big.txt", content }, inspector: "sensitive_ops", reason: "writes a file" });
    const t = text(c);
    expect(t.length).toBeLessThan(CARD_ARG_CHARS + 1000);
    const argLines = t.split("\n").filter((l) => l.startsWith("    "));
    expect(argLines.length).toBeLessThanOrEqual(CARD_ARG_LINES + 1); // + the "… N more bytes" line
    expect(t).toMatch(/… [\d,]+ more bytes \(v shows them all\)\n/);
    expect(t.startsWith("\nairlock: developer__write_file needs your approval — sensitive_ops: writes a file\n")).toBe(true);
    expect(t.endsWith("\n  developer__write_file big.txt\n  sensitive_ops: writes a file\n")).toBe(true); // what the question is about, right above it
  });

  test("a long reason (an elevation's justification) is cut, so the card still fits in sight of its question", () => {
    const t = text(card({ inspector: "elevation", reason: `asks to run this one call under sandbox "danger-full-access" instead of "read-only": ${"x".repeat(100_000)}` }));
    expect(t.length).toBeLessThan(CARD_WHY_CHARS + 500);
    expect(t).toContain('elevation: asks to run this one call under sandbox "danger-full-access"');
    expect(t).toMatch(/x … [\d,]+ more bytes \(v shows it all\)\n/);
  });

  test("short arguments stay on one line", () => {
    expect(text(card())).toBe('\nairlock: developer__shell needs your approval — mode: smart mode asks before a shell command\n  arguments: {"command":"ls"}\n  developer__shell ls\n  mode: smart mode asks before a shell command\n');
  });

  test("the inspector's label is said once when the reason lists several asks", () => {
    const t = text(card({ inspector: "sensitive_ops", reason: "[sensitive_ops] rm deletes files; [mode] smart mode asks" }));
    expect(t).toContain("needs your approval — sensitive_ops: rm deletes files; [mode] smart mode asks\n");
    expect(t).not.toContain("sensitive_ops: [sensitive_ops]");
  });

  test("a subagent's card names it by its chain label (as the stderr call lines do), also right above the question; the rule a adds is shown", () => {
    const t = text(card({ home_session_id: "ses_sub", suggested_rule: "Bash(ls:*)" }), "[root›subagent#0] ");
    expect(t.startsWith("\nairlock: [root›subagent#0] developer__shell needs your approval")).toBe(true);
    expect(t).not.toContain("from subagent");
    expect(t).toContain("  a: allow for this session adds the rule Bash(ls:*)");
    expect(t.endsWith("\n  [root›subagent#0] developer__shell ls\n  mode: smart mode asks before a shell command\n")).toBe(true);
  });

  test("why it asks is restated right above the question, cut to one terminal line (80 when the width is not known)", () => {
    const reason = `asks to run this one call under sandbox "danger-full-access": ${"because ".repeat(100)}`;
    const c = card({ inspector: "elevation", reason, arguments: { command: `echo ${"y".repeat(2000)}` } });
    for (const [width, max] of [[undefined, 80], [120, 120], [40, 40]] as const) {
      const last = text(c, "", width).split("\n").slice(-3, -1);
      expect(last[0]!.startsWith("  developer__shell echo yyy")).toBe(true);
      expect(last[1]!.startsWith('  elevation: asks to run this one call under sandbox "danger-full-access"'.slice(0, max - 1))).toBe(true);
      expect(last[1]!.endsWith("…")).toBe(true);
      expect(last[1]!.length).toBe(max);
    }
    // a short why is shown whole
    expect(text(card(), "", 200).endsWith("\n  mode: smart mode asks before a shell command\n")).toBe(true);
  });

  test("model-written text cannot drive the terminal", () => {
    const t = text(card({ reason: "x\x1b[8m\nfake", arguments: { command: "echo \u009b2J\u202e", justification: "a".repeat(300) + "\x1b]0;T\x07" } }));
    expect(t).not.toMatch(/[\u001b\u0007\u0080-\u009f\u202e]/);
    expect(t.split("\n").filter((l) => l.startsWith("airlock:"))).toHaveLength(1);
  });
});
