/**
 * @module scheduler/service
 * One `Scheduler` per runtime (the one `airlock serve` process): created and started on first use,
 * stopped (runs going on are cancelled and stored) when the runtime closes.
 */
import type { Sql } from "../store/sql.ts";
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
