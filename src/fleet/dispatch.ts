/**
 * @module fleet/dispatch
 * Turns asked for on one node and run on another (SPEC §5.8, `serve --role`). An `api` node never runs a
 * turn: it commits a `queued` row in `turn_requests` (keyed by the turn id it pre-assigns, so its HTTP
 * answer names the turn) and sends the id on {@link TURN_CHANNEL} in the same transaction. Every `worker`
 * and `all` node claims queued rows with one `UPDATE … WHERE state = 'queued' … RETURNING` (one claimer
 * wins: under READ COMMITTED a second UPDATE re-checks the state after the first commits and matches
 * nothing), on a notification, on every (re)connect of its listener, and on the slow poll, then runs the
 * turn through the runtime's ordinary path (which takes the session's lease). A row is claimed at most
 * once, so no request runs twice. A request nobody claims before its `expires_at` is withdrawn (`expired`)
 * by the node that queued it, which then fails it `no_worker`.
 */
import { SESSION_TREE_CTE } from "../store/session-tree.ts";
import { AirlockError } from "../errors.ts";
import type { Sql } from "../store/sql.ts";
import type { TurnRequestState } from "../store/fleet-schema.ts";
import type { Listener, Subscription } from "./notify.ts";

/** The channel carrying the ids of newly queued turn requests. */
export const TURN_CHANNEL = "airlock_turns";

/** One row of `turn_requests`. Times in ms since the Unix epoch. */
export interface TurnRequest {
  /** The turn's id (pre-assigned by the node that queued it). */
  id: string;
  sessionId: string;
  message: string;
  state: TurnRequestState;
  /** The worker that claimed it; null while queued. */
  workerId: string | null;
  createdAt: number;
  /** Not claimed by then: withdrawn, `no_worker`. */
  expiresAt: number;
}

interface RawRequest {
  id: string;
  session_id: string;
  message: string;
  state: TurnRequestState;
  worker_id: string | null;
  created_at: number;
  expires_at: number;
}

const COLUMNS = "id, session_id, message, state, worker_id, created_at, expires_at";

const toRequest = (r: RawRequest): TurnRequest => ({
  id: r.id,
  sessionId: r.session_id,
  message: r.message,
  state: r.state,
  workerId: r.worker_id,
  createdAt: Number(r.created_at),
  expiresAt: Number(r.expires_at),
});

export interface TurnQueueOptions {
  /** This process's worker id (stored on the rows it claims). */
  workerId: string;
  /** The lease TTL in ms (`fleet.lease_ttl_seconds`): a claimed request younger than this counts as running its session until its lease shows. */
  leaseTtlMs: number;
  /** The clock (ms since the Unix epoch); injectable for tests. */
  now?: () => number;
}

/** The `turn_requests` table. */
export class TurnQueue {
  private readonly now: () => number;

  constructor(
    private readonly sql: Sql,
    private readonly opts: TurnQueueOptions,
  ) {
    this.now = opts.now ?? Date.now;
  }

  /**
   * Queues turn `turnId` of `sessionId` with `message`, claimable for `timeoutMs`, and notifies the
   * workers, in one transaction. A queued row of the session already past its expiry is marked `expired` first.
   * @throws AirlockError `session_busy` (409) when the session has a live lease, a request still queued, or
   *   one claimed less than a lease TTL ago (its lease not taken yet); storage errors as thrown (nothing stored).
   */
  async enqueue(sessionId: string, turnId: string, message: string, timeoutMs: number): Promise<TurnRequest> {
    const now = this.now();
    const busy = (why: string, state = "is already running a turn") =>
      new AirlockError("session_busy", `session ${sessionId} ${state} (${why}); wait for turn_finished or POST /sessions/${sessionId}/cancel`);
    return await this.sql.transaction(async (tx) => {
      if (await tx.get("SELECT 1 AS one FROM inflight WHERE session_id = ? AND expires_at >= ?", [sessionId, now])) throw busy("a worker holds its lease");
      const claimed = await tx.get("SELECT 1 AS one FROM turn_requests WHERE session_id = ? AND state = 'running' AND claimed_at >= ?", [sessionId, now - this.opts.leaseTtlMs]);
      if (claimed) throw busy("a worker just claimed a turn of it");
      await tx.run("UPDATE turn_requests SET state = 'expired' WHERE session_id = ? AND state = 'queued' AND expires_at < ?", [sessionId, now]);
      const ins = await tx.run(`INSERT INTO turn_requests (id, session_id, message, state, created_at, expires_at) VALUES (?, ?, ?, 'queued', ?, ?) ON CONFLICT DO NOTHING`, [
        turnId,
        sessionId,
        message,
        now,
        now + timeoutMs,
      ]);
      if (ins.changes !== 1) throw busy("no worker has claimed it yet", "already has a turn queued");
      if (tx.dialect === "postgres") await tx.get("SELECT pg_notify(?, ?) AS sent", [TURN_CHANNEL, turnId]);
      return { id: turnId, sessionId, message, state: "queued", workerId: null, createdAt: now, expiresAt: now + timeoutMs };
    });
  }

