/**
 * @module scheduler/scheduler
 * Cron-driven headless runs of recipes inside `airlock serve`. Schedules live in SQLite; each has a
 * croner job; each fire starts one run through an injected `runRecipe` (a new headless session). A fire
 * while the same schedule's previous run is still going is recorded as `skipped`. After a restart,
 * missed fires are not replayed: at most one `catch-up` run per schedule (docs/recipes.md).
 */
import type { Sql } from "../store/sql.ts";
import { basename } from "node:path";
import { Cron } from "croner";
import { AirlockError, toAirlockError } from "../errors.ts";
import { parseRecipe, resolveParams } from "./recipe.ts";
import {
  deleteSchedule,
  finishRun,
  getRun,
  getScheduleWithRecipe,
  insertRun,
  insertSchedule,
  listRuns,
  listAllRuns,
  hasRemovedRuns,
  listSchedules,
  publicSchedule,
  setLastFire,
  setRunSession,
  type Run,
  type RunTrigger,
  type Schedule,
  type ScheduleWithRecipe,
} from "./store.ts";

/** The statuses a finished headless run reports (SPEC §7). */
export type ResultStatus = "completed" | "failed" | "blocked" | "cancelled";

/** The headless result object (SPEC §7) as far as the scheduler needs it; other fields are stored as given. */
export interface RunResultObject {
  session_id: string | null;
  status: ResultStatus;
  [key: string]: unknown;
}

/** What one run of a schedule gets. */
export interface RunRecipeInput {
  schedule: ScheduleWithRecipe;
  runId: string;
  trigger: RunTrigger;
  /** Aborted when the scheduler stops (server shutdown) or the schedule is removed. */
  signal: AbortSignal;
  /** Call once the run's root session exists, so `GET /runs/:id` shows it while the run goes on. */
  onSession(sessionId: string): void;
}

/** Runs a recipe headless and resolves with its result object. Expected failures are results; a throw is recorded as `failed`. */
export type RunRecipe = (input: RunRecipeInput) => Promise<RunResultObject>;

export type SchedulerEvent =
  | { type: "started"; run: Run }
  | { type: "skipped"; run: Run }
  | { type: "finished"; run: Run };

export interface SchedulerOptions {
  db: Sql;
  runRecipe: RunRecipe;
  /** The clock used for the catch-up decision (default: `new Date()`). */
  now?: () => Date;
  /** Where progress lines go (default: stderr). */
  log?: (line: string) => void;
}

/** A schedule as `GET /schedules` shows it. */
export interface ScheduleView extends Schedule {
  /** ISO time of the next cron fire, null when the expression never fires again or the schedule is disabled. */
  next_fire_at: string | null;
  /** The run going on now, if any. */
  running_run_id: string | null;
}

/** Input of `Scheduler.add`. */
export interface NewSchedule {
  cron: string;
  /** Absolute path of the recipe (used for messages and to resolve relative paths inside it). */
  recipe_path: string;
  /** The recipe YAML; it is validated now and stored, so later edits of the file do not change the schedule. */
  recipe_text: string;
  name?: string;
  params?: Record<string, unknown>;
}

interface Active {
  runId: string;
  controller: AbortController;
  done: Promise<Run>;
}

/**
 * Validates a cron expression (5 fields, or 6 with seconds first; croner syntax).
 * @throws AirlockError `bad_request` saying what is wrong, with an example.
 */
export function checkCron(expr: string): void {
  try {
    new Cron(expr, { paused: true }).stop();
  } catch (e) {
    throw new AirlockError(
      "bad_request",
      `cron ${JSON.stringify(expr)} is not a valid cron expression (${(e as Error).message}); e.g. "0 3 * * *" (03:00 daily) or "*/10 * * * * *" (every 10 s)`,
    );
  }
}

/** Maps a result status to the stored run status. */
function runStatusOf(s: unknown): "completed" | "failed" | "blocked" | "cancelled" {
  return s === "completed" || s === "blocked" || s === "cancelled" ? s : "failed";
}

export class Scheduler {
  private readonly db: Sql;
  private readonly runRecipe: RunRecipe;
  private readonly now: () => Date;
  private readonly log: (line: string) => void;
  private readonly jobs = new Map<string, Cron>();
  private readonly active = new Map<string, Active>();
  private readonly listeners = new Set<(e: SchedulerEvent) => void>();
  private started = false;
  private stopped = false;

