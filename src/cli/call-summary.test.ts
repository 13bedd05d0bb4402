import { describe, expect, test } from "bun:test";
import { callSummary, SUMMARY_MAX } from "./call-summary.ts";
import { safe } from "./output.ts";

describe("callSummary: what a call is about, in one line", () => {
  test("the telling argument of each built-in tool", () => {
    expect(callSummary({ command: "npm test", timeout_s: 30 })).toBe("npm test");
    expect(callSummary({ path: "src/a.ts", content: "x\ny" })).toBe("src/a.ts");
    expect(callSummary({ instructions: "  find the bug  " })).toBe("find the bug");
    expect(callSummary({ code: "print(1)" })).toBe("print(1)");
    // command first, then path: a call with both is about its command
    expect(callSummary({ path: "p", command: "c" })).toBe("c");
  });

  test("anything else as compact JSON; nothing to say is empty", () => {
    expect(callSummary({ owner: "me", repo: "r" })).toBe('{"owner":"me","repo":"r"}');
    expect(callSummary({ command: "" , n: 1 })).toBe('{"command":"","n":1}');
    expect(callSummary({})).toBe("");
    expect(callSummary(undefined)).toBe("");
    expect(callSummary(null)).toBe("");
    expect(callSummary([1, 2])).toBe("[1,2]");
  });

  test("cut to the limit with …, never inside an escape", () => {
    const long = callSummary({ command: "y".repeat(500) });
    expect(long).toHaveLength(SUMMARY_MAX);
    expect(long).toEndWith("…");
    expect(callSummary({ command: "abcdef" }, 4)).toBe("abc…");
    // an escape that would not fit whole is left out whole
    expect(callSummary({ command: "ab\ncd" }, 8)).toBe("ab…");
    expect(callSummary({ command: "ab\ncd" }, 9)).toBe("ab\\u000a…");
    // a character outside the BMP is never split
    expect(callSummary({ command: "😀😀😀" }, 3)).toBe("😀…");
  });

  test("control, line-break and bidi characters are visible escapes: one line that cannot drive the terminal", () => {
    const s = callSummary({ command: "ls\u001b]52;c;eA==\u0007\r\nairlock: ok\u2028\u202e\u0085" });
    expect(s).toBe("ls\\u001b]52;c;eA==\\u0007\\u000d\\u000aairlock: ok\\u2028\\u202e\\u0085");
    expect(s).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/);
    expect(safe("a\u2066b\u200fc")).toBe("a\\u2066b\\u200fc");
  });
});