  /** Claims the oldest unexpired queued request for this worker; null when there is none. One claimer wins each row. */
  async claimNext(): Promise<TurnRequest | null> {
    const now = this.now();
    const r = await this.sql.get<RawRequest>(
      `UPDATE turn_requests SET state = 'running', worker_id = ?, claimed_at = ?
         WHERE id = (SELECT id FROM turn_requests WHERE state = 'queued' AND expires_at >= ? ORDER BY created_at, id LIMIT 1) AND state = 'queued'
         RETURNING ${COLUMNS}`,
      [this.opts.workerId, now, now],
    );
    return r ? toRequest(r) : null;
  }

  /** True when an unexpired queued request is left (a claimer that lost a race for the oldest tries again). */
  async hasQueued(): Promise<boolean> {
    return (await this.sql.get("SELECT 1 AS one FROM turn_requests WHERE state = 'queued' AND expires_at >= ? LIMIT 1", [this.now()])) !== null;
  }

  /** Claims request `id` if it is still queued and unexpired; null otherwise (another worker won, or it ended). */
  async claim(id: string): Promise<TurnRequest | null> {
    const now = this.now();
    const r = await this.sql.get<RawRequest>(
      `UPDATE turn_requests SET state = 'running', worker_id = ?, claimed_at = ? WHERE id = ? AND state = 'queued' AND expires_at >= ? RETURNING ${COLUMNS}`,
      [this.opts.workerId, now, id, now],
    );
    return r ? toRequest(r) : null;
  }

  /** Marks a claimed request `done` (its turn ended, or could not start). False when it was not `running`. */
  async finish(id: string): Promise<boolean> {
    return (await this.sql.run("UPDATE turn_requests SET state = 'done' WHERE id = ? AND state = 'running'", [id])).changes === 1;
  }

  /**
   * Keeps this worker's claim of `id` fresh while its turn starts (before it holds the session's lease): a
   * claim not renewed for a lease TTL is ended by {@link sweepUnstarted}. False when the request is no longer
   * this worker's unstarted claim (started, ended or swept).
   */
  async renewClaim(id: string): Promise<boolean> {
    const sql = "UPDATE turn_requests SET claimed_at = ? WHERE id = ? AND state = 'running' AND started_at IS NULL AND worker_id = ?";
    return (await this.sql.run(sql, [this.now(), id, this.opts.workerId])).changes === 1;
  }

  /**
   * Records that the turn of this worker's claim `id` holds its lease. False when the claim was swept meanwhile
   * (this worker was paused or too slow): the turn must not run (its end was announced by the sweeper).
   */
  async markStarted(id: string): Promise<boolean> {
    const sql = "UPDATE turn_requests SET started_at = ? WHERE id = ? AND state = 'running' AND started_at IS NULL AND worker_id = ?";
    return (await this.sql.run(sql, [this.now(), id, this.opts.workerId])).changes === 1;
  }

  /**
   * Ends as `done` every `running` request whose turn never started (no `started_at`) and whose claim was not
   * renewed for a lease TTL: its claimer stopped between the claim and the lease. Returns them (their turns'
   * end is announced by the caller). One statement per request row, so a claimer's {@link markStarted} and this
   * never both succeed (the row lock orders them; READ COMMITTED re-checks the conditions).
   */
  async sweepUnstarted(): Promise<{ id: string; sessionId: string }[]> {
    const rows = await this.sql.all<{ id: string; session_id: string }>(
      "UPDATE turn_requests SET state = 'done' WHERE state = 'running' AND started_at IS NULL AND claimed_at < ? RETURNING id, session_id",
      [this.now() - this.opts.leaseTtlMs],
    );
    return rows.map((r) => ({ id: r.id, sessionId: r.session_id }));
  }

  /** Withdraws request `id` as `expired` if still queued (nobody claimed it in time). True when this call withdrew it. */
  async expire(id: string): Promise<boolean> {
    return (await this.sql.run("UPDATE turn_requests SET state = 'expired' WHERE id = ? AND state = 'queued'", [id])).changes === 1;
  }

