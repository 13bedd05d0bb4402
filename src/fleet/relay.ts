/**
 * @module fleet/relay
 * The bus events of turns running on one node, on every other node's bus (SPEC §5.8), so an SSE client on
 * any node sees messages, deltas, tool calls, hook messages and turn start and end wherever the turn runs.
 * Each node collects what its own bus publishes (cards excepted: fleet/feed.ts carries them from their
 * rows) and, every `flushMs`, appends one row to `fleet_relay` (a JSON array of items, any size) and sends
 * its id on {@link RELAY_CHANNEL} in the same transaction; rows are written one after another, so one
 * node's rows commit in id order. Every node re-reads rows of other nodes on a notification, on every
 * (re)connect of its listener and on the slow poll, and republishes their events on its own bus with the
 * same type, payload and `persisted` flag (the local event ids are its own). The same rows carry cancel
 * requests (`POST /sessions/:id/cancel` on one node reaching the node running the turn). Rows older than
 * `keepMs` are pruned; a read looks back `lookbackMs` as well as past the highest id seen, so a row that
 * committed after a higher id (another node's) is still read, once.
 */
import { EVENT_NAMES, type Bus, type EventName } from "../bus/bus.ts";
import { eventMismatch, type AnyEvent } from "../bus/events.ts";
import { assertNever } from "../errors.ts";
import { BoundedSet } from "../bounded.ts";
import type { Sql } from "../store/sql.ts";
import type { Listener, Subscription } from "./notify.ts";

/** The channel carrying the ids of new `fleet_relay` rows. */
export const RELAY_CHANNEL = "airlock_relay";

/** One relayed item: a bus event as published, or a request to cancel a session's turn (and its descendants'). */
export type RelayItem =
  | { kind: "event"; session_id: string; type: EventName; data: Record<string, unknown>; persisted: boolean }
  | { kind: "cancel"; session_id: string; reason: string };

/** Events the relay leaves to the card feed (fleet/feed.ts publishes them from the card rows). */
const CARD_EVENTS: ReadonlySet<EventName> = new Set<EventName>(["action_required", "action_resolved"]);

/** The event names this version knows: a relayed item of any other type (another version's) is skipped. */
const KNOWN_EVENTS: ReadonlySet<string> = new Set<string>(EVENT_NAMES);

/** After a failed row write, the collected batches are written again this long later, ms. */
const RETRY_MS = 500;

/** At most this many unwritten batches are kept while writes fail; older ones are dropped with a log line. */
const MAX_OUTBOX = 10_000;

export interface RelayOptions {
  sql: Sql;
  bus: Bus;
  /** This process's worker id: rows it wrote are not read back. */
  workerId: string;
  /** The PostgreSQL listener; none on SQLite (the poll alone serves). */
  listener?: Listener;
  /** Poll interval in ms (`fleet.poll_seconds` × 1000). */
  pollMs: number;
  /** How long published events gather before one row is written, ms. Default 25. */
  flushMs?: number;
  /** Rows older than this are pruned, ms. Default 10 minutes. */
  keepMs?: number;
  /** How far back each read looks besides past the highest id seen, ms. Default 30 s. */
  lookbackMs?: number;
  /** Runs a cancel request another node sent. */
  onCancel: (sessionId: string, reason: string) => void;
  /** The clock (ms since the Unix epoch). */
  now?: () => number;
}

/** One per process. */
export class EventRelay {
  private pending: RelayItem[] = [];
  private flushTimer: ReturnType<typeof setTimeout> | null = null;
  /** Batches collected but not yet committed, oldest first: written one at a time, in order; a failed one stays first and is retried. */
  private outbox: RelayItem[][] = [];
  private writing: Promise<void> = Promise.resolve();
  private retryTimer: ReturnType<typeof setTimeout> | null = null;
  /** A row write failed and none has succeeded since (one log line per outage). */
  private failing = false;
  private reading: Promise<void> | null = null;
  private readAgain = false;
  private republishing = false;
  private high = 0;
  /** Row ids read, with their `created_at`, forgotten once older than the lookback. */
  private seen = new Map<number, number>();
  /** Ids of the rows this node wrote lately (their notifications are skipped), oldest first. */
  private mine = new BoundedSet<number>(1000);
  private unsubscribe: (() => void) | null = null;
  private sub: Subscription | null = null;
  private pollTimer: ReturnType<typeof setInterval> | null = null;
  private lastPrune = 0;
  private closed = false;
  private readonly now: () => number;
  private readonly flushMs: number;
  private readonly keepMs: number;
  private readonly lookbackMs: number;
  /** Rows written and read here (for tests and the bench). */
  readonly counts = { written: 0, read: 0, events: 0 };

  constructor(private readonly opts: RelayOptions) {
    this.now = opts.now ?? Date.now;
    this.flushMs = opts.flushMs ?? 25;
    this.keepMs = opts.keepMs ?? 10 * 60_000;
    this.lookbackMs = opts.lookbackMs ?? 30_000;
  }

