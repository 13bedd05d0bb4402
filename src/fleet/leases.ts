/**
 * @module fleet/leases
 * In-flight leases across processes (SPEC §5.8; research: scale-out §4). A worker running a session's
 * turn holds the session's row in `inflight` until `expires_at` and renews it (heartbeat, every third
 * of the TTL). Each holder gets a fencing epoch, one more than the session's previous holder, and every
 * write made for the turn carries (turn, epoch): `check` is true only for the live holder, so a paused
 * or partitioned old holder can never renew, park a card or act after its lease was swept or taken over.
 * A lease past its expiry is taken over only together with its turn's loss (fleet/lost.ts), in one
 * transaction.
 */
import { SESSION_TREE_CTE } from "../store/session-tree.ts";
import { AirlockError } from "../errors.ts";
import type { Sql } from "../store/sql.ts";
import { loseTurn } from "./lost.ts";

/** A held lease. `expiresAt`: ms since the Unix epoch. */
export interface Lease {
  sessionId: string;
  turnId: string;
  workerId: string;
  epoch: number;
  expiresAt: number;
  /** Set by {@link Leases.acquire} when it took the session over from an expired lease whose turn it interrupted (that turn's id). */
  tookOverTurnId?: string;
}

export interface LeasesOptions {
  /** This process's id in the fleet (stored on its leases and cards). */
  workerId: string;
  /** Lease length in ms (config `fleet.lease_ttl_seconds`, default 15 s). */
  ttlMs: number;
  /** The clock (ms since the Unix epoch); injectable for tests. Processes of a fleet keep their clocks in sync (NTP). */
  now?: () => number;
}

interface RawLease {
  session_id: string;
  turn_id: string;
  worker_id: string;
  epoch: number;
  expires_at: number;
}

const toLease = (r: RawLease): Lease => ({ sessionId: r.session_id, turnId: r.turn_id, workerId: r.worker_id, epoch: Number(r.epoch), expiresAt: Number(r.expires_at) });

/** The `inflight` table. */
export class Leases {
  readonly workerId: string;
  readonly ttlMs: number;
  private readonly now: () => number;

  constructor(
    private readonly sql: Sql,
    opts: LeasesOptions,
  ) {
    if (!(opts.ttlMs > 0)) throw new AirlockError("config_invalid", `fleet.lease_ttl_seconds must be positive, got ${opts.ttlMs / 1000}`);
    this.workerId = opts.workerId;
    this.ttlMs = opts.ttlMs;
    this.now = opts.now ?? Date.now;
  }

  /**
   * Acquires `sessionId`'s lease for `turnId` (epoch 1 for a free session). A lease past its expiry is
   * taken over with the next epoch, and its turn is lost (`interrupted`, cards `worker_lost`) in the same
   * transaction.
   * @throws AirlockError `session_busy` (409) while another turn holds a live lease on the session.
   */
  async acquire(sessionId: string, turnId: string): Promise<Lease> {
    const now = this.now();
    const expiresAt = now + this.ttlMs;
    return await this.sql.transaction(async (tx) => {
      const ins = await tx.run("INSERT INTO inflight (session_id, turn_id, worker_id, epoch, expires_at) VALUES (?, ?, ?, 1, ?) ON CONFLICT (session_id) DO NOTHING", [
        sessionId,
        turnId,
        this.workerId,
        expiresAt,
      ]);
      if (ins.changes === 1) return { sessionId, turnId, workerId: this.workerId, epoch: 1, expiresAt };
      const held = await tx.get<RawLease>("SELECT session_id, turn_id, worker_id, epoch, expires_at FROM inflight WHERE session_id = ?", [sessionId]);
      if (held && Number(held.expires_at) >= now) throw busy(sessionId, toLease(held));
      if (!held) throw busy(sessionId, null);
      // the holder's lease expired: take it over (the next epoch), losing its turn in the same transaction
      const upd = await tx.run("UPDATE inflight SET turn_id = ?, worker_id = ?, epoch = epoch + 1, expires_at = ? WHERE session_id = ? AND epoch = ? AND expires_at < ?", [
        turnId,
        this.workerId,
        expiresAt,
        sessionId,
        held.epoch,
        now,
      ]);
      if (upd.changes !== 1) throw busy(sessionId, null);
      const lost = await loseTurn(tx, held.turn_id, now);
      return { sessionId, turnId, workerId: this.workerId, epoch: Number(held.epoch) + 1, expiresAt, ...(lost.interrupted ? { tookOverTurnId: held.turn_id } : {}) };
    });
  }

