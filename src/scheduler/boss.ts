/**
 * @module scheduler/boss
 * The schedule driver for PostgreSQL mode (several `airlock serve` processes on one database): each
 * schedule's cron occurrences are computed with croner, as in the embedded scheduler (scheduler.ts),
 * and each occurrence becomes one pg-boss job whose id is derived from (schedule id, occurrence time).
 * Every process enqueues every occurrence; pg-boss inserts a job id once (`ON CONFLICT DO NOTHING`), so
 * an occurrence is enqueued once however many processes run, and a job is claimed by one worker
 * (`SKIP LOCKED`). The worker then claims the fire in our own tables (claim.ts `claimFire`: overlap
 * policy and run-history row in one transaction) and runs the recipe headless.
 *
 * Policies, as in the embedded scheduler (docs/recipes.md):
 * - overlap: a fire while a run of the same schedule is `running` (on any process) is stored `skipped`;
 * - missed fires are not replayed: a job whose occurrence is no longer the latest due one (the next
 *   occurrence is already due, e.g. after workers were down or busy) is dropped without a run row;
 * - catch-up: on start, a schedule that missed at least one occurrence since its last fire (or
 *   creation) gets one `catch-up` job, keyed by its latest due occurrence, so that processes starting
 *   together (and that occurrence's own cron job) yield one run.
 *
 * pg-boss is loaded only by `loadPgBoss()` (one dynamic import): the embedded default never loads it.
 * Jobs are never retried (`retryLimit: 0`): a run that was started is not started again.
 */
