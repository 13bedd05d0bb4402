import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sqliteSql } from "../../store/sql-sqlite.ts";
import { openDatabase } from "../../store/db.ts";
import { Scheduler, type RunResultObject } from "../../scheduler/scheduler.ts";
import { schedulesRoutes } from "./schedules.ts";
import { bossSchedulerFor, schedulePortFor } from "../../scheduler/service.ts";
import { pgSql } from "../../store/sql-pg.ts";
import { migrateSql } from "../../store/migrate.ts";
import { PG_MIGRATIONS } from "../../store/migrations-pg.ts";
import { pgAvailable, startPgCluster, type PgCluster } from "../../../test/pg-cluster.ts";

const RECIPE = `name: nightly\ninstructions: "check {{ project }}"\nparameters: { project: { type: string }, count: { type: integer, default: 1 } }\n`;

let cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.reverse()) await c();
  cleanups = [];
});

function deferred<T>() {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** A real HTTP server on port 0 over the schedule routes, with an injected runner. */
async function serve(runner: () => Promise<RunResultObject>) {
  const db = sqliteSql(openDatabase(":memory:"));
  const closers: (() => Promise<void> | void)[] = [];
  const host = { store: { sql: db }, dataDir: "/nonexistent", onClose: (fn: () => Promise<void> | void) => closers.push(fn) };
  const scheduler = new Scheduler({ db, runRecipe: runner, log: () => {} });
  await scheduler.start();
  const app = schedulesRoutes(host, scheduler);
  const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: app.fetch });
  cleanups.push(async () => {
    await server.stop(true);
    await scheduler.stop();
    db.close();
  });
  const base = `http://127.0.0.1:${server.port}`;
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(base + path, { method, headers: { "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as any };
  };
  return { call, scheduler };
}

const done = (answer: string): RunResultObject => ({ session_id: "ses_1", status: "completed", result: answer, tool_calls: 2, refused_calls: [], error: null, duration_ms: 5 });

describe("schedulesRoutes", () => {
  test("POST validates the body, the cron and the recipe parameters, naming what was wrong", async () => {
    const { call } = await serve(async () => done("x"));
    const missing = await call("POST", "/schedules", { recipe_path: "/r.yaml" });
    expect(missing.status).toBe(400);
    expect(missing.body).toMatchObject({ error: "bad_request" });
    expect(missing.body.message).toContain("cron");
    const badCron = await call("POST", "/schedules", { cron: "sometimes", recipe_path: "/r.yaml", recipe_text: RECIPE, params: { project: "a" } });
    expect(badCron.status).toBe(400);
    expect(badCron.body.message).toContain("not a valid cron expression");
    const badParam = await call("POST", "/schedules", { cron: "0 3 * * *", recipe_path: "/r.yaml", recipe_text: RECIPE, params: { project: "a", count: "ten" } });
    expect(badParam.status).toBe(400);
    expect(badParam.body).toMatchObject({ error: "recipe_invalid", message: 'recipe /r.yaml: parameters.count: expected integer, got "ten"' });
    const relative = await call("POST", "/schedules", { cron: "0 3 * * *", recipe_path: "r.yaml", recipe_text: RECIPE });
    expect(relative.body.message).toContain("absolute path");
    const notJson = await call("POST", "/schedules", undefined);
    expect(notJson).toMatchObject({ status: 400, body: { error: "bad_request" } });
  });

  test("add, list, run now, skip while running, history with result objects, GET /runs/:id, delete", async () => {
    const gate = deferred<void>();
    const { call, scheduler } = await serve(async () => {
      await gate.promise;
      return done("all green");
    });
    const dir = mkdtempSync(join(tmpdir(), "sched-routes-"));
    const file = join(dir, "nightly.yaml");
    writeFileSync(file, RECIPE);
    const added = await call("POST", "/schedules", { cron: "0 3 * * *", recipe_path: file, params: { project: "api" } });
    expect(added.status).toBe(201);
    expect(added.body).toMatchObject({ name: "nightly", cron: "0 3 * * *", recipe_path: file, params: { project: "api" }, enabled: true });
    const id = added.body.id as string;
    expect(id).toStartWith("sch_");
    expect((await call("GET", "/schedules")).body.schedules.map((s: { id: string }) => s.id)).toEqual([id]);

    const started = await call("POST", `/schedules/${id}/run`);
    expect(started.status).toBe(202);
    expect(started.body).toMatchObject({ status: "running", schedule_id: id, trigger: "manual", result: null });
    const runId = started.body.run_id as string;

    const again = await call("POST", `/schedules/${id}/run`);
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ error: "conflict", run: { status: "skipped", reason: `previous run ${runId} of schedule ${id} is still running` } });

    const finished = new Promise<void>((resolve) => scheduler.onEvent((e) => e.type === "finished" && e.run.id === runId && resolve()));
    gate.resolve();
    await finished;
    const run = (await call("GET", `/runs/${runId}`)).body;
    expect(run).toMatchObject({ ...done("all green"), run_id: runId, schedule_id: id, trigger: "manual" });

    const history = await call("GET", `/schedules/${id}/runs`);
    expect(history.body.runs.map((r: { status: string }) => r.status)).toEqual(["skipped", "completed"]);
    expect(history.body.runs[1].result).toBe("all green");

    expect((await call("DELETE", `/schedules/${id}`)).body).toEqual({ id, deleted: true });
    expect((await call("DELETE", `/schedules/${id}`)).status).toBe(404);
    expect((await call("GET", `/runs/${runId}`)).body.status).toBe("completed");
    expect((await call("GET", "/runs/run_nope")).status).toBe(404);
    expect((await call("POST", "/schedules/sch_nope/run")).status).toBe(404);
  });
});