  /**
   * Renews (heartbeat) a held lease to now + TTL. Only the live holder renews: a lease that expired
   * (even if nobody swept it yet), was swept or was taken over is lost.
   * @throws AirlockError `lease_lost` (409) when `lease` is not live; the caller aborts its turn.
   */
  async renew(lease: Lease): Promise<Lease> {
    const now = this.now();
    const expiresAt = now + this.ttlMs;
    const upd = await this.sql.run("UPDATE inflight SET expires_at = ? WHERE session_id = ? AND turn_id = ? AND worker_id = ? AND epoch = ? AND expires_at >= ?", [
      expiresAt,
      lease.sessionId,
      lease.turnId,
      lease.workerId,
      lease.epoch,
      now,
    ]);
    if (upd.changes !== 1) throw lost(lease);
    return { ...lease, expiresAt };
  }

  /** Releases a held lease (the turn ended). False when it was no longer held (expired, swept or taken over). */
  async release(lease: Lease): Promise<boolean> {
    const del = await this.sql.run("DELETE FROM inflight WHERE session_id = ? AND turn_id = ? AND worker_id = ? AND epoch = ?", [
      lease.sessionId,
      lease.turnId,
      lease.workerId,
      lease.epoch,
    ]);
    return del.changes === 1;
  }

  /** True only when (`turnId`, `epoch`) is the live lease (held and not past its expiry). */
  async check(turnId: string, epoch: number): Promise<boolean> {
    const row = await this.sql.get<{ one: number }>("SELECT 1 AS one FROM inflight WHERE turn_id = ? AND epoch = ? AND expires_at >= ?", [turnId, epoch, this.now()]);
    return row !== null;
  }

  /** The live lease on `sessionId`, or null (none, or past its expiry: not in flight). */
  async live(sessionId: string): Promise<Lease | null> {
    const r = await this.sql.get<RawLease>("SELECT session_id, turn_id, worker_id, epoch, expires_at FROM inflight WHERE session_id = ? AND expires_at >= ?", [sessionId, this.now()]);
    return r ? toLease(r) : null;
  }

  /** True when `sessionId` or a session below it (subagents at any depth) holds a live lease, in any process. */
  async liveInTree(sessionId: string): Promise<boolean> {
    const sql = `${SESSION_TREE_CTE}
       SELECT 1 AS one FROM inflight i JOIN tree t ON i.session_id = t.id WHERE i.expires_at >= ? LIMIT 1`;
    return (await this.sql.get(sql, [sessionId, this.now()])) !== null;
  }

  /** The sessions with a live lease held by another process than this one; only `sessionId` when given. */
  async heldElsewhere(sessionId?: string): Promise<string[]> {
    const rows = sessionId
      ? await this.sql.all<{ session_id: string }>("SELECT session_id FROM inflight WHERE session_id = ? AND worker_id <> ? AND expires_at >= ?", [sessionId, this.workerId, this.now()])
      : await this.sql.all<{ session_id: string }>("SELECT session_id FROM inflight WHERE worker_id <> ? AND expires_at >= ?", [this.workerId, this.now()]);
    return rows.map((r) => r.session_id);
  }

  /**
   * Renews `lease` every third of the TTL until stopped. When a renewal finds the lease lost, `onLost`
   * runs once (the caller aborts the turn) and the heartbeat stops; a storage error is retried on the next beat.
   */
  heartbeat(lease: Lease, onLost: (e: AirlockError) => void): { stop(): void; current(): Lease } {
    let cur = lease;
    let stopped = false;
    let busyBeat = false;
    const timer = setInterval(
      () => {
        if (stopped || busyBeat) return;
        busyBeat = true;
        this.renew(cur)
          .then((l) => {
            if (!stopped) cur = l;
          })
          .catch((e: unknown) => {
            if (e instanceof AirlockError && e.code === "lease_lost" && !stopped) {
              stopped = true;
              clearInterval(timer);
              onLost(e);
            }
          })
          .finally(() => (busyBeat = false));
      },
      Math.max(1, Math.floor(this.ttlMs / 3)),
    );
    return {
      stop() {
        stopped = true;
        clearInterval(timer);
      },
      current: () => cur,
    };
  }
}

function busy(sessionId: string, held: Lease | null): AirlockError {
  return new AirlockError(
    "session_busy",
    `session ${sessionId} is already running a turn${held ? ` (${held.turnId}, on worker ${held.workerId})` : ""}; wait for turn_finished or POST /sessions/${sessionId}/cancel`,
  );
}

function lost(lease: Lease): AirlockError {
  return new AirlockError(
    "lease_lost",
    `turn ${lease.turnId} lost its lease on session ${lease.sessionId} (epoch ${lease.epoch}): it expired or another worker took it over; the turn stops and its cards are refused`,
  );
}
