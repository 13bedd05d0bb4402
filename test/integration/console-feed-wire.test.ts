/**
 * The console feed on the wire (`GET /console/events`), byte for byte: frames numbered per stream
 * (`id: 1`, `2`, …, not the bus's `<epoch>-<n>`), heartbeat comments, only turn and card events,
 * each turn event carrying its `session_id`.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { startHarness, type Harness } from "../harness.ts";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** Reads a response body as text, chunk by chunk, until `done(text)` holds; returns the text read. */
async function readUntil(reader: ReadableStreamDefaultReader<string>, text: string, done: (t: string) => boolean): Promise<string> {
  while (!done(text)) {
    const { value, done: end } = await reader.read();
    if (end) throw new Error(`the stream ended; got:\n${text}`);
    text += value;
  }
  return text;
}

describe("console feed", () => {
  test("frames are numbered per stream from 1, idle streams get heartbeats, and a turn sends turn_started and turn_finished only", async () => {
    h = await startHarness({
      heartbeatMs: 20,
      config: { provider: { name: "scripted", script: "turns.yaml" } },
      files: { "turns.yaml": "turns:\n  - text: done\n" },
    });
    const ac = new AbortController();
    const res = await h.api("/console/events", { signal: ac.signal });
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    try {
      let text = await readUntil(reader, "", (t) => t.includes(": heartbeat\n\n"));
      expect(text).toStartWith('event: snapshot\ndata: {"sessions":[],"in_flight":[],"pending_actions":[]}\nid: 1\n\n');
      const s = await h.createSession();
      const reply = await h.api(`/sessions/${s.id}/reply`, { method: "POST", json: { message: "go" } });
      await reply.text();
      text = await readUntil(reader, text, (t) => t.includes("event: turn_finished"));
      text = await readUntil(reader, text, (t) => t.endsWith("\n\n"));
      const frames = text.split("\n\n").filter((f) => f && !f.startsWith(":"));
      const turn = (await h.rt.store.listTurns(s.id))[0]!;
      expect(frames).toEqual([
        'event: snapshot\ndata: {"sessions":[],"in_flight":[],"pending_actions":[]}\nid: 1',
        `event: turn_started\ndata: {"session_id":"${s.id}","turn_id":"${turn.id}"}\nid: 2`,
        `event: turn_finished\ndata: {"session_id":"${s.id}","turn_id":"${turn.id}","status":"completed","answer":"done"}\nid: 3`,
      ]);
    } finally {
      ac.abort();
      await reader.cancel().catch(() => {});
    }
  });
});
