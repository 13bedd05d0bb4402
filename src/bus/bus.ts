/**
 * @module bus/bus
 * Per-session publish/subscribe of the events SSE clients and `stream-json` see (SPEC §6).
 * Each event gets an `id` increasing per session, and a bounded replay buffer serves
 * `Last-Event-ID` resumes. On the wire an id is `<epoch>-<n>` (`wireId`): the epoch is random per bus,
 * that is per server process, so an id issued by an earlier process is recognised and answered
 * with a fresh snapshot, never with a replay of another process's numbering. `persisted` marks events whose content is also in the database
 * (messages) as opposed to ephemeral ones (cards, deltas, tool progress). What each event carries is
 * its schema in bus/events.ts: `publish` is typed by it, and checks against it under `bun test`.
 */

import { AirlockError } from "../errors.ts";
import { EVENT_NAMES, eventMismatch, type AnyEvent, type EventData, type EventName, type TypedEvent } from "./events.ts";

export { EVENT_NAMES, type AnyEvent, type EventData, type EventName, type TypedEvent };

/**
 * Any event with its payload not narrowed: what code that only forwards events needs (the SSE writer,
 * `stream-json`). Every {@link AnyEvent} is one; to read a payload, take `AnyEvent` and switch on `type`.
 */
export interface BusEvent {
  /** Increasing per session, starting at 1 in each server process. */
  id: number;
  session_id: string;
  type: EventName;
  data: Record<string, unknown>;
  /** True when the content is stored in the conversation (messages); false for ephemeral events. */
  persisted: boolean;
}

/** A subscriber: gets each event as the union of every event type. */
export type Listener = (ev: AnyEvent) => void;

interface Channel {
  seq: number;
  buffer: AnyEvent[];
  listeners: Set<Listener>;
}

/** Events kept per session for `Last-Event-ID` replay (at least this many; at most twice as many). */
export const REPLAY_BUFFER = 1024;

export class Bus {
  private channels = new Map<string, Channel>();
  private global = new Set<Listener>();
  /** This bus's epoch: lowercase letters and digits, unique per process (start time + 48 random bits). */
  readonly epoch: string = `${Date.now().toString(36)}${Buffer.from(crypto.getRandomValues(new Uint8Array(6))).toString("hex")}`;

  /**
   * @param bufferSize events kept per session for replay (at least this many; at most twice as many).
   * @param validate check each payload against its schema (bus/events.ts) before publishing, and throw
   *   `internal` on a mismatch. Default: on under `bun test` (`NODE_ENV=test`), off otherwise — the types
   *   already hold every publish site to its schema, so production pays nothing; the tests catch what a cast hides.
   */
  constructor(
    private readonly bufferSize = REPLAY_BUFFER,
    private readonly validate = underTest(),
  ) {}

  /** The SSE id of event number `n` of this bus: `<epoch>-<n>`. */
  wireId(n: number): string {
    return `${this.epoch}-${n}`;
  }

  /**
   * The event number in a `Last-Event-ID` header, or null when the header is missing, cannot be
   * parsed, or was issued by another bus (another server process): the client then needs a snapshot.
   */
  parseWireId(header: string | undefined): number | null {
    const m = header === undefined ? null : /^([0-9a-z]+)-(\d{1,15})$/.exec(header.trim());
    if (!m || m[1] !== this.epoch) return null;
    return Number(m[2]);
  }

  private channel(sessionId: string): Channel {
    let c = this.channels.get(sessionId);
    if (!c) {
      c = { seq: 0, buffer: [], listeners: new Set() };
      this.channels.set(sessionId, c);
    }
    return c;
  }

  /**
   * Publishes to one session's subscribers (and global ones); returns the event with its id. Listener errors are isolated.
   * `data` is the payload of `type` (bus/events.ts): a wrong or missing field fails `tsc`.
   * @throws AirlockError `internal` when validation is on and `data` does not match its schema (nothing is published).
   */
  publish<E extends EventName>(sessionId: string, type: E, data: EventData<E>, opts: { persisted?: boolean } = {}): TypedEvent<E> {
    if (this.validate) {
      const why = eventMismatch(type, data);
      if (why !== null) throw new AirlockError("internal", `the ${type} event does not match its schema in src/bus/events.ts: ${why}`);
    }
    const c = this.channel(sessionId);
    const ev: TypedEvent<E> = { id: ++c.seq, session_id: sessionId, type, data, persisted: opts.persisted ?? false };
    const any = ev as AnyEvent; // a TypedEvent<E> is one member of the union
    c.buffer.push(any);
    // trim in batches (amortised O(1) per publish): the buffer holds between bufferSize and 2 × bufferSize events
    if (c.buffer.length > 2 * this.bufferSize) c.buffer.splice(0, c.buffer.length - this.bufferSize);
    for (const l of [...c.listeners]) safeCall(l, any);
    for (const l of [...this.global]) safeCall(l, any);
    return ev;
  }

  /** Subscribes to one session's live events; returns the unsubscribe function. */
  subscribe(sessionId: string, listener: Listener): () => void {
    const c = this.channel(sessionId);
    c.listeners.add(listener);
    return () => {
      c.listeners.delete(listener);
    };
  }

  /** Subscribes to every session's events (used by `airlock run --output-format stream-json`). */
  subscribeAll(listener: Listener): () => void {
    this.global.add(listener);
    return () => {
      this.global.delete(listener);
    };
  }

  /** The id of the last event published to the session (0 if none). */
  lastId(sessionId: string): number {
    return this.channels.get(sessionId)?.seq ?? 0;
  }

  /**
   * Events after `lastId`, for a reconnecting client; `null` when the buffer no longer reaches back
   * (or `lastId` is from another server process), in which case the client needs a fresh snapshot.
   */
  since(sessionId: string, lastId: number): AnyEvent[] | null {
    const c = this.channels.get(sessionId);
    const seq = c?.seq ?? 0;
    if (lastId > seq || lastId < 0) return null;
    if (!c || lastId === seq) return [];
    const first = c.buffer[0];
    if (!first || first.id > lastId + 1) return null;
    return c.buffer.filter((e) => e.id > lastId);
  }

  listenerCount(sessionId: string): number {
    return this.channels.get(sessionId)?.listeners.size ?? 0;
  }
}

/**
 * Whether this process runs under `bun test` (`NODE_ENV=test`; processes a test spawns inherit it), read
 * when called. `bun build` inlines `process.env.NODE_ENV` (even through an alias) with the build's value,
 * which would fix the answer inside the binary; a `Reflect.get` is left alone.
 */
function underTest(): boolean {
  return Reflect.get(process.env, "NODE_ENV") === "test";
}

function safeCall(l: Listener, ev: AnyEvent): void {
  try {
    l(ev);
  } catch (e) {
    console.error(`airlock: bus listener failed on ${ev.type}:`, e);
  }
}
