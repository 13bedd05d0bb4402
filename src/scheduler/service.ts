/**
 * @module scheduler/service
 * One `Scheduler` per runtime (the one `airlock serve` process): created and started on first use,
 * stopped (runs going on are cancelled and stored) when the runtime closes.
 */
import type { Database } from "bun:sqlite";
import { Scheduler, type RunRecipe } from "./scheduler.ts";

/** What the scheduler service needs from the runtime. */
export interface SchedulerHost {
  store: { db: Database };
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
  s = new Scheduler({ db: rt.store.db, runRecipe: runner });
  schedulers.set(rt, s);
  const created = s;
  rt.onClose(() => created.stop());
  s.start();
  return s;
}