  /** Starts collecting this bus's events, subscribes (resolves once live) and starts the poll. Rows already there are not replayed. */
  async start(): Promise<void> {
    const top = await this.opts.sql.get<{ m: number | null }>("SELECT MAX(id) AS m FROM fleet_relay");
    this.high = Number(top?.m ?? 0);
    this.lastPrune = this.now();
    // rows written before this process started are history, not news
    const before = await this.opts.sql.all<{ id: number; created_at: number }>("SELECT id, created_at FROM fleet_relay WHERE created_at >= ?", [this.now() - this.lookbackMs]);
    for (const r of before) this.seen.set(Number(r.id), Number(r.created_at));
    this.unsubscribe = this.opts.bus.subscribeAll((ev) => this.collect(ev));
    if (this.opts.listener && !this.sub) {
      this.sub = await this.opts.listener.listen(
        RELAY_CHANNEL,
        // a notification of a row this node wrote brings nothing to read
        (payload) => {
          if (!this.mine.has(Number(payload))) this.read();
        },
        () => this.read(),
      );
    }
    this.pollTimer ??= setInterval(() => this.read(), this.opts.pollMs);
  }

  /** Sends a cancel request for `sessionId`'s turn to every other node; resolves once its row is committed. */
  async sendCancel(sessionId: string, reason: string): Promise<void> {
    this.pending.push({ kind: "cancel", session_id: sessionId, reason });
    await this.flush();
  }

  /**
   * Writes what was collected so far; resolves once every row queued before the call is committed, or once a
   * write failed (logged; the failed batch and those after it stay queued, in order, and are written again
   * {@link RETRY_MS} later and at the next flush, so a database refusing writes for a while loses no event).
   */
  flush(): Promise<void> {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    if (this.pending.length) {
      this.outbox.push(this.pending);
      this.pending = [];
      if (this.outbox.length > MAX_OUTBOX) {
        const dropped = this.outbox.splice(0, this.outbox.length - MAX_OUTBOX);
        console.error(`airlock: relaying to the other nodes keeps failing; ${dropped.reduce((n, b) => n + b.length, 0)} older event(s) dropped`);
      }
    }
    return this.pump();
  }

  /** Writes the outbox's batches in order until it is empty or a write fails (then retried later); chained, so one writes at a time. Never rejects. */
  private pump(): Promise<void> {
    this.writing = this.writing.then(async () => {
      while (this.outbox.length) {
        const items = this.outbox[0]!;
        try {
          await this.write(items);
        } catch (e) {
          // logged once per outage, not at every retry
          if (!this.failing) console.error(`airlock: relaying ${items.length} event(s) to the other nodes failed; retried every ${RETRY_MS} ms until the database takes them:`, e);
          this.failing = true;
          if (!this.closed) this.retryTimer ??= setTimeout(() => ((this.retryTimer = null), void this.flush()), RETRY_MS);
          return;
        }
        this.outbox.shift();
        if (this.failing) console.error("airlock: relaying to the other nodes works again; the events held meanwhile are written in order");
        this.failing = false;
      }
    });
    return this.writing;
  }

  /**
   * Reads the other nodes' rows committed before this call and republishes them; resolves once that read (and
   * any it was queued behind) has finished. Does nothing before {@link start}. Never rejects (a failed read is
   * logged; the poll retries).
   */
  async pull(): Promise<void> {
    // before start() nothing is read: rows already there are history, not news
    if (!this.unsubscribe) return;
    this.read();
    while (this.reading) await this.reading;
  }

  /** Resolves when the reads and writes started so far have finished. */
  async idle(): Promise<void> {
    await this.flush();
    while (this.reading) await this.reading;
  }

  /** Stops collecting, writes what was collected, unsubscribes and stops the poll. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.unsubscribe?.();
    await this.flush();
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    if (this.outbox.length) console.error(`airlock: closing with ${this.outbox.length} batch(es) of events not relayed (the database refused them)`);
    if (this.pollTimer) clearInterval(this.pollTimer);
    await this.sub?.unlisten().catch(() => undefined);
    await this.reading?.catch(() => undefined);
  }

  private collect(ev: AnyEvent): void {
    if (this.republishing || this.closed || CARD_EVENTS.has(ev.type)) return;
    this.pending.push({ kind: "event", session_id: ev.session_id, type: ev.type, data: ev.data as Record<string, unknown>, persisted: ev.persisted });
    this.flushTimer ??= setTimeout(() => void this.flush(), this.flushMs);
  }

  private async write(items: RelayItem[]): Promise<void> {
    await this.opts.sql.transaction(async (tx) => {
      const row = await tx.get<{ id: number }>("INSERT INTO fleet_relay (worker_id, items, created_at) VALUES (?, ?, ?) RETURNING id", [
        this.opts.workerId,
        JSON.stringify(items),
        this.now(),
      ]);
      const id = Number(row?.id ?? 0);
      this.mine.add(id);
      if (tx.dialect === "postgres") await tx.get("SELECT pg_notify(?, ?) AS sent", [RELAY_CHANNEL, String(id)]);
    });
    this.counts.written++;
  }

  /** Re-reads other nodes' rows past the highest id seen or within the lookback (one read at a time; a call during a read runs another after it). */
  read(): void {
    if (this.closed) return;
    if (this.reading) {
      this.readAgain = true;
      return;
    }
    this.reading = (async () => {
      do {
        this.readAgain = false;
        try {
          await this.readOnce();
        } catch (e) {
          console.error("airlock: reading relayed events failed; the next poll retries:", e);
          return;
        }
      } while (this.readAgain && !this.closed);
    })().finally(() => (this.reading = null));
  }

