import { describe, expect, test } from "bun:test";
import { callSummary, SUMMARY_MAX } from "./call-summary.ts";
import { safe } from "./output.ts";

describe("callSummary: what a call is about, in one line", () => {
  test("the telling argument of each built-in tool", () => {
    expect(callSummary("developer__shell", { command: "npm test", timeout_s: 30 })).toBe("npm test");
    expect(callSummary("developer__write_file", { path: "src/a.ts", content: "x\ny" })).toBe("src/a.ts");
    expect(callSummary("subagent__spawn", { instructions: "  find the bug  " })).toBe("find the bug");
    expect(callSummary("interpreter__python", { code: "print(1)" })).toBe("print(1)");
    expect(callSummary("code_execution__execute", { code: "return 1" })).toBe("return 1");
  });

  test("only the key the tool runs: another tool's command or path is not what its call is about", () => {
    // an MCP tool runs its own keys (its server may drop unknown ones): all of them, in the model's order
    expect(callSummary("fs__move_file", { path: "notes.txt", source: "/k", destination: "/d" })).toBe('{"path":"notes.txt","source":"/k","destination":"/d"}');
    expect(callSummary("gh__run", { command: "ls", script: "rm -rf ~" })).toBe('{"command":"ls","script":"rm -rf ~"}');
    // a built-in tool's key of another tool is not taken for its own
    expect(callSummary("interpreter__python", { command: "ls", code: "x" })).toBe("x");
    expect(callSummary("developer__shell", { path: "p" })).toBe('{"path":"p"}');
    // a key on the prototype chain is no argument
    expect(callSummary("toString", { a: 1 })).toBe('{"a":1}');
  });

  test("anything else as compact JSON; nothing to say is empty", () => {
    expect(callSummary("developer__shell", { owner: "me", repo: "r" })).toBe('{"owner":"me","repo":"r"}');
    expect(callSummary("developer__shell", { command: "" , n: 1 })).toBe('{"command":"","n":1}');
    expect(callSummary("developer__shell", {})).toBe("");
    expect(callSummary("developer__shell", undefined)).toBe("");
    expect(callSummary("developer__shell", null)).toBe("");
    expect(callSummary("developer__shell", [1, 2])).toBe("[1,2]");
  });

  test("cut to the limit with …, never inside an escape", () => {
    const long = callSummary("developer__shell", { command: "y".repeat(500) });
    expect(long).toHaveLength(SUMMARY_MAX);
    expect(long).toEndWith("…");
    expect(callSummary("developer__shell", { command: "abcdef" }, 4)).toBe("abc…");
    // an escape that would not fit whole is left out whole
    expect(callSummary("developer__shell", { command: "ab\ncd" }, 8)).toBe("ab…");
    expect(callSummary("developer__shell", { command: "ab\ncd" }, 9)).toBe("ab\\u000a…");
    // a character outside the BMP is never split
    expect(callSummary("developer__shell", { command: "😀😀😀" }, 3)).toBe("😀…");
  });

  test("control, line-break and bidi characters are visible escapes: one line that cannot drive the terminal", () => {
    const s = callSummary("developer__shell", { command: "ls\u001b]52;c;eA==\u0007\r\nairlock: ok\u2028\u202e\u0085" });
    expect(s).toBe("ls\\u001b]52;c;eA==\\u0007\\u000d\\u000aairlock: ok\\u2028\\u202e\\u0085");
    expect(s).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/);
    expect(safe("a\u2066b\u200fc")).toBe("a\\u2066b\\u200fc");
  });
});
