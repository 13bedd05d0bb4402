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

/** Writes events in order, never twice and never backwards (ids at or below the last one written are dropped). */
export class SseWriter {
  private lastId = 0;
  private timer: ReturnType<typeof setInterval> | undefined;
  /** Writes are chained: `writeSSE` resolves its data asynchronously, so unchained writes could reorder or land after close. */
  private chain: Promise<unknown> = Promise.resolve();

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
      this.push(() => stream.write(": heartbeat\n\n"));
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
    const text = JSON.stringify(data);
    this.push(() => this.stream.writeSSE({ event: type, id: this.wireId(id), data: text }));
  }

  /**
   * Writes an event numbered by this stream: its id is the last id written + 1. For a stream whose events
   * come from many sessions' buses (the console feed), where no one bus numbering applies.
   */
  next(type: SseEventName, data: unknown): void {
    this.raw(type, this.lastId + 1, data);
  }

  private push(write: () => Promise<unknown>): void {
    this.chain = this.chain.then(() => (this.stream.closed || this.stream.aborted ? undefined : write())).catch(() => {});
  }

  /** Stops the heartbeat and resolves when every queued write is done (call before the stream closes). */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.chain;
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
 * The one SSE response of the API (a session's turn, its events, the console's feed): an {@link SseWriter}
 * with a heartbeat every `heartbeatMs` ms (default 15 000), open until the client goes away or `start`'s
 * `done` is called. `start` runs once, in one tick, when the stream opens: it writes what comes first and
 * subscribes, returning the unsubscribe, which runs (before the last writes are awaited) when the stream ends.
 */
export function sseResponse(
  c: Context,
  wireId: (n: number) => string,
  heartbeatMs: number | undefined,
  start: (out: SseWriter, done: () => void) => () => void,
): Response {
  return streamSSE(c, async function streamEvents(stream) {
    const out = new SseWriter(stream, wireId, heartbeatMs);
    let unsubscribe = () => {};
    try {
      await untilClosed(stream, (done) => {
        unsubscribe = start(out, done);
      });
    } finally {
      unsubscribe();
      await out.close();
    }
  });
}
