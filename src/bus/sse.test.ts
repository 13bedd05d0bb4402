import { describe, expect, test } from "bun:test";
import type { SSEStreamingApi } from "hono/streaming";
import { Bus } from "./bus.ts";
import { SseStreams, SseWriter } from "./sse.ts";

/** A stream that records what is written: SSE frames as `{event, id, data}`, comments as text. */
function fakeStream() {
  const frames: { event?: string; id?: string; data: string }[] = [];
  const comments: string[] = [];
  let onComment: (() => void) | undefined;
  const stream = {
    closed: false,
    aborted: false,
    write: async (text: string) => {
      const m = /^event: (.*)\ndata: (.*)\nid: (.*)\n\n$/.exec(text);
      if (m) return void frames.push({ event: m[1]!, id: m[3]!, data: m[2]! });
      comments.push(text);
      onComment?.();
    },
  };
  const comment = () => new Promise<void>((r) => (onComment = r));
  return { stream: stream as unknown as SSEStreamingApi, frames, comments, comment };
}

describe("sse.SseWriter", () => {
  test("next() numbers frames per stream (1, 2, …) through the wire id renderer, after any id already written", async () => {
    const f = fakeStream();
    const out = new SseWriter(f.stream, String, 60_000);
    out.next("snapshot", { a: 1 });
    out.next("turn_started", { session_id: "s", turn_id: "t" });
    out.raw("delta", 7, null);
    out.next("turn_finished", { status: "completed" });
    await out.close();
    expect(f.frames).toEqual([
      { event: "snapshot", id: "1", data: '{"a":1}' },
      { event: "turn_started", id: "2", data: '{"session_id":"s","turn_id":"t"}' },
      { event: "delta", id: "7", data: "null" },
      { event: "turn_finished", id: "8", data: '{"status":"completed"}' },
    ]);
  });

  test("bus events go out once each, in order, as <epoch>-<n>; older ids are dropped", async () => {
    const f = fakeStream();
    const bus = new Bus(8, false);
    const out = new SseWriter(f.stream, (n) => bus.wireId(n), 60_000);
    const a = bus.publish("s", "turn_started", { session_id: "s", turn_id: "t" });
    const b = bus.publish("s", "delta", { session_id: "s", turn_id: "t", text: "hi" });
    out.event(a);
    out.event(b);
    out.event(a);
    await out.close();
    expect(f.frames).toEqual([
      { event: "turn_started", id: `${bus.epoch}-1`, data: '{"session_id":"s","turn_id":"t"}' },
      { event: "delta", id: `${bus.epoch}-2`, data: '{"session_id":"s","turn_id":"t","text":"hi"}' },
    ]);
  });

  test("an idle stream gets a heartbeat comment every period; close() stops it", async () => {
    const f = fakeStream();
    const out = new SseWriter(f.stream, String, 5);
    await f.comment();
    await out.close();
    const n = f.comments.length;
    expect(f.comments.every((c) => c === ": heartbeat\n\n")).toBe(true);
    expect(n).toBeGreaterThanOrEqual(1);
  });
});

describe("sse.SseStreams", () => {
  test("endAll() ends every open stream once; one that ended itself is not ended again; one opened later ends at once", () => {
    const streams = new SseStreams();
    const ended: string[] = [];
    streams.add(() => ended.push("a"));
    const offB = streams.add(() => ended.push("b"));
    offB(); // b ended on its own (its turn finished, its client left)
    expect(streams.size).toBe(1);
    streams.endAll();
    streams.endAll();
    expect(ended).toEqual(["a"]);
    expect(streams.size).toBe(0);
    streams.add(() => ended.push("late"));
    expect(ended).toEqual(["a", "late"]);
    expect(streams.size).toBe(0);
  });
});
