/**
 * @module scheduler/run-recipe
 * The scheduler's runner: each fire parses the schedule's stored recipe, applies its stored parameters
 * and runs it headless through `runOnce` (a new headless root session with the recipe's overrides for
 * its tree only; the result object of SPEC §7 with the `blocked` rule of run/result.ts).
 */
import { dirname } from "node:path";
import { runOnce } from "../run/run-once.ts";
import { toAirlockError } from "../errors.ts";
import type { Runtime } from "../runtime.ts";
import { parseRecipe, prepareRecipe } from "./recipe.ts";
import type { RunRecipe } from "./scheduler.ts";

/**
 * The scheduler's runner over a runtime: parses the schedule's stored recipe, applies its stored
 * parameters, and runs it headless. The workspace is the recipe's `workspace`, else the recipe's directory.
 */
export function recipeRunner(rt: Runtime): RunRecipe {
  return async ({ schedule, runId, signal, onSession }) => {
    const started = Date.now();
    try {
      const recipe = parseRecipe(schedule.recipe_text, schedule.recipe_path);
      const prepared = prepareRecipe({ recipe, path: schedule.recipe_path, dir: dirname(schedule.recipe_path), text: schedule.recipe_text }, schedule.params, schedule.recipe_path);
      return await runOnce(rt, {
        headless: true,
        prompt: prepared.prompt,
        overrides: prepared.overrides,
        workspace: prepared.workspace ?? dirname(schedule.recipe_path),
        signal,
        onSession,
        origin: { run_id: runId, schedule_id: schedule.id, schedule_name: schedule.name },
      });
    } catch (e) {
      const err = toAirlockError(e);
      const result = { session_id: null, status: "failed" as const, result: null, tool_calls: 0, refused_calls: [], error: err.toJSON(), duration_ms: Date.now() - started };
      // a run that could not start is a finished (failed) run for notify: too
      rt.notify.runEnded(result, { run_id: runId, schedule_id: schedule.id, schedule_name: schedule.name });
      return result;
    }
  };
}
