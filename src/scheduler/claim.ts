/**
 * @module scheduler/claim
 * The fire of a schedule as one transaction over the storage interface (`Sql`, store/sql.ts), so that
 * several workers (processes or machines) sharing one database apply the overlap policy exactly:
 * two workers can never both start a run of one schedule while another of its runs is `running`.
 *
 * How: the transaction first writes the schedule's row (`last_fire_at`). On PostgreSQL that takes the
 * row's lock, so a second claimer of the same schedule waits until the first commits, and its next
 * statement (READ COMMITTED: a fresh snapshot per statement) sees the first one's `running` run. On
 * SQLite the transaction is `BEGIN IMMEDIATE`, which serializes all writers. Then the `runs` table is
 * read for a `running` run of the schedule and the new run is inserted as `running` or `skipped`.
 *
 * The statements are in the SQL subset both dialects accept (store/sql.ts): `?` placeholders, ISO-8601
 * text times, 0/1 integers for booleans, JSON as text.
 */
import { newId } from "../ids.ts";
import { currentOwner } from "../store/owner.ts";
import type { Sql } from "../store/sql.ts";
import type { Run, RunStatus, RunTrigger, ScheduleWithRecipe } from "./store.ts";

/** The outcome of `claimFire`. */
export type FireClaim =
  /** A `running` run was stored: the caller must run it and finish it (`finishClaimedRun`). */
  | { status: "started"; run: Run; schedule: ScheduleWithRecipe }
  /** The schedule's previous run `busy_run_id` is still going: a finished `skipped` run was stored. */
  | { status: "skipped"; run: Run; schedule: ScheduleWithRecipe; busy_run_id: string };

type ScheduleRow = Omit<ScheduleWithRecipe, "params" | "enabled"> & { params: string; enabled: number | boolean };
type RunRow = Omit<Run, "result" | "schedule_removed"> & { result: string | null; schedule_removed: number | boolean };

/** The public columns of a run; `schedule_removed` as 0/1 on both dialects. */
const RUN_COLUMNS =
  "id, COALESCE(schedule_id, removed_schedule_id) AS schedule_id, CASE WHEN removed_schedule_id IS NULL THEN 0 ELSE 1 END AS schedule_removed, session_id, status, trigger, started_at, finished_at, result, reason";

function toSchedule(r: ScheduleRow): ScheduleWithRecipe {
  return { ...r, params: JSON.parse(r.params) as Record<string, unknown>, enabled: r.enabled === 1 || r.enabled === true };
}

function toRun(r: RunRow): Run {
  return {
    ...r,
    schedule_removed: r.schedule_removed === 1 || r.schedule_removed === true,
    result: r.result === null ? null : (JSON.parse(r.result) as Record<string, unknown>),
  };
}

/** One schedule with its recipe text, or null. */
export async function loadSchedule(sql: Sql, id: string): Promise<ScheduleWithRecipe | null> {
  const r = await sql.get<ScheduleRow>("SELECT * FROM schedules WHERE id = ?", [id]);
  return r ? toSchedule(r) : null;
}

/** Every schedule, oldest first. */
export async function loadSchedules(sql: Sql): Promise<ScheduleWithRecipe[]> {
  return (await sql.all<ScheduleRow>("SELECT * FROM schedules ORDER BY created_at, id")).map(toSchedule);
}

/** One run (also of a removed schedule), or null. */
export async function loadRun(sql: Sql, id: string): Promise<Run | null> {
  const r = await sql.get<RunRow>(`SELECT ${RUN_COLUMNS} FROM runs WHERE id = ?`, [id]);
  return r ? toRun(r) : null;
}

/** A schedule's runs, newest first (at most `limit`). */
export async function loadRuns(sql: Sql, scheduleId: string, limit = 100): Promise<Run[]> {
  const rows = await sql.all<RunRow>(
    `SELECT ${RUN_COLUMNS} FROM runs WHERE schedule_id = ? OR removed_schedule_id = ? ORDER BY started_at DESC, id DESC LIMIT ?`,
    [scheduleId, scheduleId, limit],
  );
  return rows.map(toRun);
}

/**
 * Claims one fire of a schedule: in one transaction, records the fire time on the schedule, applies the
 * overlap policy (a fire while a run of the same schedule is `running`, on any worker, is stored as a
 * finished `skipped` run naming the busy run) and stores the new run.
 * @param f.at ISO-8601 time of the fire (stored as `last_fire_at` and the run's `started_at`).
 * @param f.requireEnabled when true (cron and catch-up fires), a disabled schedule is not fired.
 * @param f.lease the run's lease (fleet/run-leases.ts: holder and expiry in ms since the Unix epoch),
 *   stored with a started run in the same transaction, so a claimer killed at once leaves a run the
 *   sweeper ends; without it the run is stored unheld (queued).
 * @returns the claim, or null when the schedule does not exist (removed meanwhile) or is disabled and
 *   `requireEnabled` was set; then nothing was written.
 * @throws the storage error as-is (the transaction is rolled back: nothing was written).
 */
