/**
 * @module bus/sse
 * Writing bus events as Server-Sent Events (SPEC §6): `event:` = the event name, `id:` = the bus id
 * as `<epoch>-<n>` (n increasing per session; the epoch names the server process), `data:` = the JSON payload; a comment heartbeat keeps idle streams open.
 * The one SSE writer: the session routes and the console feed (ids numbered per stream, `next`) both use it.
 */
import type { Context } from "hono";
import { streamSSE, type SSEStreamingApi } from "hono/streaming";
import type { BusEvent } from "./bus.ts";
import type { SseEventName } from "./events.ts";

/** Heartbeat period of idle SSE streams, ms (SPEC §6: 15 s). */
export const HEARTBEAT_MS = 15_000;

/**
 * One SSE frame (WHATWG HTML, "Server-sent events", the event stream format): `event:`, `data:`, `id:`
 * lines and a blank line. `data` is JSON text, which never holds a raw CR or LF (JSON escapes them), so
 * it is one `data:` line; `event` and `id` are airlock's own names and ids, checked anyway.
 * @throws Error when `event` or `id` holds a line break (a bug: nothing is written).
 */
export function sseFrame(event: string, id: string, data: string): string {
  if (/[\r\n]/.test(event) || /[\r\n]/.test(id) || /[\r\n]/.test(data)) throw new Error(`an SSE frame's event, id and data must not contain line breaks (event ${JSON.stringify(event)})`);
  return `event: ${event}\ndata: ${data}\nid: ${id}\n\n`;
}

/** Writes events in order, never twice and never backwards (ids at or below the last one written are dropped). */
export class SseWriter {
  private lastId = 0;
  private timer: ReturnType<typeof setInterval> | undefined;
  /**
   * The last write. Each frame is formatted here and handed to the stream's writer at once, in call order
   * (its queue keeps that order), so an event reaches the socket without waiting for the writes before it
   * to finish; `close()` awaits the last one.
   */
  private last: Promise<unknown> = Promise.resolve();

  /**
   * @param wireId renders an event number as its SSE id (`Bus.wireId`: `<epoch>-<n>`).
   * @param heartbeatMs period of the comment heartbeat, ms.
   */
  constructor(
    private readonly stream: SSEStreamingApi,
    private readonly wireId: (n: number) => string,
    heartbeatMs = HEARTBEAT_MS,
  ) {
    this.timer = setInterval(() => {
      this.write(": heartbeat\n\n");
    }, heartbeatMs);
  }

  /** Writes a bus event unless it was already written. */
  event(ev: BusEvent): void {
    if (ev.id <= this.lastId) return;
    this.lastId = ev.id;
    this.raw(ev.type, ev.id, ev.data);
  }

  /** Writes an event with an explicit id (the snapshot: id = the last bus id it covers). */
  raw(type: SseEventName, id: number, data: unknown): void {
    if (id > this.lastId) this.lastId = id;
    this.write(sseFrame(type, this.wireId(id), JSON.stringify(data) ?? "null"));
  }

  /**
   * Writes an event numbered by this stream: its id is the last id written + 1. For a stream whose events
   * come from many sessions' buses (the console feed), where no one bus numbering applies.
   */
  next(type: SseEventName, data: unknown): void {
    this.raw(type, this.lastId + 1, data);
  }

  /** Queues `text` on the stream now, unless the stream is closed or aborted (then it is dropped). */
  private write(text: string): void {
    if (this.stream.closed || this.stream.aborted) return;
    this.last = this.stream.write(text).catch(() => {});
  }

  /** Stops the heartbeat and resolves when every queued write is done (call before the stream closes). */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.last;
  }
}

/** Resolves when the client goes away or `also` fires. */
export function untilClosed(stream: SSEStreamingApi, also?: (done: () => void) => void): Promise<void> {
  return new Promise<void>((resolve) => {
    stream.onAbort(resolve);
    also?.(resolve);
  });
}

/**
 * The SSE streams an app has open, so that a stopping server ends them cleanly (SPEC §6): {@link SseStreams.endAll}
 * asks each to end as its own `done` would — every event already handed to it is written, then the chunked body
 * ends with its last chunk, no event added. A stream opened after `endAll` is ended as soon as it opens.
 */
export class SseStreams {
  private readonly open = new Set<() => void>();
  private ending = false;

  /** Registers a stream's end (its `done`); returns the deregistration, called when the stream ends. */
  add(end: () => void): () => void {
    if (this.ending) {
      end();
      return () => {};
    }
    this.open.add(end);
    return () => void this.open.delete(end);
  }

  /** Ends every open stream, and every one opened from now on. Idempotent. */
  endAll(): void {
    this.ending = true;
    for (const end of [...this.open]) end();
    this.open.clear();
  }

  /** How many streams are open (for tests). */
  get size(): number {
    return this.open.size;
  }
}

/**
 * The one SSE response of the API (a session's turn, its events, the console's feed): an {@link SseWriter}
 * with a heartbeat every `heartbeatMs` ms (default 15 000), open until the client goes away, `start`'s
 * `done` is called, or `streams` ends it (the server stopping). `start` runs once, in one tick, when the stream
 * opens: it writes what comes first and subscribes, returning the unsubscribe, which runs when the stream ends;
 * when it returns a promise (writes it still has queued: the console feed's chain lookups), the stream's last
 * writes are awaited after it, so nothing it was handed before the end is lost.
 */
export function sseResponse(
  c: Context,
  wireId: (n: number) => string,
  heartbeatMs: number | undefined,
  streams: SseStreams | undefined,
  start: (out: SseWriter, done: () => void) => () => void | Promise<void>,
): Response {
  return streamSSE(c, async function streamEvents(stream) {
    const out = new SseWriter(stream, wireId, heartbeatMs);
    let unsubscribe: () => void | Promise<void> = () => {};
    let deregister = () => {};
    try {
      await untilClosed(stream, (done) => {
        unsubscribe = start(out, done);
        deregister = streams?.add(done) ?? deregister;
      });
    } finally {
      deregister();
      await unsubscribe();
      await out.close();
    }
  });
}