  private async readOnce(): Promise<void> {
    const now = this.now();
    const since = now - this.lookbackMs;
    // past the highest id seen: new rows, read whole. Within the lookback (a row that committed after a higher
    // id): ids first, and only the rows not seen yet are read whole, so a big row is transferred once, not by
    // every read while it stays in the window
    const high = this.high;
    type Row = { id: number; worker_id: string; items: string; created_at: number };
    const fresh = await this.opts.sql.all<Row>("SELECT id, worker_id, items, created_at FROM fleet_relay WHERE id > ? AND worker_id <> ? ORDER BY id", [high, this.opts.workerId]);
    const recent = await this.opts.sql.all<{ id: number }>("SELECT id FROM fleet_relay WHERE created_at >= ? AND id <= ? AND worker_id <> ?", [since, high, this.opts.workerId]);
    const missing = recent.map((r) => Number(r.id)).filter((id) => !this.seen.has(id));
    const late: Row[] = [];
    for (let i = 0; i < missing.length; i += 500) {
      const ids = missing.slice(i, i + 500);
      late.push(...(await this.opts.sql.all<Row>(`SELECT id, worker_id, items, created_at FROM fleet_relay WHERE id IN (${ids.map(() => "?").join(", ")})`, ids)));
    }
    const rows = late.length ? [...late, ...fresh].sort((x, y) => Number(x.id) - Number(y.id)) : fresh;
    for (const r of rows) {
      const id = Number(r.id);
      if (this.seen.has(id)) continue;
      this.seen.set(id, Number(r.created_at));
      if (id > this.high) this.high = id;
      if (this.closed) return;
      this.counts.read++;
      this.apply(id, r.items);
    }
    for (const [id, at] of this.seen) if (at < since - this.lookbackMs) this.seen.delete(id);
    if (now - this.lastPrune > 60_000) {
      this.lastPrune = now;
      await this.opts.sql.run("DELETE FROM fleet_relay WHERE created_at < ?", [now - this.keepMs]);
    }
  }

  /**
   * Republishes one row's items. The row may come from another version or a broken writer: a row that is not a
   * JSON array, an item that is not an object of a known kind, a cancel without a session id, an event of a
   * type this version does not know or whose payload does not fit its schema (bus/events.ts) is logged and
   * skipped, never stopping the others.
   */
  private apply(id: number, text: string): void {
    let items: unknown;
    try {
      items = JSON.parse(text);
    } catch (e) {
      console.error(`airlock: relayed row ${id} is not JSON; skipped:`, e);
      return;
    }
    if (!Array.isArray(items)) {
      console.error(`airlock: relayed row ${id} is not a JSON array; skipped`);
      return;
    }
    for (const raw of items as unknown[]) {
      try {
        const it = checkItem(raw);
        if (typeof it === "string") {
          console.error(`airlock: a relayed item of row ${id} was skipped: ${it}`);
          continue;
        }
        const kind = it.kind;
        switch (kind) {
          case "cancel":
            this.opts.onCancel(it.session_id, it.reason);
            break;
          case "event":
            this.republishing = true;
            try {
              this.opts.bus.publish(it.session_id, it.type, it.data as never, { persisted: it.persisted });
              this.counts.events++;
            } finally {
              this.republishing = false;
            }
            break;
          default:
            assertNever(kind);
        }
      } catch (e) {
        console.error(`airlock: a relayed item of row ${id} could not be published:`, e);
      }
    }
  }
}

/** `raw` as a relay item this version can act on, or why not. */
function checkItem(raw: unknown): RelayItem | string {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return "not an object";
  const it = raw as Record<string, unknown>;
  if (typeof it.session_id !== "string" || it.session_id === "") return "no session_id";
  if (it.kind === "cancel") return { kind: "cancel", session_id: it.session_id, reason: typeof it.reason === "string" ? it.reason : "cancelled by request" };
  if (it.kind !== "event") return `unknown kind ${JSON.stringify(it.kind)}`;
  if (typeof it.type !== "string" || !KNOWN_EVENTS.has(it.type)) return `unknown event type ${JSON.stringify(it.type)}`;
  const type = it.type as EventName;
  const why = eventMismatch(type, it.data);
  if (why !== null) return `the ${type} event does not match its schema: ${why}`;
  return { kind: "event", session_id: it.session_id, type, data: it.data as Record<string, unknown>, persisted: it.persisted === true };
}
