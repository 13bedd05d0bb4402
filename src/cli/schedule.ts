/**
 * @module cli/schedule
 * `airlock schedule add | list | remove | run`: scheduled headless runs of recipes (SPEC §2, §6).
 */
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { AirlockError } from "../errors.ts";
import type { CommonOptions } from "./context.ts";

/** Options shared by the `schedule` subcommands. */
export interface ScheduleOptions extends CommonOptions {
  /** `--json`: print JSON on stdout. */
  json?: boolean;
}

/** Options of `airlock schedule add`. */
export interface ScheduleAddOptions extends ScheduleOptions {
  /** `--cron EXPR` (required): a cron expression (5 or 6 fields, croner syntax), checked before anything is stored. */
  cron: string;
  /** `--recipe FILE` (required): the recipe to run; it must exist. Stored as an absolute path. */
  recipe: string;
  /** `--name NAME`: a label; default the recipe's `name`. */
  name?: string;
}

/**
 * Checks the `add` flags that can be checked without the store: a valid cron expression and an existing recipe file.
 * @throws AirlockError `usage` naming the flag.
 */
export async function checkScheduleAdd(opts: ScheduleAddOptions): Promise<{ cron: string; recipePath: string }> {
  const { Cron } = await import("croner");
  try {
    new Cron(opts.cron, { paused: true }).stop();
  } catch (e) {
    throw new AirlockError("usage", `--cron ${JSON.stringify(opts.cron)} is not a valid cron expression (${(e as Error).message}); e.g. --cron "0 3 * * *" for 03:00 every day`);
  }
  const recipePath = resolve(opts.recipe);
  if (!existsSync(recipePath)) {
    throw new AirlockError("usage", `--recipe ${opts.recipe}: no such file; give the path of a recipe YAML file`);
  }
  return { cron: opts.cron, recipePath };
}

/**
 * Adds a schedule.
 * TODO(scheduler engineer): validate the recipe (`recipe_invalid` → exit 2), store the schedule, print its id.
 * @returns 0.
 */
export async function scheduleAdd(opts: ScheduleAddOptions): Promise<number> {
  const { resolveContext, notImplemented } = await import("./context.ts");
  await checkScheduleAdd(opts);
  await resolveContext(opts);
  return notImplemented("schedule add");
}

/** Lists schedules: id, name, cron, recipe, next run, last run status. TODO(scheduler engineer). */
export async function scheduleList(opts: ScheduleOptions): Promise<number> {
  const { resolveContext, notImplemented } = await import("./context.ts");
  await resolveContext(opts);
  return notImplemented("schedule list");
}

/** Removes a schedule by id (`sch_…`). TODO(scheduler engineer). */
export async function scheduleRemove(id: string, opts: ScheduleOptions): Promise<number> {
  const { resolveContext, notImplemented } = await import("./context.ts");
  await resolveContext(opts);
  void id;
  return notImplemented("schedule remove");
}

/**
 * Runs a schedule's recipe now, headless, and prints its result object (SPEC §7).
 * TODO(scheduler engineer): exit code as for `airlock run` (0/1/3/130).
 */
export async function scheduleRun(id: string, opts: ScheduleOptions): Promise<number> {
  const { resolveContext, notImplemented } = await import("./context.ts");
  await resolveContext(opts);
  void id;
  return notImplemented("schedule run");
}