  constructor(opts: SchedulerOptions) {
    this.db = opts.db;
    this.runRecipe = opts.runRecipe;
    this.now = opts.now ?? (() => new Date());
    this.log = opts.log ?? ((line) => process.stderr.write(`airlock: scheduler: ${line}\n`));
  }

  /**
   * Arms every enabled schedule (runs left `running` by a previous process were marked `interrupted` when the
   * runtime opened the store: Store.markInterruptedTurns). A schedule
   * that missed at least one fire while the server was down gets exactly one `catch-up` run now.
   * @returns the catch-up runs started.
   */
  async start(): Promise<Run[]> {
    if (this.started) return [];
    this.started = true;
    const catchUps: Run[] = [];
    for (const s of await listSchedules(this.db)) {
      if (!s.enabled) continue;
      const missed = this.missedFire(s);
      this.arm(s);
      if (missed) {
        this.log(`schedule ${s.id} (${s.name}) missed its fire at ${missed.toISOString()}; running it once now (missed fires are not replayed)`);
        catchUps.push((await this.fire(s.id, "catch-up")).run);
      }
    }
    return catchUps;
  }

  /** The first fire after the schedule's last fire (or creation) that is already past, if any. */
  private missedFire(s: Schedule): Date | null {
    const since = new Date(s.last_fire_at ?? s.created_at);
    const job = new Cron(s.cron, { paused: true });
    try {
      const next = job.nextRun(since);
      return next && next.getTime() <= this.now().getTime() ? next : null;
    } finally {
      job.stop();
    }
  }

  private arm(s: Schedule): void {
    if (this.stopped || this.jobs.has(s.id)) return;
    const job = new Cron(s.cron, { catch: (e) => this.log(`schedule ${s.id}: ${toAirlockError(e).message}`) }, () => {
      this.fire(s.id, "cron").catch((e: unknown) => this.log(`schedule ${s.id}: ${toAirlockError(e).message}`));
    });
    this.jobs.set(s.id, job);
  }

  /**
   * Validates and stores a schedule, and arms it when the scheduler is started.
   * @throws AirlockError `bad_request` (cron) or `recipe_invalid` (recipe text or parameters, naming the key).
   */
  async add(input: NewSchedule): Promise<ScheduleView> {
    const s = await insertSchedule(this.db, checkedSchedule(input));
    if (this.started) this.arm(s);
    return this.view(s);
  }

  /**
   * Removes a schedule: its cron job stops, a run going on is cancelled, its run history is kept.
   * @returns false when there is no such schedule.
   */
  async remove(id: string): Promise<boolean> {
    const existed = await deleteSchedule(this.db, id);
    this.jobs.get(id)?.stop();
    this.jobs.delete(id);
    this.active.get(id)?.controller.abort(new AirlockError("cancelled", `schedule ${id} was removed`));
    return existed;
  }

  async list(): Promise<ScheduleView[]> {
    return (await listSchedules(this.db)).map((s) => this.view(s));
  }

  async get(id: string): Promise<ScheduleView | null> {
    const s = await getScheduleWithRecipe(this.db, id);
    return s ? this.view(s) : null;
  }

  private view(s: ScheduleWithRecipe): ScheduleView {
    const job = this.jobs.get(s.id);
    let next: Date | null = null;
    if (s.enabled) {
      if (job) next = job.nextRun();
      else {
        const probe = new Cron(s.cron, { paused: true });
        next = probe.nextRun();
        probe.stop();
      }
    }
    return { ...publicSchedule(s), next_fire_at: next ? next.toISOString() : null, running_run_id: this.active.get(s.id)?.runId ?? null };
  }

  /**
   * A schedule's runs, newest first (at most `limit`, default 100), also after the schedule was removed
   * (then each has `schedule_removed: true`).
   * @throws AirlockError `not_found` for a schedule that never existed (or was removed with no runs).
   */
  async runs(scheduleId: string, limit?: number): Promise<Run[]> {
    if (!(await getScheduleWithRecipe(this.db, scheduleId)) && !(await hasRemovedRuns(this.db, scheduleId))) throw notFound(scheduleId);
    return listRuns(this.db, scheduleId, limit);
  }

  /** Every run of every schedule (removed schedules included), newest first (at most `limit`, default 100). */
  async allRuns(limit?: number): Promise<Run[]> {
    return listAllRuns(this.db, limit);
  }

  /** One run (also of a removed schedule), or null. */
  async run(runId: string): Promise<Run | null> {
    return getRun(this.db, runId);
  }

