/**
 * @module fleet/feed
 * Cards raised anywhere in the fleet, on this process's bus (SPEC §5.8): every card row another worker
 * parks is published as `action_required` to each of its surfaces (home and root, `surfaced_in` set per
 * surface), and its end as `action_resolved` — so an SSE client on any node sees the cards of its whole
 * session tree. Fed by the card channel's notifications (ids only; the row is re-read), a catch-up of
 * every pending row whenever the listener (re)connects, and the slow poll. Each card is published at most
 * once pending and once ended. A `worker_lost` end is published as `cancelled` (the card was withdrawn
 * because its turn ended; the row keeps `worker_lost`).
 */
import type { Bus, EventData } from "../bus/bus.ts";
import { eventMismatch, type Card } from "../bus/events.ts";
import { assertNever } from "../errors.ts";
import { BoundedMap } from "../bounded.ts";
import type { CardRow, CardRows } from "./card-rows.ts";
import { CARD_CHANNEL, type Listener, type Subscription } from "./notify.ts";

export interface FeedOptions {
  rows: CardRows;
  bus: Bus;
  /** The PostgreSQL listener; none on SQLite (the poll alone serves). */
  listener?: Listener;
  /** Poll interval in ms (config `fleet.poll_seconds` × 1000). */
  pollMs: number;
  /** This process's worker id: its own cards are published by its in-process cards already, so they are skipped. */
  skipWorker?: string;
  /**
   * Awaited before a pending card not published yet is published: the relay's read up to now (fleet/relay.ts
   * `pull`), so the events that led to a card (its turn's start, the tool call) reach this bus before it — the
   * parking node relays them before it parks the row (card/pending.ts). Never rejects.
   */
  beforeNewCard?: () => Promise<void>;
  /** Cards remembered as published (oldest forgotten first). Default 10,000. */
  memory?: number;
}

type Seen = "pending" | "ended";

/** One per process. */
export class CardFeed {
  private readonly seen: BoundedMap<string, Seen>;
  /** Other workers' pending cards published here, by id (for listings: `GET /actions`, snapshots). */
  private open = new Map<string, CardRow>();
  private sub: Subscription | null = null;
  private timer: ReturnType<typeof setInterval> | null = null;
  private closed = false;
  private checks = new Set<Promise<void>>();

  constructor(private readonly opts: FeedOptions) {
    this.seen = new BoundedMap(opts.memory ?? 10_000);
  }

  /** Subscribes (resolves once live), publishes the pending rows already there, and starts the poll. */
  async start(): Promise<void> {
    if (this.opts.listener && !this.sub) {
      this.sub = await this.opts.listener.listen(
        CARD_CHANNEL,
        (id) => this.track(this.refresh([id])),
        () => this.track(this.catchUp()),
      );
    } else this.track(this.catchUp());
    this.timer ??= setInterval(() => this.track(this.catchUp()), this.opts.pollMs);
  }

  /** Other workers' cards pending as last read here, oldest first. */
  pendingRows(): CardRow[] {
    return [...this.open.values()];
  }

  /** Resolves when every re-read started so far has finished. */
  async idle(): Promise<void> {
    while (this.checks.size) await Promise.all([...this.checks]);
  }

  /** Stops the poll and unsubscribes. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    await this.sub?.unlisten().catch(() => undefined);
    await this.idle();
  }

  private track(p: Promise<void>): void {
    const q = p.catch((e: unknown) => console.error("airlock: the fleet card feed could not re-read cards; the next poll retries:", e));
    this.checks.add(q);
    void q.finally(() => this.checks.delete(q));
  }

  /** Every pending row, plus the rows published pending here (to see them end). */
  private async catchUp(): Promise<void> {
    if (this.closed) return;
    const pending = await this.opts.rows.listAllPending();
    const open = [...this.seen].filter(([, s]) => s === "pending").map(([id]) => id);
    const pendingIds = new Set(pending.map((r) => r.id));
    await this.beforeNew(pending);
    for (const r of pending) this.apply(r);
    await this.refresh(open.filter((id) => !pendingIds.has(id)));
  }

  private async refresh(ids: string[]): Promise<void> {
    if (this.closed || ids.length === 0) return;
    const rows = await this.opts.rows.getMany(ids);
    await this.beforeNew(rows);
    for (const r of rows) this.apply(r);
  }

  /** Runs `beforeNewCard` once when `rows` hold another worker's pending card this feed has not published. */
  private async beforeNew(rows: CardRow[]): Promise<void> {
    if (!this.opts.beforeNewCard) return;
    const fresh = rows.some((r) => r.status === "pending" && !this.seen.has(r.id) && r.workerId !== this.opts.skipWorker);
    if (fresh) await this.opts.beforeNewCard();
  }

  /** Publishes one row's news; a row that cannot be published (a malformed payload) is logged and skipped, never stopping the others. */
  private apply(row: CardRow): void {
    try {
      this.publish(row);
    } catch (e) {
      console.error(`airlock: the fleet card feed could not publish card ${row.id}:`, e);
    }
  }

  private publish(row: CardRow): void {
    if (this.closed || (this.opts.skipWorker !== undefined && row.workerId === this.opts.skipWorker)) return;
    const was = this.seen.get(row.id);
    if (row.status === "pending") {
      if (was) return;
      const base = row.card as Omit<Card, "surfaced_in">;
      // another version's (or a damaged) card is not this version's Card: never listed nor published
      const why = eventMismatch("action_required", { ...base, surfaced_in: row.surfaces[0] ?? row.sessionId });
      if (why !== null) throw new Error(`its card does not match the action_required schema: ${why}`);
      this.remember(row.id, "pending");
      this.open.set(row.id, row);
      for (const s of row.surfaces) this.opts.bus.publish(s, "action_required", { ...base, surfaced_in: s });
      return;
    }
    this.open.delete(row.id);
    if (was === "ended") return;
    this.remember(row.id, "ended");
    const ev: EventData<"action_resolved"> = { request_id: row.id, decision: resolvedAs(row) };
    const from = row.decision?.decided_in;
    if (typeof from === "string" && (row.status === "allowed" || row.status === "denied")) ev.decided_in = from;
    for (const s of row.surfaces) this.opts.bus.publish(s, "action_resolved", ev);
  }

  private remember(id: string, s: Seen): void {
    this.seen.delete(id);
    this.seen.set(id, s);
  }
}

/** The `action_resolved` decision of an ended row. */
function resolvedAs(row: CardRow): EventData<"action_resolved">["decision"] {
  const s = row.status;
  switch (s) {
    case "allowed":
      return row.decision?.decision === "allow_session" ? "allow_session" : "allow_once";
    case "denied":
      return "deny";
    case "expired":
      return "expired";
    case "cancelled":
    case "worker_lost":
    case "pending":
      return "cancelled";
    default:
      return assertNever(s);
  }
}
