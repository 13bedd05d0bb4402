/**
 * @module scheduler/store
 * Repository functions over the `schedules` and `runs` tables (store/db.ts migration 2). Each takes the
 * async executor `Sql` (store/sql.ts) and returns a promise; JSON columns (`params`, `result`) are parsed here so callers see plain values.
 */
import type { Sql } from "../store/sql.ts";
import { newId } from "../ids.ts";
import { currentOwner } from "../store/owner.ts";

/** A stored schedule as the API shows it (without the recipe text). */
export interface Schedule {
  id: string;
  name: string;
  cron: string;
  /** Absolute path the recipe was read from (relative paths inside it resolve against its directory). */
  recipe_path: string;
  /** Parameter values given when the schedule was added. */
  params: Record<string, unknown>;
  enabled: boolean;
  created_at: string;
  /** ISO time of the last fire (run or skip), null before the first. */
  last_fire_at: string | null;
}

/** A stored schedule with the recipe text it runs (snapshotted when added). */
export interface ScheduleWithRecipe extends Schedule {
  recipe_text: string;
}

export type RunStatus = "running" | "completed" | "failed" | "blocked" | "cancelled" | "skipped" | "interrupted";
/** What started a run: the cron clock, `POST /schedules/:id/run`, or the one catch-up after a restart. */
export type RunTrigger = "cron" | "manual" | "catch-up";

/**
 * One fire of a schedule. `result` is the headless result object (SPEC §7) once the run finished. Runs outlive
 * their schedule: after `DELETE /schedules/:id` they keep `schedule_id` and get `schedule_removed: true`.
 */
export interface Run {
  id: string;
  schedule_id: string | null;
  /** True once the run's schedule was removed (the run is kept as history). */
  schedule_removed: boolean;
  session_id: string | null;
  status: RunStatus;
  trigger: RunTrigger;
  started_at: string;
  finished_at: string | null;
  result: Record<string, unknown> | null;
  /** Why a run was skipped or could not start (e.g. `previous run run_… still running`). */
  reason: string | null;
}

type ScheduleRow = Omit<ScheduleWithRecipe, "params" | "enabled"> & { params: string; enabled: number };
type RunRow = Omit<Run, "result" | "schedule_removed"> & { result: string | null; schedule_removed: number };

const nowIso = () => new Date().toISOString();
/** The public columns of a run (the owner columns stay internal). */
const RUN_COLUMNS =
  "id, COALESCE(schedule_id, removed_schedule_id) AS schedule_id, (removed_schedule_id IS NOT NULL) AS schedule_removed, session_id, status, trigger, started_at, finished_at, result, reason";

function toSchedule(r: ScheduleRow): ScheduleWithRecipe {
  return { ...r, params: JSON.parse(r.params) as Record<string, unknown>, enabled: r.enabled === 1 };
}

function withoutRecipe(s: ScheduleWithRecipe): Schedule {
  const { recipe_text: _t, ...rest } = s;
  return rest;
}

function toRun(r: RunRow): Run {
  return { ...r, schedule_removed: r.schedule_removed === 1, result: r.result === null ? null : (JSON.parse(r.result) as Record<string, unknown>) };
}

/** Stores a new schedule and returns it (with a fresh `sch_` id). */
export async function insertSchedule(
  db: Sql,
  s: { name: string; cron: string; recipe_path: string; recipe_text: string; params?: Record<string, unknown>; enabled?: boolean },
): Promise<ScheduleWithRecipe> {
  const id = newId("sch");
  await db.run("INSERT INTO schedules (id, name, cron, recipe_path, recipe_text, params, enabled, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [
    id,
    s.name,
    s.cron,
    s.recipe_path,
    s.recipe_text,
    JSON.stringify(s.params ?? {}),
    s.enabled === false ? 0 : 1,
    nowIso(),
  ]);
  return (await getScheduleWithRecipe(db, id))!;
}

export async function getScheduleWithRecipe(db: Sql, id: string): Promise<ScheduleWithRecipe | null> {
  const r = await db.get<ScheduleRow>("SELECT * FROM schedules WHERE id = ?", [id]);
  return r ? toSchedule(r) : null;
}

/** Every schedule, oldest first. */
export async function listSchedules(db: Sql): Promise<ScheduleWithRecipe[]> {
  return (await db.all<ScheduleRow>("SELECT * FROM schedules ORDER BY created_at, id")).map(toSchedule);
}

