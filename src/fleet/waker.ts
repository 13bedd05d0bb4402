/**
 * @module fleet/waker
 * Wakes the cards a process waits on when their row leaves `pending` (SPEC §5.8; research: scale-out
 * §2). Three paths, all ending in a re-read of the row (the row is the truth): a notification on
 * fleet/notify.ts's channel (PostgreSQL), a catch-up of every waited card when the listener
 * (re)connects, and a slow poll every `fleet.poll_seconds` (default 2) for whatever a lost notification
 * missed. A pending card found past its expiry is marked `expired` and woken (fail closed).
 */
import type { CardRow, CardRows } from "./card-rows.ts";
import { CARD_CHANNEL, type Listener, type Subscription } from "./notify.ts";

/** Which path woke a card. */
export type WakePath = "notify" | "catchup" | "poll";

export interface WakerOptions {
  /** The PostgreSQL listener; none on SQLite (the poll alone serves). */
  listener?: Listener;
  /** Poll interval in ms (config `fleet.poll_seconds` × 1000). */
  pollMs: number;
}

interface Waiting {
  resolve: (row: CardRow) => void;
  reject: (e: unknown) => void;
}

/** One per process. */
export class CardWaker {
  private waiting = new Map<string, Waiting>();
  private sub: Subscription | null = null;
  private timer: ReturnType<typeof setInterval> | null = null;
  private closed = false;
  /** Cards woken per path (for tests and the bench). */
  readonly woken: Record<WakePath, number> = { notify: 0, catchup: 0, poll: 0 };
  /** Times the listener (re)subscribed. */
  listens = 0;
  private checks = new Set<Promise<void>>();

  constructor(
    private readonly rows: CardRows,
    private readonly opts: WakerOptions,
  ) {}

  /** Subscribes (when there is a listener; resolves once the subscription is live) and starts the poll. */
  async start(): Promise<void> {
    if (this.opts.listener && !this.sub) {
      this.sub = await this.opts.listener.listen(
        CARD_CHANNEL,
        (id) => {
          if (this.waiting.has(id)) this.track(this.check([id], "notify"));
        },
        () => {
          this.listens++;
          this.track(this.check([...this.waiting.keys()], "catchup"));
        },
      );
    }
    this.timer ??= setInterval(() => this.track(this.check([...this.waiting.keys()], "poll")), this.opts.pollMs);
  }

  /** Cards being waited on. */
  get size(): number {
    return this.waiting.size;
  }

  /**
   * Resolves with the row once card `id` is no longer pending (decided, expired, lost or cancelled).
   * One waiter per card. Rejects when the waker closes first or the row cannot be read back.
   */
  wait(id: string): Promise<CardRow> {
    if (this.closed) return Promise.reject(new Error("the card waker is closed"));
    if (this.waiting.has(id)) return Promise.reject(new Error(`card ${id} is already waited on`));
    const p = new Promise<CardRow>((resolve, reject) => this.waiting.set(id, { resolve, reject }));
    // the decision may have landed before the wait began
    this.track(this.check([id], "catchup"));
    return p;
  }

  /** Resolves when every re-read started so far has finished (e.g. the first read of a new wait). */
  async idle(): Promise<void> {
    while (this.checks.size) await Promise.all([...this.checks]);
  }

  private track(p: Promise<void>): void {
    this.checks.add(p);
    void p.finally(() => this.checks.delete(p));
  }

  /** Stops waiting on `id` (its turn ended here); the waiter is left unresolved. */
  forget(id: string): void {
    this.waiting.delete(id);
  }

  /** Re-reads the rows of `ids` and wakes those no longer pending; expires those past their TTL. */
  private async check(ids: string[], via: WakePath): Promise<void> {
    if (ids.length === 0 || this.closed) return;
    let rows: CardRow[];
    try {
      rows = await this.rows.getMany(ids);
      const due = rows.filter((r) => r.status === "pending" && r.expiresAt < this.rows.now());
      if (due.length) {
        for (const r of due) await this.rows.expireIfDue(r.id);
        rows = await this.rows.getMany(ids);
      }
    } catch (e) {
      console.error(`airlock: re-reading cards (${via}) failed; the next poll retries:`, e);
      return;
    }
    for (const r of rows) {
      if (r.status === "pending") continue;
      const w = this.waiting.get(r.id);
      if (!w) continue;
      this.waiting.delete(r.id);
      this.woken[via]++;
      w.resolve(r);
    }
  }

  /** Unsubscribes, stops the poll and rejects every waiter. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    for (const w of this.waiting.values()) w.reject(new Error("the card waker closed"));
    this.waiting.clear();
    await this.sub?.unlisten().catch(() => undefined);
  }
}