// The same answers on PostgreSQL, through the pg-boss driver that `schedulePortFor` picks there.
const pgSkip = pgAvailable();
describe.skipIf(pgSkip !== null)(`schedulesRoutes on PostgreSQL (pg-boss driver)${pgSkip ? ` — skipped: ${pgSkip}` : ""}`, () => {
  let cluster: PgCluster;
  beforeAll(async () => {
    cluster = await startPgCluster();
  }, 120_000);
  afterAll(() => cluster?.stop());

  test("schedulePortFor picks the pg-boss driver on PostgreSQL (the embedded scheduler on SQLite): 201, 202 running, 409 conflict with the skipped run, runs, 404s", async () => {
    const url = await cluster.createDatabase();
    const sql = pgSql(url, { max: 4 });
    await migrateSql(sql, PG_MIGRATIONS);
    const closers: (() => Promise<void> | void)[] = [];
    const rt = { store: { sql }, dataDir: "/nonexistent", databaseUrl: url, log: () => {}, onClose: (fn: () => Promise<void> | void) => void closers.push(fn) };
    cleanups.push(async () => {
      for (const c of closers.reverse()) await c();
      await sql.close();
    });
    // the runtime's driver, made first with a runner we hold (schedulePortFor then gets this one)
    const gate = deferred<void>();
    const ran: string[] = [];
    const driver = await bossSchedulerFor({ sql, databaseUrl: url, work: true, onClose: rt.onClose }, async (input) => {
      ran.push(input.runId);
      await gate.promise;
      return done("all green");
    }, rt);
    const port = schedulePortFor(rt);
    expect(port).not.toBeInstanceOf(Scheduler);
    const sqliteHost = { store: { sql: sqliteSql(openDatabase(":memory:")) }, dataDir: "/nonexistent", databaseUrl: null, onClose: () => {} };
    const embedded = schedulePortFor(sqliteHost);
    expect(embedded).toBeInstanceOf(Scheduler);
    await (embedded as Scheduler).stop();

    const app = schedulesRoutes(rt, port);
    const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: app.fetch });
    cleanups.push(() => server.stop(true));
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`http://127.0.0.1:${server.port}${path}`, { method, headers: { "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
      return { status: res.status, body: (await res.json()) as any };
    };

    const added = await call("POST", "/schedules", { cron: "0 3 * * *", recipe_path: "/r.yaml", recipe_text: RECIPE, params: { project: "a" } });
    expect(added.status).toBe(201);
    const id = added.body.id as string;
    expect((await driver.list()).map((s) => s.id)).toEqual([id]);

    const started = await call("POST", `/schedules/${id}/run`);
    expect(started.status).toBe(202);
    expect(started.body).toMatchObject({ status: "running", schedule_id: id, trigger: "manual", result: null });
    const runId = started.body.run_id as string;
    const again = await call("POST", `/schedules/${id}/run`);
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ error: "conflict", run: { status: "skipped", reason: `previous run ${runId} of schedule ${id} is still running` } });

    // a worker (this driver) takes the queued run; let it finish
    const end = Date.now() + 60_000;
    while (ran.length === 0 && Date.now() < end) await Bun.sleep(50);
    expect(ran).toEqual([runId]);
    gate.resolve();
    let run = (await call("GET", `/runs/${runId}`)).body;
    while (run.status === "running" && Date.now() < end) {
      await Bun.sleep(50);
      run = (await call("GET", `/runs/${runId}`)).body;
    }
    expect(run).toMatchObject({ ...done("all green"), run_id: runId, schedule_id: id, trigger: "manual" });
    const history = await call("GET", `/schedules/${id}/runs`);
    expect(history.body.runs.map((r: { status: string }) => r.status)).toEqual(["skipped", "completed"]);

    expect((await call("DELETE", `/schedules/${id}`)).body).toEqual({ id, deleted: true });
    expect((await call("DELETE", `/schedules/${id}`)).status).toBe(404);
    expect((await call("POST", "/schedules/sch_nope/run")).status).toBe(404);
    expect((await call("GET", "/runs/run_nope")).status).toBe(404);
  }, 120_000);
});
