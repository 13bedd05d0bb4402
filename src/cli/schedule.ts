/**
 * @module cli/schedule
 * `airlock schedule add | list | remove | run | runs`: scheduled headless runs of recipes (SPEC §2, §6).
 * Schedules live in the running `airlock serve`, so these commands talk HTTP to it: base URL from
 * `--url`, else `$AIRLOCK_URL`, else the config's `server.host:port` (default http://127.0.0.1:7420).
 */
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { AirlockError } from "../errors.ts";
import type { ServerClientOptions } from "./server-client.ts";

/** Options shared by the `schedule` subcommands. */
export interface ScheduleOptions extends ServerClientOptions {
  /** `--json`: print JSON on stdout. */
  json?: boolean;
}

/** The hint after a schedule or run the server does not know: the CLI command that lists them. */
const LIST_HINT = "list the schedules with: airlock schedule list";

/** The client of the running server, and a `send` hint naming `LIST_HINT` after a 404. */
async function client(opts: ScheduleOptions) {
  const { connect, notFoundHint } = await import("./server-client.ts");
  return { c: await connect(opts), listHint: notFoundHint(LIST_HINT) };
}

/** Options of `airlock schedule add`. */
export interface ScheduleAddOptions extends ScheduleOptions {
  /** `--cron EXPR` (required): a cron expression (5 or 6 fields, croner syntax), checked before anything is stored. */
  cron: string;
  /** `--recipe FILE` (required): the recipe to run; it must exist. Stored as an absolute path. */
  recipe: string;
  /** `--name NAME`: a label; default the recipe's `name`. */
  name?: string;
  /** `--param KEY=VALUE` (repeatable): recipe parameters stored with the schedule. */
  param?: Record<string, string>;
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
 * Adds a schedule: validates the flags, sends the recipe's path and text (the server validates the recipe
 * and its parameters: `recipe_invalid` → exit 2), prints the new schedule's id (or JSON with `--json`).
 * @returns 0.
 */
export async function scheduleAdd(opts: ScheduleAddOptions): Promise<number> {
  const { writeStdout, writeJson } = await import("./output.ts");
  const { recipePath } = await checkScheduleAdd(opts);
  const { MAX_RECIPE_FILE_BYTES, parseRecipe, recipeReadProblem, resolveParams } = await import("../scheduler/recipe.ts");
  const { readRegularFile } = await import("../config/paths.ts");
  let text: string;
  try {
    // never a blocking open: a FIFO at the recipe's path would hang the command (config/paths.ts)
    text = readRegularFile(recipePath, { maxBytes: MAX_RECIPE_FILE_BYTES }).toString("utf8");
  } catch (e) {
    throw new AirlockError("recipe_invalid", `recipe ${recipePath}: cannot be read (${recipeReadProblem(e)})`);
  }
  resolveParams(parseRecipe(text, opts.recipe), opts.param ?? {}, opts.recipe); // fail fast, locally, with exit 2
  const { c } = await client(opts);
  const body = { cron: opts.cron, recipe_path: recipePath, recipe_text: text, ...(opts.name ? { name: opts.name } : {}), params: opts.param ?? {} };
  const added = await c.send("POST", "/schedules", { ok: 201, body });
  if (opts.json) writeJson(added);
  else writeStdout(`${added.id}\n`);
  return 0;
}

/** Lists schedules: id, name, cron, next fire, recipe; `--json`: `{"schedules": [...]}` (the shape of `actions list --json` and `sessions list --json`). @returns 0. */
export async function scheduleList(opts: ScheduleOptions): Promise<number> {
  const { writeStdout, writeJson, table } = await import("./output.ts");
  const { c } = await client(opts);
  const list = (await c.send("GET", "/schedules")).schedules as Record<string, any>[];
  if (opts.json) {
    writeJson({ schedules: list });
    return 0;
  }
  if (list.length === 0) {
    writeStdout("no schedules; add one with: airlock schedule add --cron EXPR --recipe FILE\n");
    return 0;
  }
  writeStdout(table(["ID", "NAME", "CRON", "NEXT", "RUNNING", "RECIPE"], list.map((s) => [s.id, s.name, s.cron, s.next_fire_at ?? "-", s.running_run_id ?? "-", s.recipe_path])));
  return 0;
}

