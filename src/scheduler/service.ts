/**
 * @module scheduler/service
 * One `Scheduler` per runtime (the one `airlock serve` process): created and started on first use,
 * stopped (runs going on are cancelled and stored) when the runtime closes. On PostgreSQL storage
 * (several processes on one database) the runtime uses `bossSchedulerFor` instead: the pg-boss driver
 * (scheduler/boss.ts), loaded on first use so the embedded default never loads it.
 */
import type { Sql } from "../store/sql.ts";
import type { BossScheduler } from "./boss.ts";
import { Scheduler, type RunRecipe } from "./scheduler.ts";

/** What the scheduler service needs from the runtime. */
export interface SchedulerHost {
  store: { sql: Sql };
  /** The data dir (its `airlock.db` is named in storage errors). */
  dataDir: string;
  onClose(fn: () => Promise<void> | void): void;
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
  onClose(fn: () => Promise<void> | void): void;
}

const bossSchedulers = new WeakMap<object, Promise<BossScheduler>>();

/**
 * The runtime's pg-boss schedule driver, created and started on first call (later calls get the same
 * one); stopped when the runtime closes. `runRecipe` defaults to a headless run through the runtime.
 * @throws AirlockError `storage_unavailable` when pg-boss cannot start on the database (a later call
 *   tries again).
 */
export function bossSchedulerFor(rt: BossSchedulerHost, runRecipe?: RunRecipe): Promise<BossScheduler> {
  const have = bossSchedulers.get(rt);
  if (have) return have;
  const made = (async () => {
    const { BossScheduler } = await import("./boss.ts");
    const runner: RunRecipe =
      runRecipe ??
      (async (input) => {
        const { recipeRunner } = await import("./run-recipe.ts");
        return recipeRunner(rt as never)(input);
      });
    const s = new BossScheduler({ sql: rt.sql, url: rt.databaseUrl, runRecipe: runner });
    rt.onClose(() => s.stop());
    await s.start({ work: rt.work });
    return s;
  })();
  bossSchedulers.set(rt, made);
  made.catch(() => bossSchedulers.delete(rt));
  return made;
}