import { createHash, randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { Cron } from "croner";
import type { Job, PgBoss } from "pg-boss";
import { AirlockError, assertNever, toAirlockError } from "../errors.ts";
import { RunLeases } from "../fleet/run-leases.ts";
import type { Sql } from "../store/sql.ts";
import {
  claimFire,
  deleteScheduleSql,
  finishClaimedRun,
  hasRemovedRunsSql,
  insertScheduleSql,
  loadAllRuns,
  loadRun,
  loadRuns,
  loadSchedule,
  loadSchedules,
  runningRunId,
  setClaimedRunSession,
} from "./claim.ts";
import { checkedSchedule, type NewSchedule, type RunRecipeInput, type RunResultObject, type ScheduleView, type SchedulerEvent } from "./scheduler.ts";
import { publicSchedule, type Run, type RunTrigger, type ScheduleWithRecipe } from "./store.ts";

/** The pg-boss queue holding schedule fires. */
export const FIRE_QUEUE = "airlock-schedule-fire";

/**
 * The payload of a fire job. `occurrence` is the ISO-8601 cron occurrence, null for manual fires.
 * `run_id`: a manual fire is claimed where it is asked for (so the API can answer with the run, or 409
 * with the skipped one) and the job carries the `running` run for a worker to run.
 */
export interface FireJob {
  schedule_id: string;
  trigger: RunTrigger;
  occurrence: string | null;
  run_id?: string;
  /** The claimer id (`RunLeases.claimerId`) of the process that claimed `run_id`: it holds the run until it hands it off. */
  claimed_by?: string;
}

/** Namespace of fire job ids (a fixed random UUID; RFC 9562 §5.5 name-based ids). */
const FIRE_NAMESPACE = Buffer.from("7c0e5d2a4b1f4e8a9d3c6b2a1f0e9d8c", "hex");

/**
 * The pg-boss job id of one occurrence of one schedule: a UUID version 5 (RFC 9562 §5.5: SHA-1 of a
 * namespace and a name) of `<schedule id>@<occurrence ISO-8601>`, so every process computes the same id.
 */
export function occurrenceJobId(scheduleId: string, occurrence: Date): string {
  const h = createHash("sha1").update(FIRE_NAMESPACE).update(`${scheduleId}@${occurrence.toISOString()}`).digest();
  h[6] = (h[6]! & 0x0f) | 0x50;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString("hex");
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

/**
 * Loads pg-boss. The only place that imports it (dynamically), so builds and runs that never reach
 * PostgreSQL mode never load it.
 */
export async function loadPgBoss(): Promise<typeof import("pg-boss")> {
  // a side bundle in the binary (side/modules.ts: embedded compressed, checked, loaded from memory)
  const { side } = await import("../side/modules.ts");
  return await side.pgBoss();
}

/**
 * Runs a recipe headless (as scheduler.ts `RunRecipe`; any `RunRecipe` fits). `occurrence` is the
 * ISO-8601 cron occurrence the run fires for, null for a manual fire.
 */
export type BossRunRecipe = (input: RunRecipeInput & { occurrence: string | null }) => Promise<RunResultObject>;

export interface BossSchedulerOptions {
  /** Our tables (`schedules`, `runs`) on the PostgreSQL database. */
  sql: Sql;
  /** `postgres://…` URL of the same database; pg-boss gets its own `Bun.SQL` pool on it (schema `pgboss`). */
  url: string;
  runRecipe: BossRunRecipe;
  /** The clock for catch-up and staleness decisions (default: `new Date()`). */
  now?: () => Date;
  /** Where progress lines go (default: stderr). */
  log?: (line: string) => void;
  /** How often the schedule list is re-read to arm schedules added (or disarm removed) by other processes, ms (default 5000). */
  syncMs?: number;
  /** How often an idle worker polls for jobs when no NOTIFY wakes it, s (default 2, at least 0.5). */
  pollSeconds?: number;
  /** Runs this process works at once (default 4). */
  concurrency?: number;
  /** How long a run may take before pg-boss marks its job failed, s (default 21600 = 6 h); the run itself is not stopped. */
  runTimeoutSeconds?: number;
  /** pg-boss's connection pool size (default 4). */
  poolMax?: number;
  /** The runs' lease length, ms (config `fleet.lease_ttl_seconds` × 1000; default 15,000): a run of a killed process is ended `interrupted` this long after its last renewal (plus a sweep). */
  leaseTtlMs?: number;
  /** This process's worker id on the runs it holds (default `<hostname>:<pid>:<8 hex>`). */
  workerId?: string;
}

/** True when a later occurrence than `occurrence` is already due at `now` (the job is stale). */
function laterOccurrenceDue(cron: string, occurrence: Date, now: Date): boolean {
  const probe = new Cron(cron, { paused: true });
  try {
    const next = probe.nextRun(occurrence);
    return next !== null && next.getTime() <= now.getTime();
  } finally {
    probe.stop();
  }
}

/** Maps a result status to the stored run status. */
function runStatusOf(s: unknown): "completed" | "failed" | "blocked" | "cancelled" {
  return s === "completed" || s === "blocked" || s === "cancelled" ? s : "failed";
}

/** A cron occurrence rounded to whole seconds (croner's resolution), so every process names it alike. */
function wholeSecond(d: Date): Date {
  return new Date(Math.round(d.getTime() / 1000) * 1000);
}

/**
 * The pg-boss schedule driver of one process. `start({ work: true })` enqueues and works fires;
 * `start({ work: false })` (an API-only node) enqueues only.
 */
export class BossScheduler {
  private readonly sql: Sql;
  private readonly opts: BossSchedulerOptions;
  private readonly now: () => Date;
  private readonly log: (line: string) => void;
  private readonly jobs = new Map<string, { cron: string; job: Cron }>();
  private readonly active = new Map<string, { scheduleId: string; controller: AbortController; done: Promise<void> }>();
  private readonly listeners = new Set<(e: SchedulerEvent) => void>();
  private client: InstanceType<typeof Bun.SQL> | null = null;
  private boss: PgBoss | null = null;
  private syncTimer: ReturnType<typeof setInterval> | null = null;
  private started = false;
  private stopped = false;
  /** The leases of the runs this process runs (fleet/run-leases.ts). */
  readonly runLeases: RunLeases;

  constructor(opts: BossSchedulerOptions) {
    this.opts = opts;
    this.sql = opts.sql;
    this.runLeases = new RunLeases(opts.sql, {
      workerId: opts.workerId ?? `${hostname()}:${process.pid}:${randomBytes(4).toString("hex")}`,
      ttlMs: opts.leaseTtlMs ?? 15_000,
    });
    this.now = opts.now ?? (() => new Date());
    this.log = opts.log ?? ((line) => process.stderr.write(`airlock: scheduler: ${line}\n`));
  }

  /**
   * Starts pg-boss (creating its schema on first use), enqueues one catch-up fire per schedule that
   * missed an occurrence, arms every enabled schedule and, with `work`, works fires.
   * @returns the schedule ids a catch-up fire was enqueued for by this call (another process may
   *   have enqueued the same one first: then it is not listed).
   * @throws AirlockError `storage_unavailable` when pg-boss cannot start on the database.
   */
  async start(o: { work: boolean }): Promise<string[]> {
    if (this.started) return [];
    this.started = true;
    const { PgBoss, fromBunSql } = await loadPgBoss();
    this.client = new Bun.SQL(this.opts.url, { max: this.opts.poolMax ?? 4 });
    const boss = new PgBoss({ db: fromBunSql(this.client as never), schedule: false, supervise: o.work, migrate: true, useListenNotify: true });
    boss.on("error", (e) => this.log(`pg-boss: ${e.message}`));
    try {
      await boss.start();
      await boss.createQueue(FIRE_QUEUE, { retryLimit: 0, expireInSeconds: this.opts.runTimeoutSeconds ?? 21_600, notify: true } as never);
    } catch (e) {
      await boss.stop({ graceful: false, close: false }).catch(() => {});
      await this.client.close();
      this.client = null;
      throw new AirlockError("storage_unavailable", `the schedule queue (pg-boss) could not start on the database: ${(e as Error).message}`);
    }
    this.boss = boss;
    const catchUps: string[] = [];
    for (const s of await loadSchedules(this.sql)) {
      if (!s.enabled) continue;
      const latest = this.missedOccurrence(s);
      if (latest && (await this.enqueue(s.id, "catch-up", latest))) {
        this.log(`schedule ${s.id} (${s.name}) missed its fire at or before ${latest.toISOString()}; running it once now (missed fires are not replayed)`);
        catchUps.push(s.id);
      }
      this.arm(s);
    }
    this.syncTimer = setInterval(() => void this.sync().catch((e) => this.log(`schedule sync failed: ${toAirlockError(e).message}`)), this.opts.syncMs ?? 5000);
    if (o.work) {
      // NOTIFY only wakes workers early: the poll stays at `pollSeconds` (pg-boss would relax it to 30 s
      // while NOTIFY is up, and a missed notification would then delay a fire by that much).
      const poll = Math.max(0.5, this.opts.pollSeconds ?? 2);
      await boss.work<FireJob>(
        FIRE_QUEUE,
        { batchSize: 1, localConcurrency: this.opts.concurrency ?? 4, pollingIntervalSeconds: poll, notifyPollingIntervalSeconds: poll } as never,
        async (jobs: Job<FireJob>[]) => {
          for (const job of jobs) {
            try {
              await this.handle(job.data);
            } catch (e) {
              // the job is failed by pg-boss (never retried); say why here
              this.log(`fire job ${job.id} of schedule ${job.data.schedule_id} failed: ${toAirlockError(e).message}`);
              throw e;
            }
          }
        },
      );
    }
    return catchUps;
  }

  /** The latest due occurrence when at least one was missed since the last fire (or creation), else null. */
  private missedOccurrence(s: ScheduleWithRecipe): Date | null {
    const now = this.now();
    const probe = new Cron(s.cron, { paused: true });
    try {
      const first = probe.nextRun(new Date(s.last_fire_at ?? s.created_at));
      if (!first || first.getTime() > now.getTime()) return null;
      let latest = first;
      for (let next = probe.nextRun(latest); next && next.getTime() <= now.getTime(); next = probe.nextRun(latest)) latest = next;
      return latest;
    } finally {
      probe.stop();
    }
  }

  /** Enqueues a fire. @returns true when this call inserted the job (false: the same occurrence was already enqueued). */
  private async enqueue(scheduleId: string, trigger: RunTrigger, occurrence: Date | null): Promise<boolean> {
    const boss = this.boss;
    if (!boss) throw new AirlockError("storage_unavailable", "the schedule queue is not started");
    const data: FireJob = { schedule_id: scheduleId, trigger, occurrence: occurrence ? occurrence.toISOString() : null };
    const id = await boss.send(FIRE_QUEUE, data as never, occurrence ? { id: occurrenceJobId(scheduleId, occurrence) } : {});
    return id !== null;
  }

  private arm(s: ScheduleWithRecipe): void {
    if (this.stopped || !s.enabled) return;
    const have = this.jobs.get(s.id);
    if (have && have.cron === s.cron) return;
    have?.job.stop();
    const job: Cron = new Cron(s.cron, { catch: (e) => this.log(`schedule ${s.id}: ${toAirlockError(e).message}`) }, () => {
      const occurrence = wholeSecond(job.currentRun() ?? this.now());
      void this.enqueue(s.id, "cron", occurrence).catch((e) => this.log(`schedule ${s.id}: enqueue of ${occurrence.toISOString()} failed: ${toAirlockError(e).message}`));
    });
    this.jobs.set(s.id, { cron: s.cron, job });
  }

  /** Re-reads the schedule list: arms new or changed enabled schedules, disarms removed or disabled ones. */
  async sync(): Promise<void> {
    if (this.stopped) return;
    const all = await loadSchedules(this.sql);
    const live = new Set(all.filter((s) => s.enabled).map((s) => s.id));
    for (const [id, j] of this.jobs) {
      if (live.has(id)) continue;
      j.job.stop();
      this.jobs.delete(id);
    }
    for (const s of all) this.arm(s);
  }

  /**
   * Fires a schedule now (`trigger: manual`): claims it here (overlap policy, as `POST /schedules/:id/run`
   * answers), and when a run was started, enqueues it for a worker on any process.
   * @returns the stored run: `running`, or `skipped` when a run of the schedule is going on somewhere.
   * @throws AirlockError `not_found` for an unknown schedule; `storage_unavailable` before `start`.
   */
  async fire(scheduleId: string): Promise<Run> {
    if (!this.boss) throw new AirlockError("storage_unavailable", "the schedule queue is not started");
    // held by this process until queued (a claimer killed before that leaves a lease that lapses)
    const lease = { workerId: this.runLeases.claimerId, expiresAt: this.runLeases.expiry() };
    const claim = await claimFire(this.sql, { scheduleId, trigger: "manual", at: this.now().toISOString(), lease });
    if (!claim) throw notFound(scheduleId);
    switch (claim.status) {
      case "skipped":
        this.emit({ type: "skipped", run: claim.run });
        return claim.run;
      case "started":
        try {
          await this.boss.send(FIRE_QUEUE, {
            schedule_id: scheduleId,
            trigger: "manual",
            occurrence: null,
            run_id: claim.run.id,
            claimed_by: this.runLeases.claimerId,
          } satisfies FireJob as never);
        } catch (e) {
          const err = new AirlockError("storage_unavailable", `the run could not be queued: ${(e as Error).message}`);
          await finishClaimedRun(this.sql, claim.run.id, { status: "failed", result: null, reason: err.message });
          throw err;
        }
        // queued: nobody holds it until a worker takes the job (false: a worker took it already)
        await this.runLeases.handOff(claim.run.id).catch((e: unknown) => this.log(`run ${claim.run.id}: handing its lease to the queue failed (it lapses): ${toAirlockError(e).message}`));
        return claim.run;
      default:
        return assertNever(claim, "fire claim");
    }
  }

  /** `fire` under the name of the schedule port (scheduler/service.ts `SchedulePort`). */
  fireNow(scheduleId: string): Promise<Run> {
    return this.fire(scheduleId);
  }

  /**
   * Validates and stores a schedule; every process arms it within `syncMs` (this one at once).
   * @throws AirlockError `bad_request` (cron) or `recipe_invalid` (recipe text or parameters, naming the key).
   */
  async add(input: NewSchedule): Promise<ScheduleView> {
    const s = await insertScheduleSql(this.sql, checkedSchedule(input));
    if (this.started) this.arm(s);
    return await this.view(s);
  }

  /**
   * Removes a schedule (its runs are kept as history); every process disarms it within `syncMs`. A run
   * of it going on in this process is cancelled; one on another process finishes.
   * @returns false when there is no such schedule.
   */
  async remove(id: string): Promise<boolean> {
    const existed = await deleteScheduleSql(this.sql, id);
    this.jobs.get(id)?.job.stop();
    this.jobs.delete(id);
    for (const a of this.active.values()) if (a.scheduleId === id) a.controller.abort(new AirlockError("cancelled", `schedule ${id} was removed`));
    return existed;
  }

  async list(): Promise<ScheduleView[]> {
    return await Promise.all((await loadSchedules(this.sql)).map((s) => this.view(s)));
  }

  async get(id: string): Promise<ScheduleView | null> {
    const s = await loadSchedule(this.sql, id);
    return s ? await this.view(s) : null;
  }

  private async view(s: ScheduleWithRecipe): Promise<ScheduleView> {
    let next: Date | null = null;
    if (s.enabled) {
      const probe = new Cron(s.cron, { paused: true });
      next = probe.nextRun();
      probe.stop();
    }
    return { ...publicSchedule(s), next_fire_at: next ? next.toISOString() : null, running_run_id: await runningRunId(this.sql, s.id) };
  }

  /**
   * A schedule's runs, newest first (at most `limit`, default 100), also after it was removed.
   * @throws AirlockError `not_found` for a schedule that never existed (or was removed with no runs).
   */
  async runs(scheduleId: string, limit?: number): Promise<Run[]> {
    if (!(await loadSchedule(this.sql, scheduleId)) && !(await hasRemovedRunsSql(this.sql, scheduleId))) throw notFound(scheduleId);
    return await loadRuns(this.sql, scheduleId, limit);
  }

  /** Every run of every schedule, newest first (at most `limit`, default 100). */
  async allRuns(limit?: number): Promise<Run[]> {
    return await loadAllRuns(this.sql, limit);
  }

  /** One run (also of a removed schedule), or null. */
  async run(runId: string): Promise<Run | null> {
    return await loadRun(this.sql, runId);
  }

  /** Works one fire job: drops it when stale, claims it (overlap policy), runs it and stores its result. */
  private async handle(data: FireJob): Promise<void> {
    if (this.stopped) return;
    if (data.run_id) return await this.runClaimed(data);
    const s = await loadSchedule(this.sql, data.schedule_id);
    if (!s) return;
    const now = this.now();
    if (data.occurrence && laterOccurrenceDue(s.cron, new Date(data.occurrence), now)) {
      this.log(`schedule ${s.id}: the fire of ${data.occurrence} is dropped, a later occurrence is already due (missed fires are not replayed)`);
      return;
    }
    const claim = await claimFire(this.sql, {
      scheduleId: s.id,
      trigger: data.trigger,
      at: now.toISOString(),
      requireEnabled: data.trigger !== "manual",
      lease: { workerId: this.runLeases.workerId, expiresAt: this.runLeases.expiry() },
    });
    if (!claim) return;
    switch (claim.status) {
      case "skipped":
        this.emit({ type: "skipped", run: claim.run });
        return;
      case "started":
        return await this.runStarted(claim.schedule, claim.run, data);
      default:
        assertNever(claim, "fire claim");
    }
  }

  /** Runs a manual fire claimed by `fire` (on this or another process), unless it was finished, swept or taken meanwhile. */
  private async runClaimed(data: FireJob): Promise<void> {
    if (!(await this.runLeases.take(data.run_id!, data.claimed_by ?? null))) return;
    const run = await loadRun(this.sql, data.run_id!);
    const s = await loadSchedule(this.sql, data.schedule_id);
    if (!run || run.status !== "running") return;
    if (!s) {
      await finishClaimedRun(this.sql, run.id, { status: "cancelled", result: null, reason: `schedule ${data.schedule_id} was removed before its run started` });
      return;
    }
    await this.runStarted(s, run, data);
  }

  private async runStarted(s: ScheduleWithRecipe, run: Run, data: FireJob): Promise<void> {
    this.emit({ type: "started", run });
    const controller = new AbortController();
    const done = this.execute(s, run, data, controller);
    this.active.set(run.id, { scheduleId: s.id, controller, done });
    await done;
  }

  private async execute(s: ScheduleWithRecipe, run: Run, data: FireJob, controller: AbortController): Promise<void> {
    let sessionId: string | null = null;
    let finished: Run | null;
    // renewed while the run goes on; lost (swept after this process stalled past its TTL): stop the run
    const beat = this.runLeases.heartbeat(run.id, (e) => {
      this.log(`run ${run.id}: ${e.message}`);
      controller.abort(e);
    });
    try {
      const result: RunResultObject = await this.opts.runRecipe({
        schedule: s,
        runId: run.id,
        trigger: data.trigger,
        occurrence: data.occurrence,
        signal: controller.signal,
        onSession: (id) => {
          sessionId = id;
          void setClaimedRunSession(this.sql, run.id, id).catch((e) => this.log(`run ${run.id}: storing its session failed: ${toAirlockError(e).message}`));
        },
      }).finally(() => beat.stop()); // before the result is stored: a renewal after it would read as a lost lease
      finished = await finishClaimedRun(this.sql, run.id, { status: runStatusOf(result.status), result, session_id: result.session_id ?? sessionId });
    } catch (e) {
      const err = toAirlockError(e);
      this.log(`run ${run.id} of schedule ${s.id} failed: ${err.message}`);
      const status = err.code === "cancelled" ? "cancelled" : "failed";
      finished = await finishClaimedRun(this.sql, run.id, {
        status,
        session_id: sessionId,
        result: { session_id: sessionId, status, result: null, tool_calls: 0, refused_calls: [], error: err.toJSON(), duration_ms: Date.now() - Date.parse(run.started_at) },
      }).catch((e2) => {
        this.log(`run ${run.id}: storing its result failed: ${toAirlockError(e2).message}`);
        return null;
      });
    } finally {
      beat.stop();
      this.active.delete(run.id);
    }
    this.emit({ type: "finished", run: finished ?? (await loadRun(this.sql, run.id).catch(() => null)) ?? run });
  }

  /** Subscribes to this process's run events (started, skipped, finished). Returns the unsubscribe function. */
  onEvent(l: (e: SchedulerEvent) => void): () => void {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  }

  private emit(e: SchedulerEvent): void {
    for (const l of [...this.listeners]) {
      try {
        l(e);
      } catch (err) {
        this.log(`event listener failed: ${toAirlockError(err).message}`);
      }
    }
  }

  /** The ids of the runs this process is running now. */
  activeRuns(): string[] {
    return [...this.active.keys()];
  }

  /**
   * Stops arming and working, cancels this process's runs going on, waits until they are stored as
   * finished, stops pg-boss and closes its pool. Idempotent.
   */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.syncTimer) clearInterval(this.syncTimer);
    for (const j of this.jobs.values()) j.job.stop();
    this.jobs.clear();
    const pending = [...this.active.values()];
    for (const a of pending) a.controller.abort(new AirlockError("cancelled", "the server is stopping"));
    await Promise.allSettled(pending.map((a) => a.done));
    if (this.boss) await this.boss.stop({ graceful: true, close: false, timeout: 10_000 }).catch((e) => this.log(`pg-boss stop: ${(e as Error).message}`));
    this.boss = null;
    if (this.client) await this.client.close();
    this.client = null;
  }
}

function notFound(id: string): AirlockError {
  return new AirlockError("not_found", `no schedule ${id}; list schedules with GET /schedules or 'airlock schedule list'`);
}
