/**
 * @module fleet/run-leases
 * Runs held under a lease (SPEC §5.8): a `running` run of a schedule is held by the process running it
 * (`runs.worker_id`) until `runs.lease_expires_at` (ms since the Unix epoch), renewed every third of
 * `fleet.lease_ttl_seconds`. A process killed mid-run stops renewing, and any process's sweeper
 * (fleet/sweeper.ts) ends the run `interrupted` once its lease has lapsed, so the schedule's overlap
 * policy lets the next occurrence run. A run is never resumed elsewhere (its tool calls are not
 * replayed), so there is no takeover and no epoch: `status = 'running'` and the holder's id fence every
 * write (a swept run's late result changes nothing, scheduler/claim.ts `finishClaimedRun`).
 *
 * A run claimed by one process and queued for any (a manual fire) is held under the claimer's own id
 * (`claimerId`, distinct from its worker id) until it is queued, then handed over (`handOff`: its lease
 * is cleared, nobody holds it while the job waits in the durable queue) and taken by the worker that
 * picks the job up (`take`), which may be the claiming process itself: its claim and its work are told
 * apart by the two ids, so a hand-off arriving after its own worker took the run clears nothing. A
 * claimer killed before the hand-off leaves a lease that lapses: the run is swept, never left `running`.
 */
import { AirlockError } from "../errors.ts";
import type { Sql } from "../store/sql.ts";

/** Why a swept run stopped, as stored in `runs.reason`. */
export const RUN_LOST_REASON = "interrupted: the process running this run stopped renewing its lease";

export interface RunLeasesOptions {
  /** This process's id in the fleet (stored as the run's `worker_id`). */
  workerId: string;
  /** Lease length in ms (config `fleet.lease_ttl_seconds` × 1000). */
  ttlMs: number;
  /** The clock (ms since the Unix epoch); injectable for tests. */
  now?: () => number;
}

/** The lease columns of the `runs` table. */
export class RunLeases {
  readonly workerId: string;
  readonly ttlMs: number;
  private readonly now: () => number;

  constructor(
    private readonly sql: Sql,
    opts: RunLeasesOptions,
  ) {
    if (!(opts.ttlMs > 0)) throw new AirlockError("config_invalid", `fleet.lease_ttl_seconds must be positive, got ${opts.ttlMs / 1000}`);
    this.workerId = opts.workerId;
    this.ttlMs = opts.ttlMs;
    this.now = opts.now ?? Date.now;
  }

  /** The holder id of runs this process claimed for the queue (not yet taken by a worker): `<workerId>#claim`. */
  get claimerId(): string {
    return `${this.workerId}#claim`;
  }

  /** The lease expiry (ms since the Unix epoch) a run claimed now gets: now + TTL. */
  expiry(): number {
    return this.now() + this.ttlMs;
  }

  /**
   * Takes the lease of `runId` when it is `running` and held by nobody (queued) or by `from` (its
   * claimer's `claimerId`, which may not have handed it off yet). False when it is finished, swept, or held by another
   * process: then this process must not run it.
   */
  async take(runId: string, from: string | null): Promise<boolean> {
    const upd = await this.sql.run(
      "UPDATE runs SET worker_id = ?, lease_expires_at = ? WHERE id = ? AND status = 'running' AND (lease_expires_at IS NULL OR (worker_id = ? AND lease_expires_at >= ?))",
      [this.workerId, this.expiry(), runId, from ?? "", this.now()],
    );
    return upd.changes === 1;
  }

  /** Clears this process's claim on `runId` (held as `claimerId`; its job is queued for any worker). False when the claim is gone (a worker took the run, or it was swept). */
  async handOff(runId: string): Promise<boolean> {
    const upd = await this.sql.run("UPDATE runs SET worker_id = NULL, lease_expires_at = NULL WHERE id = ? AND status = 'running' AND worker_id = ?", [runId, this.claimerId]);
    return upd.changes === 1;
  }

  /**
   * Renews this process's lease of `runId` to now + TTL.
   * @throws AirlockError `lease_lost` when the run is no longer `running` under a live lease of this process.
   */
  async renew(runId: string): Promise<void> {
    const now = this.now();
    const upd = await this.sql.run("UPDATE runs SET lease_expires_at = ? WHERE id = ? AND status = 'running' AND worker_id = ? AND lease_expires_at >= ?", [
      now + this.ttlMs,
      runId,
      this.workerId,
      now,
    ]);
    if (upd.changes !== 1) {
      throw new AirlockError("lease_lost", `run ${runId} lost its lease (it lapsed and was swept, or it finished elsewhere): this process stops it`);
    }
  }

  /**
   * Renews the lease of `runId` every third of the TTL until stopped. When a renewal finds it lost,
   * `onLost` runs once and the heartbeat stops (the caller stops the run); a storage error is retried on
   * the next beat. A run that finished meanwhile also counts as lost, so stop the heartbeat first.
   */
  heartbeat(runId: string, onLost: (e: AirlockError) => void): { stop(): void } {
    let stopped = false;
    let busy = false;
    const timer = setInterval(
      () => {
        if (stopped || busy) return;
        busy = true;
        this.renew(runId)
          .catch((e: unknown) => {
            if (e instanceof AirlockError && e.code === "lease_lost" && !stopped) {
              stopped = true;
              clearInterval(timer);
              onLost(e);
            }
          })
          .finally(() => (busy = false));
      },
      Math.max(1, Math.floor(this.ttlMs / 3)),
    );
    return {
      stop() {
        stopped = true;
        clearInterval(timer);
      },
    };
  }
}

/**
 * Ends every `running` run whose lease lapsed before `now` as `interrupted` (at most `batch`), each
 * with a conditional update, so two sweepers never end one twice. Runs without a lease (queued, or on
 * SQLite) are left alone. Returns the ids ended by this call.
 */
export async function sweepRuns(sql: Sql, now: number, batch: number): Promise<string[]> {
  const due = await sql.all<{ id: string }>("SELECT id FROM runs WHERE status = 'running' AND lease_expires_at < ? ORDER BY lease_expires_at LIMIT ?", [now, batch]);
  const ended: string[] = [];
  for (const r of due) {
    const upd = await sql.run(
      "UPDATE runs SET status = 'interrupted', finished_at = ?, reason = COALESCE(reason, ?) WHERE id = ? AND status = 'running' AND lease_expires_at < ?",
      [new Date(now).toISOString(), RUN_LOST_REASON, r.id, now],
    );
    if (upd.changes === 1) ended.push(r.id);
  }
  return ended;
}
