import { describe, expect, test } from "bun:test";
import type { ConsoleCard } from "../console/routes.ts";
import { splitKeys } from "./attach.ts";
import type { AnyEvent } from "../bus/bus.ts";
import { cardBlock, chainLabel, chainOf, colorsFor, eventText, oneLine, sessionColor, timeLeft } from "./attach-format.ts";

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

describe("attach lines at a turn's end", () => {
  const off = colorsFor({ tty: false, plain: true, env: {} });
  const ev = (type: string, data: Record<string, unknown>) => ({ id: 1, session_id: "s", type, data, persisted: false, ts: "" }) as unknown as AnyEvent;

  test("a cancelled turn says cancelled once: no ✖ line, and the turn's line does not repeat the code", () => {
    const error = { code: "cancelled", message: "the server is stopping" };
    expect(eventText(off, ev("error", { session_id: "s", turn_id: "t", ...error }), 200)).toBeNull();
    expect(eventText(off, ev("turn_finished", { session_id: "s", turn_id: "t", status: "cancelled", error }), 200)).toBe("■ turn cancelled: the server is stopping");
    // a failure's code says more than its status: kept
    const failed = { code: "provider_error", message: "502" };
    expect(eventText(off, ev("error", { session_id: "s", turn_id: "t", ...failed }), 200)).toBe("✖ provider_error: 502");
    expect(eventText(off, ev("turn_finished", { session_id: "s", turn_id: "t", status: "failed", error: failed }), 200)).toBe("■ turn failed: provider_error: 502");
  });

  test("a subagent that did not complete is not called ok", () => {
    const result = (status: string) => ev("tool_result", { session_id: "s", call_id: "c", tool: "subagent__spawn", ok: true, result: { session_id: "ses_x", status, answer: null } });
    expect(eventText(off, result("cancelled"), 200)).toBe('← subagent__spawn cancelled {"session_id":"ses_x","status":"cancelled","answer":null}');
    expect(eventText(off, result("failed"), 200)!.startsWith("← subagent__spawn failed {")).toBe(true);
    expect(eventText(off, result("running"), 200)!.startsWith("← subagent__spawn running {")).toBe(true);
    expect(eventText(off, result("completed"), 200)!.startsWith("← subagent__spawn ok {")).toBe(true);
    const shell = ev("tool_result", { session_id: "s", call_id: "c", tool: "developer__shell", ok: true, result: { status: "cancelled" } });
    expect(eventText(off, shell, 200)!.startsWith("← developer__shell ok {")).toBe(true);
  });
});
