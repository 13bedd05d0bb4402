/**
 * @module scheduler/service
 * One `Scheduler` per runtime (the one `airlock serve` process): created and started on first use,
 * stopped (runs going on are cancelled and stored) when the runtime closes. On PostgreSQL storage
 * (several processes on one database) the runtime uses `bossSchedulerFor` instead: the pg-boss driver
 * (scheduler/boss.ts), loaded on first use so the embedded default never loads it.
 */
import type { Sql } from "../store/sql.ts";
import type { BossScheduler } from "./boss.ts";
import { Scheduler, type NewSchedule, type RunRecipe, type ScheduleView } from "./scheduler.ts";
import type { Run } from "./store.ts";

/** What the scheduler service needs from the runtime. */
export interface SchedulerHost {
  store: { sql: Sql };
  /** The data dir (its `airlock.db` is named in storage errors). */
  dataDir: string;
  onClose(fn: () => Promise<void> | void): void;
  /** The PostgreSQL database's URL when the store is on PostgreSQL (then the pg-boss driver is used), else null or absent. */
  databaseUrl?: string | null;
  /** Where the service says a driver failed to start (default stderr). */
  log?: (line: string) => void;
  /** `serve --role`: an `api` node's pg-boss driver enqueues fires only (`work: false`); default `all`. */
  role?: "all" | "api" | "worker";
  /** The runtime's config: `fleet.lease_ttl_seconds` is the lease of the runs the pg-boss driver runs. */
  config?: { fleet?: { lease_ttl_seconds: number } };
}

/**
 * What the schedule routes need from a scheduler: the embedded `Scheduler` (SQLite) and the pg-boss
 * `BossScheduler` (PostgreSQL) both implement it.
 */
export interface SchedulePort {
  /** @throws AirlockError `bad_request` (cron) or `recipe_invalid`. */
  add(input: NewSchedule): Promise<ScheduleView>;
  /** @returns false when there is no such schedule. */
  remove(id: string): Promise<boolean>;
  list(): Promise<ScheduleView[]>;
  get(id: string): Promise<ScheduleView | null>;
  /** A schedule's runs, newest first (`limit` default 100). */
  runs(scheduleId: string, limit?: number): Promise<Run[]>;
  /** Every run, newest first. */
  allRuns(limit?: number): Promise<Run[]>;
  run(runId: string): Promise<Run | null>;
  /**
   * Fires a schedule now (`trigger: manual`) under its overlap policy, without waiting for the run.
   * @returns the stored run: `running`, or `skipped` when a run of the schedule is going on.
   * @throws AirlockError `not_found` for an unknown schedule.
   */
  fireNow(scheduleId: string): Promise<Run>;
}

/**
 * The runtime's schedule port, its driver started at once: on PostgreSQL storage (`databaseUrl` set and
 * the store's dialect `postgres`) the pg-boss driver (`bossSchedulerFor`, so several processes on one
 * database fire each occurrence once), else the embedded `Scheduler` (`schedulerFor`). A pg-boss driver
 * that cannot start is logged; each call then tries again and throws its `storage_unavailable`.
 */
export function schedulePortFor(rt: SchedulerHost): SchedulePort {
  const url = rt.databaseUrl;
  if (rt.store.sql.dialect !== "postgres" || !url) return schedulerFor(rt);
  const ttl = rt.config?.fleet?.lease_ttl_seconds;
  const host: BossSchedulerHost = { sql: rt.store.sql, databaseUrl: url, work: rt.role !== "api", onClose: (fn) => rt.onClose(fn), ...(ttl ? { leaseTtlMs: ttl * 1000 } : {}) };
  // the runtime object itself keys the driver (one per runtime), whichever host view asks
  const driver = (): Promise<BossScheduler> => bossSchedulerFor(host, undefined, rt);
  const log = rt.log ?? ((line: string) => void process.stderr.write(`${line}\n`));
  driver().catch((e: unknown) => log(`airlock: scheduler: could not start the pg-boss driver: ${e instanceof Error ? e.message : String(e)}`));
  return {
    add: async (input) => (await driver()).add(input),
    remove: async (id) => (await driver()).remove(id),
    list: async () => (await driver()).list(),
    get: async (id) => (await driver()).get(id),
    runs: async (id, limit) => (await driver()).runs(id, limit),
    allRuns: async (limit) => (await driver()).allRuns(limit),
    run: async (id) => (await driver()).run(id),
    fireNow: async (id) => (await driver()).fireNow(id),
  };
}

const schedulers = new WeakMap<object, Scheduler>();

/**
 * The runtime's scheduler, created and started on first call. `runRecipe` defaults to a headless run
 * through the runtime (scheduler/run-recipe.ts); tests may inject their own on the first call.
 */
export function schedulerFor(rt: SchedulerHost, runRecipe?: RunRecipe): Scheduler {
  let s = schedulers.get(rt);
  if (s) return s;
  const runner: RunRecipe =
    runRecipe ??
    (async (input) => {
      const { recipeRunner } = await import("./run-recipe.ts");
      return recipeRunner(rt as never)(input);
    });
  s = new Scheduler({ db: rt.store.sql, runRecipe: runner });
  schedulers.set(rt, s);
  const created = s;
  rt.onClose(() => created.stop());
  s.start().catch((e: unknown) => process.stderr.write(`airlock: scheduler: could not start: ${e instanceof Error ? e.message : String(e)}\n`));
  return s;
}

/** What the PostgreSQL-mode scheduler needs from the runtime. */
export interface BossSchedulerHost {
  /** The runtime's executor on the PostgreSQL database (the `schedules` and `runs` tables). */
  sql: Sql;
  /** That database's `postgres://` URL (pg-boss opens its own small pool on it, schema `pgboss`). */
  databaseUrl: string;
  /** False on an API-only process (it enqueues fires and answers the API, but runs nothing). */
  work: boolean;
  /** The runs' lease length, ms (`fleet.lease_ttl_seconds` × 1000; default 15,000). */
  leaseTtlMs?: number;
  onClose(fn: () => Promise<void> | void): void;
}

const bossSchedulers = new WeakMap<object, Promise<BossScheduler>>();

/**
 * The runtime's pg-boss schedule driver, created and started on first call (later calls get the same
 * one); stopped when the runtime closes. `runRecipe` defaults to a headless run through the runtime
 * (`key`, default `rt`: the runtime object, which also keys the one driver).
 * @throws AirlockError `storage_unavailable` when pg-boss cannot start on the database (a later call
 *   tries again).
 */
export function bossSchedulerFor(rt: BossSchedulerHost, runRecipe?: RunRecipe, key: object = rt): Promise<BossScheduler> {
  const have = bossSchedulers.get(key);
  if (have) return have;
  const made = (async () => {
    const { BossScheduler } = await import("./boss.ts");
    const runner: RunRecipe =
      runRecipe ??
      (async (input) => {
        const { recipeRunner } = await import("./run-recipe.ts");
        return recipeRunner(key as never)(input);
      });
    const s = new BossScheduler({ sql: rt.sql, url: rt.databaseUrl, runRecipe: runner, ...(rt.leaseTtlMs ? { leaseTtlMs: rt.leaseTtlMs } : {}) });
    rt.onClose(() => s.stop());
    await s.start({ work: rt.work });
    return s;
  })();
  bossSchedulers.set(key, made);
  made.catch(() => bossSchedulers.delete(key));
  return made;
}