/** The API view of a schedule (drops the recipe text). */
export function publicSchedule(s: ScheduleWithRecipe | Schedule): Schedule {
  return "recipe_text" in s ? withoutRecipe(s) : s;
}

/**
 * Deletes a schedule. Its runs are kept as history, marked removed (`removed_schedule_id`; the foreign key
 * `schedule_id` becomes null), in the same transaction, so `GET /schedules/:id/runs`, `GET /runs` and
 * `GET /runs/:id` still show them. Returns false when there was no such schedule.
 */
export async function deleteSchedule(db: Sql, id: string): Promise<boolean> {
  return db.transaction(async (tx) => {
    await tx.run("UPDATE runs SET removed_schedule_id = schedule_id, schedule_id = NULL WHERE schedule_id = ?", [id]);
    return (await tx.run("DELETE FROM schedules WHERE id = ?", [id])).changes > 0;
  });
}

/** Records the time of a fire (ISO string). */
export async function setLastFire(db: Sql, id: string, at: string): Promise<void> {
  await db.run("UPDATE schedules SET last_fire_at = ? WHERE id = ?", [at, id]);
}

/** Stores a run. A `skipped` run is stored finished (`finished_at` = `started_at`). */
export async function insertRun(
  db: Sql,
  r: { schedule_id: string | null; status: "running" | "skipped" | "failed"; trigger: RunTrigger; reason?: string; result?: Record<string, unknown> },
): Promise<Run> {
  const id = newId("run");
  const at = nowIso();
  const owner = currentOwner();
  await db.run("INSERT INTO runs (id, schedule_id, status, trigger, started_at, finished_at, result, reason, owner_pid, owner_start) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", [
    id,
    r.schedule_id,
    r.status,
    r.trigger,
    at,
    r.status === "running" ? null : at,
    r.result ? JSON.stringify(r.result) : null,
    r.reason ?? null,
    owner.pid,
    owner.start,
  ]);
  return (await getRun(db, id))!;
}

/** Links a running run to the session it created. */
export async function setRunSession(db: Sql, id: string, sessionId: string): Promise<void> {
  await db.run("UPDATE runs SET session_id = ? WHERE id = ?", [sessionId, id]);
}

/** Finishes a running run with its result object; no effect on a run already finished. */
export async function finishRun(
  db: Sql,
  id: string,
  f: { status: Exclude<RunStatus, "running" | "skipped">; result: Record<string, unknown> | null; session_id?: string | null; reason?: string | null },
): Promise<void> {
  await db.run(
    "UPDATE runs SET status = ?, result = ?, session_id = COALESCE(?, session_id), reason = COALESCE(?, reason), finished_at = ? WHERE id = ? AND status = 'running'",
    [f.status, f.result ? JSON.stringify(f.result) : null, f.session_id ?? null, f.reason ?? null, nowIso(), id],
  );
}

export async function getRun(db: Sql, id: string): Promise<Run | null> {
  const r = await db.get<RunRow>(`SELECT ${RUN_COLUMNS} FROM runs WHERE id = ?`, [id]);
  return r ? toRun(r) : null;
}

/** A schedule's runs (also after the schedule was removed), newest first (at most `limit`, default 100). */
export async function listRuns(db: Sql, scheduleId: string, limit = 100): Promise<Run[]> {
  return (
    await db.all<RunRow>(`SELECT ${RUN_COLUMNS} FROM runs WHERE schedule_id = ? OR removed_schedule_id = ? ORDER BY started_at DESC, id DESC LIMIT ?`, [
      scheduleId,
      scheduleId,
      limit,
    ])
  ).map(toRun);
}

/** Every run of every schedule, removed ones included, newest first (at most `limit`, default 100). */
export async function listAllRuns(db: Sql, limit = 100): Promise<Run[]> {
  return (await db.all<RunRow>(`SELECT ${RUN_COLUMNS} FROM runs ORDER BY started_at DESC, id DESC LIMIT ?`, [limit])).map(toRun);
}

/** True when runs of a removed schedule `scheduleId` are kept. */
export async function hasRemovedRuns(db: Sql, scheduleId: string): Promise<boolean> {
  return (await db.get("SELECT 1 AS one FROM runs WHERE removed_schedule_id = ? LIMIT 1", [scheduleId])) !== null;
}