  /** Withdraws the session's queued requests as `cancelled`; returns their ids (the turns that will never start). */
  async withdraw(sessionId: string): Promise<string[]> {
    const rows = await this.sql.all<{ id: string }>("UPDATE turn_requests SET state = 'cancelled' WHERE session_id = ? AND state = 'queued' RETURNING id", [sessionId]);
    return rows.map((r) => r.id);
  }

  /**
   * Withdraws as `cancelled` the queued requests of `sessionId` and of every session below it (children,
   * grandchildren …), in one statement; returns each withdrawn request's id and session (turns that will never start).
   */
  async withdrawTree(sessionId: string): Promise<{ id: string; sessionId: string }[]> {
    const rows = await this.sql.all<{ id: string; session_id: string }>(
      `${SESSION_TREE_CTE}
       UPDATE turn_requests SET state = 'cancelled' WHERE state = 'queued' AND session_id IN (SELECT id FROM tree) RETURNING id, session_id`,
      [sessionId],
    );
    return rows.map((r) => ({ id: r.id, sessionId: r.session_id }));
  }

  /** Request `id`, or null. */
  async get(id: string): Promise<TurnRequest | null> {
    const r = await this.sql.get<RawRequest>(`SELECT ${COLUMNS} FROM turn_requests WHERE id = ?`, [id]);
    return r ? toRequest(r) : null;
  }

  /** Deletes ended requests (and queued ones past expiry) created before `before` (ms); returns how many. */
  async prune(before: number): Promise<number> {
    return (await this.sql.run("DELETE FROM turn_requests WHERE created_at < ? AND (state IN ('done', 'cancelled', 'expired') OR (state = 'queued' AND expires_at < ?))", [before, before])).changes;
  }
}

export interface DispatcherOptions {
  queue: TurnQueue;
  /** The PostgreSQL listener; none on SQLite (the poll alone serves). */
  listener?: Listener;
  /** Poll interval in ms (`fleet.poll_seconds` × 1000). */
  pollMs: number;
  /** Runs a claimed request to its end (the runtime's turn path); must not reject. */
  run: (req: TurnRequest) => Promise<void>;
  /** The most claimed requests running here at once (`fleet.worker_turns`); more are claimed as these end. Default unlimited. */
  maxRunning?: number;
}

/** Claims and runs queued turn requests on a `worker` or `all` node. One per process. */
export class TurnDispatcher {
  private sub: Subscription | null = null;
  private timer: ReturnType<typeof setInterval> | null = null;
  private closed = false;
  private draining: Promise<void> | null = null;
  private again = false;
  private readonly runs = new Set<Promise<void>>();
  /** Requests claimed here (for tests and the bench). */
  claimed = 0;

  /** Claimed requests running here now. */
  get running(): number {
    return this.runs.size;
  }

  constructor(private readonly opts: DispatcherOptions) {}

  /** Subscribes (resolves once live), claims what is already queued, and starts the poll. */
  async start(): Promise<void> {
    if (this.opts.listener && !this.sub) {
      this.sub = await this.opts.listener.listen(
        TURN_CHANNEL,
        () => this.drain(),
        () => this.drain(),
      );
    } else this.drain();
    this.timer ??= setInterval(() => this.drain(), this.opts.pollMs);
  }

  /** Claims queued requests until none is left (one drain at a time; a call during a drain runs another after it). */
  drain(): void {
    if (this.closed) return;
    if (this.draining) {
      this.again = true;
      return;
    }
    this.draining = (async () => {
      do {
        this.again = false;
        for (;;) {
          if (this.closed) return;
          // full: the rest stay queued for other workers, or for this one when a run ends
          if (this.runs.size >= (this.opts.maxRunning ?? Infinity)) break;
          let req: TurnRequest | null;
          try {
            req = await this.opts.queue.claimNext();
          } catch (e) {
            console.error("airlock: claiming a queued turn failed; the next poll retries:", e);
            return;
          }
          // null: nothing queued, or another worker won the same row; in the second case try the next one
          if (!req) {
            if (await this.opts.queue.hasQueued().catch(() => false)) continue;
            break;
          }
          this.claimed++;
          const p = this.opts.run(req).catch((e: unknown) => console.error(`airlock: the queued turn ${req.id} failed to run:`, e));
          this.runs.add(p);
          void p.finally(() => {
            this.runs.delete(p);
            this.drain();
          });
        }
      } while (this.again && !this.closed);
    })().finally(() => (this.draining = null));
  }

  /** Stops claiming (turns already claimed go on; the runtime's close cancels them) and unsubscribes. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    await this.sub?.unlisten().catch(() => undefined);
    await this.draining?.catch(() => undefined);
  }
}