  /**
   * Fires a schedule now. When its previous run is still going, the fire is stored as a `skipped` run and
   * `done` resolves with it at once. Otherwise a `running` run is stored and `done` resolves when it finished.
   * @throws AirlockError `not_found` for an unknown schedule.
   */
  async fire(scheduleId: string, trigger: RunTrigger): Promise<{ run: Run; done: Promise<Run> }> {
    const s = await getScheduleWithRecipe(this.db, scheduleId);
    if (!s) throw notFound(scheduleId);
    await setLastFire(this.db, s.id, this.now().toISOString());
    const busy = this.active.get(s.id);
    if (busy || this.stopped) {
      const reason = busy ? `previous run ${busy.runId} of schedule ${s.id} is still running` : "the scheduler is stopping";
      const run = await insertRun(this.db, { schedule_id: s.id, status: "skipped", trigger, reason });
      this.emit({ type: "skipped", run });
      return { run, done: Promise.resolve(run) };
    }
    const run = await insertRun(this.db, { schedule_id: s.id, status: "running", trigger });
    const controller = new AbortController();
    const done = this.execute(s, run, trigger, controller);
    this.active.set(s.id, { runId: run.id, controller, done });
    this.emit({ type: "started", run });
    return { run, done };
  }

  private async execute(s: ScheduleWithRecipe, run: Run, trigger: RunTrigger, controller: AbortController): Promise<Run> {
    let sessionId: string | null = null;
    try {
      const result = await this.runRecipe({
        schedule: s,
        runId: run.id,
        trigger,
        signal: controller.signal,
        onSession: (id) => {
          sessionId = id;
          setRunSession(this.db, run.id, id).catch((e: unknown) => this.log(`run ${run.id}: its session could not be stored: ${toAirlockError(e).message}`));
        },
      });
      await finishRun(this.db, run.id, { status: runStatusOf(result.status), result, session_id: result.session_id ?? sessionId });
    } catch (e) {
      const err = toAirlockError(e);
      this.log(`run ${run.id} of schedule ${s.id} failed: ${err.message}`);
      const status = err.code === "cancelled" ? "cancelled" : "failed";
      await finishRun(this.db, run.id, {
        status,
        session_id: sessionId,
        result: { session_id: sessionId, status, result: null, tool_calls: 0, refused_calls: [], error: err.toJSON(), duration_ms: Date.now() - Date.parse(run.started_at) },
      });
    } finally {
      if (this.active.get(s.id)?.runId === run.id) this.active.delete(s.id);
    }
    const finished = (await getRun(this.db, run.id))!;
    this.emit({ type: "finished", run: finished });
    return finished;
  }

  /**
   * Fires a schedule now (`trigger: manual`) without waiting for the run (scheduler/service.ts `SchedulePort`).
   * @returns the stored run: `running`, or `skipped` when one is going on. @throws AirlockError `not_found`.
   */
  async fireNow(scheduleId: string): Promise<Run> {
    return (await this.fire(scheduleId, "manual")).run;
  }

  /** Subscribes to run events (started, skipped, finished). Returns the unsubscribe function. */
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

  /** Stops every cron job, cancels the runs going on and waits until they are stored as finished. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const job of this.jobs.values()) job.stop();
    this.jobs.clear();
    const pending = [...this.active.values()];
    for (const a of pending) a.controller.abort(new AirlockError("cancelled", "the server is stopping"));
    await Promise.allSettled(pending.map((a) => a.done));
  }
}

function notFound(id: string): AirlockError {
  return new AirlockError("not_found", `no schedule ${id}; list schedules with GET /schedules or 'airlock schedule list'`);
}

/**
 * A new schedule's stored fields once its cron, recipe and parameters are checked: the name defaults to the
 * recipe's, then to the recipe file's base name. Shared by the embedded scheduler and the pg-boss driver.
 * @throws AirlockError `bad_request` (cron) or `recipe_invalid` (recipe text or parameters, naming the key).
 */
export function checkedSchedule(input: NewSchedule): { name: string; cron: string; recipe_path: string; recipe_text: string; params: Record<string, unknown> } {
  checkCron(input.cron);
  const recipe = parseRecipe(input.recipe_text, input.recipe_path);
  const params = input.params ?? {};
  resolveParams(recipe, params, input.recipe_path);
  return {
    name: input.name ?? recipe.name ?? basename(input.recipe_path).replace(/\.ya?ml$/i, ""),
    cron: input.cron,
    recipe_path: input.recipe_path,
    recipe_text: input.recipe_text,
    params,
  };
}
