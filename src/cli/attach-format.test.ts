import { describe, expect, test } from "bun:test";
import type { ConsoleCard } from "../console/routes.ts";
import { splitKeys } from "./attach.ts";
import { cardBlock, chainLabel, chainOf, colorsFor, oneLine, sessionColor, timeLeft } from "./attach-format.ts";

const on = colorsFor({ tty: true, plain: false, env: {} });

describe("attach lines", () => {
  test("colours only on a TTY, never with NO_COLOR or --plain", () => {
    expect(colorsFor({ tty: true, plain: false, env: {} }).red("x")).not.toBe("x");
    expect(colorsFor({ tty: false, plain: false, env: {} }).red("x")).toBe("x");
    expect(colorsFor({ tty: true, plain: false, env: { NO_COLOR: "1" } }).red("x")).toBe("x");
    expect(colorsFor({ tty: true, plain: true, env: {} }).red("x")).toBe("x");
  });

  test("a session keeps one colour, and the label always prints every name of the chain", () => {
    expect(sessionColor(on, "ses_a", false)("x")).toBe(sessionColor(on, "ses_a", false)("x"));
    const label = chainLabel(on, [
      { id: "r", name: "root" },
      { id: "p", name: "planner" },
      { id: "s", name: "researcher#2" },
    ]);
    expect(label.replace(/\x1b\[[0-9;]*m/g, "")).toBe("[root›planner›researcher#2]");
    expect(label).toBe(sessionColor(on, "s", false)("[root›planner›researcher#2]"));
  });

  test("chainOf walks the known parents up to the root", () => {
    const known = new Map([
      ["r", { parent: null, name: "root" }],
      ["c", { parent: "r", name: "subagent#0" }],
      ["g", { parent: "c", name: "subagent#1" }],
    ]);
    expect(chainOf("g", known).map((l) => l.name)).toEqual(["root", "subagent#0", "subagent#1"]);
  });

  test("one line per event: breaks and control characters go, long text is cut", () => {
    expect(oneLine("a\nb\x1b[31m", 100)).toBe("a b[31m");
    expect(oneLine("x".repeat(10), 5)).toBe("xxxx…");
  });

  test("a card's block cuts long arguments with how many lines are left, and counts the cards behind it", () => {
    const card: ConsoleCard = {
      request_id: "act_1",
      home_session_id: "c",
      surfaced_in: "r",
      tool: "developer__shell",
      arguments: { command: Array.from({ length: 30 }, (_, i) => `l${i}`) },
      inspector: "mode",
      reason: "asks",
      requires_user_proof: false,
      expires_at: new Date(Date.now() + 65_000).toISOString(),
      user_only: true,
      chain: [
        { id: "r", name: "root" },
        { id: "c", name: "subagent#0" },
      ],
      answer_in: "r",
    };
    const off = colorsFor({ tty: false, plain: true, env: {} });
    const text = cardBlock(off, card, { maxArgLines: 10, now: Date.now(), morePending: 2 }).join("\n");
    expect(text).toContain("[root›subagent#0] developer__shell (asked in subagent#0, c)");
    expect(text).toContain("… 24 more lines (v shows them all)");
    expect(text).toContain("2 more pending");
    expect(text).toMatch(/request act_1 · expires .* \(in 1m 0[45]s\)/);
  });

  test("time left and raw keys", () => {
    expect(timeLeft(new Date(0).toISOString(), 0)).toBe("now");
    expect(timeLeft(new Date(3_725_000).toISOString(), 0)).toBe("in 1h 02m");
    expect(splitKeys("y\x1b[Aq\x03")).toEqual(["y", "\x1b[A", "q", "\x03"]);
  });
});

describe("a card's arguments", () => {
  test("a string with line breaks is shown as its lines; escapes stay visible; the rest is pretty JSON", async () => {
    const { argumentLines } = await import("./attach-format.ts");
    expect(argumentLines({ path: "a.sh", content: "echo 1\nrm -rf x\x1b[2K", mode: { x: 1 } })).toEqual([
      "{",
      '  "path": "a.sh",',
      '  "content": (2 lines)',
      "    echo 1",
      "    rm -rf x\\u001b[2K",
      '  "mode": {',
      '    "x": 1',
      "  }",
      "}",
    ]);
    expect(argumentLines({ command: "ls" })).toEqual(["{", '  "command": "ls"', "}"]);
  });
});