export async function claimFire(
  sql: Sql,
  f: { scheduleId: string; trigger: RunTrigger; at: string; requireEnabled?: boolean; lease?: { workerId: string; expiresAt: number } },
): Promise<FireClaim | null> {
  return await sql.transaction(async (tx) => {
    const touched = await tx.run(`UPDATE schedules SET last_fire_at = ? WHERE id = ?${f.requireEnabled ? " AND enabled = 1" : ""}`, [f.at, f.scheduleId]);
    if (touched.changes === 0) return null;
    const schedule = (await loadSchedule(tx, f.scheduleId))!;
    const busy = await tx.get<{ id: string }>("SELECT id FROM runs WHERE schedule_id = ? AND status = 'running' ORDER BY started_at LIMIT 1", [f.scheduleId]);
    const id = newId("run");
    const owner = currentOwner();
    const status: RunStatus = busy ? "skipped" : "running";
    const reason = busy ? `previous run ${busy.id} of schedule ${f.scheduleId} is still running` : null;
    const lease = busy ? undefined : f.lease;
    await tx.run(
      "INSERT INTO runs (id, schedule_id, status, trigger, started_at, finished_at, result, reason, owner_pid, owner_start, worker_id, lease_expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      [id, f.scheduleId, status, f.trigger, f.at, busy ? f.at : null, null, reason, owner.pid, owner.start, lease?.workerId ?? null, lease?.expiresAt ?? null],
    );
    const run = (await loadRun(tx, id))!;
    return busy ? { status: "skipped", run, schedule, busy_run_id: busy.id } : { status: "started", run, schedule };
  });
}

/** Links a running run to the session it created. */
export async function setClaimedRunSession(sql: Sql, runId: string, sessionId: string): Promise<void> {
  await sql.run("UPDATE runs SET session_id = ? WHERE id = ?", [sessionId, runId]);
}

/**
 * Finishes a running run with its result object (the headless result, SPEC §7); no effect on a run
 * already finished (e.g. marked `interrupted` by another node).
 * @returns the run as stored afterwards, or null when it does not exist.
 */
export async function finishClaimedRun(
  sql: Sql,
  runId: string,
  f: { status: Exclude<RunStatus, "running" | "skipped">; result: Record<string, unknown> | null; session_id?: string | null; reason?: string | null },
): Promise<Run | null> {
  await sql.run(
    "UPDATE runs SET status = ?, result = ?, session_id = COALESCE(?, session_id), reason = COALESCE(?, reason), finished_at = ? WHERE id = ? AND status = 'running'",
    [f.status, f.result ? JSON.stringify(f.result) : null, f.session_id ?? null, f.reason ?? null, new Date().toISOString(), runId],
  );
  return await loadRun(sql, runId);
}

/** Every run of every schedule (removed ones included), newest first (at most `limit`). */
export async function loadAllRuns(sql: Sql, limit = 100): Promise<Run[]> {
  return (await sql.all<RunRow>(`SELECT ${RUN_COLUMNS} FROM runs ORDER BY started_at DESC, id DESC LIMIT ?`, [limit])).map(toRun);
}

/** True when runs of a removed schedule `scheduleId` are kept. */
export async function hasRemovedRunsSql(sql: Sql, scheduleId: string): Promise<boolean> {
  return (await sql.get("SELECT 1 AS one FROM runs WHERE removed_schedule_id = ? LIMIT 1", [scheduleId])) !== null;
}

/** The id of the schedule's run that is `running` now (on any process), or null. */
export async function runningRunId(sql: Sql, scheduleId: string): Promise<string | null> {
  return (await sql.get<{ id: string }>("SELECT id FROM runs WHERE schedule_id = ? AND status = 'running' ORDER BY started_at LIMIT 1", [scheduleId]))?.id ?? null;
}

/** Stores a new schedule (validated by the caller) with a fresh `sch_` id and returns it. */
export async function insertScheduleSql(
  sql: Sql,
  s: { name: string; cron: string; recipe_path: string; recipe_text: string; params: Record<string, unknown> },
): Promise<ScheduleWithRecipe> {
  const id = newId("sch");
  await sql.run("INSERT INTO schedules (id, name, cron, recipe_path, recipe_text, params, enabled, created_at) VALUES (?, ?, ?, ?, ?, ?, 1, ?)", [
    id,
    s.name,
    s.cron,
    s.recipe_path,
    s.recipe_text,
    JSON.stringify(s.params),
    new Date().toISOString(),
  ]);
  return (await loadSchedule(sql, id))!;
}

/**
 * Deletes a schedule; its runs are kept, marked removed (`removed_schedule_id`), in the same transaction.
 * @returns false when there was no such schedule.
 */
export async function deleteScheduleSql(sql: Sql, id: string): Promise<boolean> {
  return await sql.transaction(async (tx) => {
    await tx.run("UPDATE runs SET removed_schedule_id = schedule_id, schedule_id = NULL WHERE schedule_id = ?", [id]);
    return (await tx.run("DELETE FROM schedules WHERE id = ?", [id])).changes > 0;
  });
}
