/**
 * @module scheduler/store
 * Repository functions over the `schedules` and `runs` tables (store/db.ts migration 2). Each takes the
 * `Database`; JSON columns (`params`, `result`) are parsed here so callers see plain values.
 */
import type { Database } from "bun:sqlite";
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
export function insertSchedule(
  db: Database,
  s: { name: string; cron: string; recipe_path: string; recipe_text: string; params?: Record<string, unknown>; enabled?: boolean },
): ScheduleWithRecipe {
  const id = newId("sch");
  db.query("INSERT INTO schedules (id, name, cron, recipe_path, recipe_text, params, enabled, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)").run(
    id,
    s.name,
    s.cron,
    s.recipe_path,
    s.recipe_text,
    JSON.stringify(s.params ?? {}),
    s.enabled === false ? 0 : 1,
    nowIso(),
  );
  return getScheduleWithRecipe(db, id)!;
}

export function getScheduleWithRecipe(db: Database, id: string): ScheduleWithRecipe | null {
  const r = db.query<ScheduleRow, [string]>("SELECT * FROM schedules WHERE id = ?").get(id);
  return r ? toSchedule(r) : null;
}

/** Every schedule, oldest first. */
export function listSchedules(db: Database): ScheduleWithRecipe[] {
  return db.query<ScheduleRow, []>("SELECT * FROM schedules ORDER BY created_at, id").all().map(toSchedule);
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
export function deleteSchedule(db: Database, id: string): boolean {
  return db.transaction(() => {
    db.query("UPDATE runs SET removed_schedule_id = schedule_id, schedule_id = NULL WHERE schedule_id = ?").run(id);
    return db.query("DELETE FROM schedules WHERE id = ?").run(id).changes > 0;
  })();
}

/** Records the time of a fire (ISO string). */
export function setLastFire(db: Database, id: string, at: string): void {
  db.query("UPDATE schedules SET last_fire_at = ? WHERE id = ?").run(at, id);
}

/** Stores a run. A `skipped` run is stored finished (`finished_at` = `started_at`). */
export function insertRun(
  db: Database,
  r: { schedule_id: string | null; status: "running" | "skipped" | "failed"; trigger: RunTrigger; reason?: string; result?: Record<string, unknown> },
): Run {
  const id = newId("run");
  const at = nowIso();
  const owner = currentOwner();
  db.query("INSERT INTO runs (id, schedule_id, status, trigger, started_at, finished_at, result, reason, owner_pid, owner_start) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)").run(
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
  );
  return getRun(db, id)!;
}

/** Links a running run to the session it created. */
export function setRunSession(db: Database, id: string, sessionId: string): void {
  db.query("UPDATE runs SET session_id = ? WHERE id = ?").run(sessionId, id);
}

/** Finishes a running run with its result object; no effect on a run already finished. */
export function finishRun(
  db: Database,
  id: string,
  f: { status: Exclude<RunStatus, "running" | "skipped">; result: Record<string, unknown> | null; session_id?: string | null; reason?: string | null },
): void {
  db.query(
    "UPDATE runs SET status = ?, result = ?, session_id = COALESCE(?, session_id), reason = COALESCE(?, reason), finished_at = ? WHERE id = ? AND status = 'running'",
  ).run(f.status, f.result ? JSON.stringify(f.result) : null, f.session_id ?? null, f.reason ?? null, nowIso(), id);
}

export function getRun(db: Database, id: string): Run | null {
  const r = db.query<RunRow, [string]>(`SELECT ${RUN_COLUMNS} FROM runs WHERE id = ?`).get(id);
  return r ? toRun(r) : null;
}

/** A schedule's runs (also after the schedule was removed), newest first (at most `limit`, default 100). */
export function listRuns(db: Database, scheduleId: string, limit = 100): Run[] {
  return db
    .query<RunRow, [string, string, number]>(
      `SELECT ${RUN_COLUMNS} FROM runs WHERE schedule_id = ? OR removed_schedule_id = ? ORDER BY started_at DESC, rowid DESC LIMIT ?`,
    )
    .all(scheduleId, scheduleId, limit)
    .map(toRun);
}

/** Every run of every schedule, removed ones included, newest first (at most `limit`, default 100). */
export function listAllRuns(db: Database, limit = 100): Run[] {
  return db.query<RunRow, [number]>(`SELECT ${RUN_COLUMNS} FROM runs ORDER BY started_at DESC, rowid DESC LIMIT ?`).all(limit).map(toRun);
}

/** True when runs of a removed schedule `scheduleId` are kept. */
export function hasRemovedRuns(db: Database, scheduleId: string): boolean {
  return db.query("SELECT 1 FROM runs WHERE removed_schedule_id = ? LIMIT 1").get(scheduleId) !== null;
}