/** Removes a schedule by id (`sch_…`); its run history stays readable. @returns 0. */
export async function scheduleRemove(id: string, opts: ScheduleOptions): Promise<number> {
  const { writeStdout, writeJson } = await import("./output.ts");
  const { c, listHint } = await client(opts);
  const removed = await c.send("DELETE", `/schedules/${encodeURIComponent(id)}`, { hint: listHint });
  if (opts.json) writeJson(removed);
  else writeStdout(`removed ${id}\n`);
  return 0;
}

/** Options of `airlock schedule runs`. */
export interface ScheduleRunsOptions extends ScheduleOptions {
  /** `--limit N`: at most N runs, newest first (1–1000, default 100). */
  limit?: number;
}

/**
 * Lists runs, newest first: one schedule's (`id` given; also after it was removed) or every schedule's.
 * Text: a table of RUN, SCHEDULE (`(removed)` after a removed one), STATUS, REFUSED (how many calls were
 * refused: `refused_calls`'s length, `-` while the run goes on), TRIGGER, STARTED, FINISHED, SESSION; `--json`: `{"runs": [...]}`, the run objects as `GET /runs/:id` shows them.
 * @returns 0. @throws AirlockError `not_found` (exit 1) for a schedule that never had runs or never existed.
 */
export async function scheduleRuns(id: string | undefined, opts: ScheduleRunsOptions): Promise<number> {
  const { writeStdout, writeJson, table } = await import("./output.ts");
  const { c, listHint } = await client(opts);
  const query = opts.limit !== undefined ? `?limit=${opts.limit}` : "";
  const list = (await c.send("GET", id ? `/schedules/${encodeURIComponent(id)}/runs${query}` : `/runs${query}`, { hint: listHint })).runs as Record<string, any>[];
  if (opts.json) {
    writeJson({ runs: list });
    return 0;
  }
  if (list.length === 0) {
    writeStdout(id ? `no runs of ${id} yet; run it now with: airlock schedule run ${id}\n` : "no runs yet; list the schedules with: airlock schedule list\n");
    return 0;
  }
  writeStdout(
    table(
      ["RUN", "SCHEDULE", "STATUS", "REFUSED", "TRIGGER", "STARTED", "FINISHED", "SESSION"],
      list.map((run) => [
      run.run_id,
      `${run.schedule_id ?? "-"}${run.schedule_removed ? " (removed)" : ""}`,
      run.status,
      // the refused calls of a finished run (`completed` can hide a run whose every call was refused); `-` while it runs
      run.status === "running" ? "-" : Array.isArray(run.refused_calls) ? run.refused_calls.length : "-",
      run.trigger,
      run.started_at,
      run.finished_at ?? "-",
      run.session_id ?? "-",
      ]),
    ),
  );
  return 0;
}

/** How often `schedule run` asks the server whether the run finished, ms. */
const POLL_MS = 200;

/**
 * Runs a schedule's recipe now, headless, waits for it and prints its result object (SPEC §7) as one
 * JSON value on stdout. Exit code as for `airlock run`: 0 completed, 1 failed, 3 blocked, 130 cancelled;
 * 1 (`airlock: conflict: …` on stderr, no result object) when the fire was skipped because the previous run is still going.
 */
export async function scheduleRun(id: string, opts: ScheduleOptions): Promise<number> {
  const { writeJsonLine, writeStderr } = await import("./output.ts");
  const { exitCodeForStatus } = await import("../run/result.ts");
  const { c, listHint } = await client(opts);
  // a fire skipped because the previous run is still going answers 409 conflict: an error (exit 1) like any other
  let run = await c.send("POST", `/schedules/${encodeURIComponent(id)}/run`, { ok: 202, hint: listHint });
  const runId = run.run_id as string;
  writeStderr(`airlock: run ${runId} started (session ${run.session_id ?? "pending"})\n`);
  while (run.status === "running") {
    await Bun.sleep(POLL_MS);
    run = await c.send("GET", `/runs/${runId}`);
  }
  writeJsonLine(run);
  if (run.status === "interrupted" || run.status === "skipped") return 1;
  return exitCodeForStatus(run.status);
}
