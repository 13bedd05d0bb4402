/**
 * @module fleet/sweeper
 * Any process may sweep (SPEC §5.8): every lease past its expiry is deleted, its turn becomes
 * `interrupted` and its pending cards end `worker_lost` (a deny; fail closed), each in one transaction
 * guarded by the lease's epoch, so two sweepers (or a sweeper and a takeover) never act twice. A pending
 * card whose lease (turn and epoch) is gone altogether — parked in the instant its lease was swept, or
 * left by a turn that released its lease without withdrawing it — is ended `worker_lost` the same way.
 * Runs whose lease lapsed (fleet/run-leases.ts) end `interrupted` the same way.
 * Runs every `fleet.sweep_seconds` (default 5).
 */
import type { Sql } from "../store/sql.ts";
import { loseTurn } from "./lost.ts";
import { sweepRuns } from "./run-leases.ts";

/** What one sweep did. */
export interface SweepResult {
  /** Turns whose lease expired and were taken away now. */
  turns: string[];
  /** Cards ended `worker_lost` now. */
  cards: string[];
  /** Runs (of schedules) whose lease lapsed, ended `interrupted` now. */
  runs: string[];
  /** Turn requests whose claimer stopped before their turn took its lease (fleet/dispatch.ts `sweepUnstarted`), ended now: the turn id and its session. */
  requests: { id: string; sessionId: string }[];
}

export interface SweeperOptions {
  /** The clock (ms since the Unix epoch); injectable for tests. */
  now?: () => number;
  /** Leases handled per sweep (the rest wait for the next). Default 100. */
  batch?: number;
  /** Called after a sweep that found something (e.g. to log or publish). */
  onSwept?: (r: SweepResult) => void;
  /** The turn queue, whose claims that never started are ended at each sweep. */
  requests?: { sweepUnstarted(): Promise<{ id: string; sessionId: string }[]> };
}

export class Sweeper {
  private readonly now: () => number;
  private readonly batch: number;
  private timer: ReturnType<typeof setInterval> | null = null;
  private running: Promise<SweepResult> | null = null;

  constructor(
    private readonly sql: Sql,
    private readonly opts: SweeperOptions = {},
  ) {
    this.now = opts.now ?? Date.now;
    this.batch = opts.batch ?? 100;
  }

  /** One sweep. Concurrent calls share the sweep in progress. */
  sweep(): Promise<SweepResult> {
    this.running ??= this.sweepOnce().finally(() => (this.running = null));
    return this.running;
  }

  private async sweepOnce(): Promise<SweepResult> {
    const now = this.now();
    const out: SweepResult = { turns: [], cards: [], runs: [], requests: [] };
    const due = await this.sql.all<{ session_id: string; turn_id: string; epoch: number }>(
      "SELECT session_id, turn_id, epoch FROM inflight WHERE expires_at < ? ORDER BY expires_at LIMIT ?",
      [now, this.batch],
    );
    for (const l of due) {
      await this.sql.transaction(async (tx) => {
        const del = await tx.run("DELETE FROM inflight WHERE session_id = ? AND turn_id = ? AND epoch = ? AND expires_at < ?", [l.session_id, l.turn_id, l.epoch, now]);
        if (del.changes !== 1) return; // renewed, released, taken over or swept by another process meanwhile
        const lost = await loseTurn(tx, l.turn_id, now);
        out.turns.push(l.turn_id);
        out.cards.push(...lost.cards);
      });
    }
    // a card parked in the same moment its lease was swept (PostgreSQL read committed: the park saw the lease,
    // the sweep did not see the card) has no lease left to be swept by: end it too
    const orphans = await this.sql.all<{ turn_id: string; epoch: number }>(
      "SELECT DISTINCT c.turn_id, c.epoch FROM cards c WHERE c.status = 'pending' AND NOT EXISTS (SELECT 1 FROM inflight i WHERE i.turn_id = c.turn_id AND i.epoch = c.epoch) LIMIT ?",
      [this.batch],
    );
    for (const o of orphans) {
      await this.sql.transaction(async (tx) => {
        if (await tx.get("SELECT 1 AS one FROM inflight WHERE turn_id = ? AND epoch = ?", [o.turn_id, o.epoch])) return;
        const lost = await loseTurn(tx, o.turn_id, now);
        if (lost.interrupted) out.turns.push(o.turn_id);
        out.cards.push(...lost.cards);
      });
    }
    out.runs.push(...(await sweepRuns(this.sql, now, this.batch)));
    if (this.opts.requests) out.requests.push(...(await this.opts.requests.sweepUnstarted()));
    if (out.turns.length || out.cards.length || out.runs.length || out.requests.length) this.opts.onSwept?.(out);
    return out;
  }

  /** Sweeps every `everyMs` until `stop()`; a failed sweep is logged and retried on the next tick. */
  start(everyMs: number): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      this.sweep().catch((e: unknown) => console.error("airlock: fleet sweep failed:", e));
    }, everyMs);
  }

  /** Stops the timer and waits for a sweep in progress. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running?.catch(() => undefined);
  }
}
