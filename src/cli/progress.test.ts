import { describe, expect, test } from "bun:test";
import type { AnyEvent, BusEvent } from "../bus/bus.ts";
import { createProgress } from "./progress.ts";

/** A hand-made event (partial payloads: the progress line reads only a few fields). */
const ev = (type: BusEvent["type"], data: Record<string, unknown>): AnyEvent => ({ id: 1, session_id: "ses_1", type, data, persisted: false }) as unknown as AnyEvent;

describe("progress.createProgress", () => {
  test("without a TTY nothing but log lines is written", () => {
    const out: string[] = [];
    const p = createProgress({ tty: false, write: (s) => out.push(s) });
    p.onEvent(ev("tool_request", { tool: "developer__shell" }));
    p.log("airlock: → developer__shell");
    p.stop();
    expect(out).toEqual(["airlock: → developer__shell\n"]);
  });

  test("on a TTY the line shows elapsed time, calls, refusals and the last tool; log and stop clear it", async () => {
    const out: string[] = [];
    let t = 0;
    let drawn!: () => void;
    const firstDraw = new Promise<void>((r) => (drawn = r));
    const p = createProgress({
      tty: true,
      now: () => t,
      write: (s) => {
        out.push(s);
        if (s.includes("tool call")) drawn();
      },
    });
    p.onEvent(ev("tool_request", { tool: "developer__shell" }));
    p.onEvent(ev("tool_result", { tool: "developer__shell", ok: false, error: { code: "no_human_surface" } }));
    p.onEvent(ev("tool_request", { tool: "developer__read_file\x1b[2K\nx" })); // a model-made name cannot drive the terminal
    t = 2_500;
    await firstDraw;
    const line = out.find((s) => s.includes("tool call"))!;
    expect(line).toStartWith("\r\x1b[2K");
    expect(line).toContain("2.5s · 2 tool calls · 1 refused · developer__read_file\\u001b[2K\\u000ax");
    expect(line.slice("\r\x1b[2K".length)).not.toMatch(/[\u0000-\u001f]/);
    p.log("a log line");
    expect(out.slice(-2)).toEqual(["\r\x1b[2K", "a log line\n"]);
    p.stop();
    p.stop();
    expect(out.filter((s) => s === "\r\x1b[2K").length).toBeGreaterThanOrEqual(1);
  });
});
