/**
 * The pg-boss schedule driver and the fire claim on a real PostgreSQL (a throwaway cluster): two drivers
 * on one database fire each occurrence once, the overlap policy holds across drivers, catch-up and
 * missed fires behave as in the embedded scheduler. Skipped with the reason when PostgreSQL is absent.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { pgAvailable, startPgCluster, type PgCluster } from "../../test/pg-cluster.ts";
import { pgSql as storePgSql } from "../store/sql-pg.ts";
import { migrateSql } from "../store/migrate.ts";
import { PG_MIGRATIONS } from "../store/migrations-pg.ts";
import type { Sql } from "../store/sql.ts";
import { BossScheduler, FIRE_QUEUE, occurrenceJobId, type BossRunRecipe } from "./boss.ts";
import { claimFire, deleteScheduleSql, finishClaimedRun, loadAllRuns, loadRuns } from "./claim.ts";
import { openDatabase } from "../store/db.ts";
import { bossSchedulerFor } from "./service.ts";
import { sqliteSql } from "../store/sql-sqlite.ts";
import type { RunResultObject } from "./scheduler.ts";

const RECIPE = `name: tick\ninstructions: "say hi"\n`;
const skip = pgAvailable();
if (skip) console.warn(`boss.test.ts: skipped: ${skip}`);

let cluster: PgCluster | null = null;
const open: { stop(): Promise<void> }[] = [];
const pools: Sql[] = [];

beforeAll(async () => {
  if (!skip) cluster = await startPgCluster();
}, 120_000);
afterEach(async () => {
  for (const d of open.splice(0)) await d.stop();
  for (const p of pools.splice(0)) await p.close();
});
afterAll(() => cluster?.stop());

/** A fresh database with our tables; returns its URL. */
async function freshDb(): Promise<string> {
  const url = await cluster!.createDatabase();
  const sql = storePgSql(url, { max: 1 });
  await migrateSql(sql, PG_MIGRATIONS);
  await sql.close();
  return url;
}

function sqlOn(url: string, max = 4): Sql {
  const s = storePgSql(url, { max });
  pools.push(s);
  return s;
}

async function addSchedule(sql: Sql, id: string, cron: string, o: { created_at?: string; last_fire_at?: string | null } = {}): Promise<void> {
  await sql.run("INSERT INTO schedules (id, name, cron, recipe_path, recipe_text, params, enabled, created_at, last_fire_at) VALUES (?, ?, ?, ?, ?, '{}', 1, ?, ?)", [
    id,
    id,
    cron,
    "/r.yaml",
    RECIPE,
    o.created_at ?? new Date().toISOString(),
    o.last_fire_at ?? null,
  ]);
}

const ok = (session_id = "ses_x"): RunResultObject => ({ session_id, status: "completed", result: "done", tool_calls: 0, refused_calls: [], error: null, duration_ms: 1 });

function driver(url: string, runRecipe: BossRunRecipe, o: { concurrency?: number; now?: () => Date } = {}): BossScheduler {
  const d = new BossScheduler({ sql: sqlOn(url), url, runRecipe, log: () => {}, pollSeconds: 0.5, syncMs: 500, concurrency: o.concurrency, now: o.now });
  open.push(d);
  return d;
}

/** Waits (polling every 50 ms, up to `ms`) until `cond` holds; fails with `what` otherwise. */
async function until(what: string, cond: () => Promise<boolean> | boolean, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await cond()) return;
    await Bun.sleep(50);
  }
  throw new Error(`timed out waiting until ${what}`);
}

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe("occurrenceJobId", () => {
  test("is a version-5 UUID that depends on the schedule and the occurrence only", () => {
    const t = new Date("2026-12-02T01:00:00.000Z");
    const a = occurrenceJobId("sch_a", t);
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(occurrenceJobId("sch_a", new Date(t.getTime()))).toBe(a);
    expect(occurrenceJobId("sch_b", t)).not.toBe(a);
    expect(occurrenceJobId("sch_a", new Date(t.getTime() + 1000))).not.toBe(a);
  });
});

describe("loading pg-boss", () => {
  test("only loadPgBoss() loads it (through the side bundle's one dynamic import); elsewhere it is imported for types only", async () => {
    const { Glob } = Bun;
    const hits: string[] = [];
    const callers: string[] = [];
    for await (const f of new Glob("src/**/*.ts").scan(".")) {
      if (f.endsWith(".test.ts")) continue;
      const text = await Bun.file(f).text();
      for (const m of text.matchAll(/^(?!\s*(?:\*|\/\/)).*(?:(?<!typeof )import\s*\(\s*["']pg-boss["']|from\s+["']pg-boss["']|require\(\s*["']pg-boss["']).*$/gm)) {
        if (/^\s*import type /.test(m[0])) continue;
        hits.push(`${f}: ${m[0].trim()}`);
      }
      if (!f.startsWith("src/side/") && /side\.pgBoss\(/.test(text)) callers.push(f);
    }
    expect(hits).toEqual(['src/side/modules.ts: pgBoss: (): Promise<typeof import("pg-boss")> => import("pg-boss"),']);
    expect(callers).toEqual(["src/scheduler/boss.ts"]);
  });
});

describe("claimFire on SQLite (the same statements)", () => {
  test("overlap, skip naming the busy run, finish, remove keeping runs", async () => {
    const sql = sqliteSql(openDatabase(":memory:"));
    try {
      await addSchedule(sql, "sch_l", "0 0 * * *");
      const at = new Date().toISOString();
      const a = await claimFire(sql, { scheduleId: "sch_l", trigger: "cron", at, requireEnabled: true });
      const b = await claimFire(sql, { scheduleId: "sch_l", trigger: "manual", at });
      expect(a?.status).toBe("started");
      expect(b).toMatchObject({ status: "skipped", busy_run_id: a!.run.id });
      expect(b!.run).toMatchObject({ status: "skipped", finished_at: at, schedule_removed: false });
      expect((await finishClaimedRun(sql, a!.run.id, { status: "completed", result: ok() }))?.status).toBe("completed");
      expect(await deleteScheduleSql(sql, "sch_l")).toBe(true);
      expect((await loadAllRuns(sql)).map((r) => [r.schedule_id, r.schedule_removed])).toEqual([
        ["sch_l", true],
        ["sch_l", true],
      ]);
    } finally {
      await sql.close();
    }
  });
});

describe.skipIf(!!skip)("claimFire on PostgreSQL", () => {
  test("two workers claiming one schedule at once: exactly one run starts, the other is skipped naming it", async () => {
    const url = await freshDb();
    const a = sqlOn(url);
    const b = sqlOn(url);
    await addSchedule(a, "sch_race", "0 0 * * *");
    for (let i = 0; i < 20; i++) {
      const at = new Date().toISOString();
      const [x, y] = await Promise.all([
        claimFire(a, { scheduleId: "sch_race", trigger: "cron", at, requireEnabled: true }),
        claimFire(b, { scheduleId: "sch_race", trigger: "cron", at, requireEnabled: true }),
      ]);
      const claims = [x!, y!];
      const started = claims.filter((c) => c.status === "started");
      const skipped = claims.filter((c) => c.status === "skipped");
      expect(started).toHaveLength(1);
      expect(skipped).toHaveLength(1);
      expect(skipped[0]!.status === "skipped" && skipped[0]!.busy_run_id).toBe(started[0]!.run.id);
      expect(skipped[0]!.run.reason).toBe(`previous run ${started[0]!.run.id} of schedule sch_race is still running`);
      await finishClaimedRun(a, started[0]!.run.id, { status: "completed", result: ok() });
    }
    const runs = await loadRuns(a, "sch_race", 1000);
    expect(runs.filter((r) => r.status === "completed")).toHaveLength(20);
    expect(runs.filter((r) => r.status === "skipped")).toHaveLength(20);
    expect(runs.filter((r) => r.status === "running")).toHaveLength(0);
  });

  test("an unknown or disabled schedule is not claimed and nothing is written", async () => {
    const url = await freshDb();
    const a = sqlOn(url);
    await addSchedule(a, "sch_off", "0 0 * * *");
    await a.run("UPDATE schedules SET enabled = 0 WHERE id = ?", ["sch_off"]);
    expect(await claimFire(a, { scheduleId: "sch_none", trigger: "manual", at: new Date().toISOString() })).toBeNull();
    expect(await claimFire(a, { scheduleId: "sch_off", trigger: "cron", at: new Date().toISOString(), requireEnabled: true })).toBeNull();
    expect(await loadRuns(a, "sch_off")).toEqual([]);
    expect((await a.get<{ last_fire_at: string | null }>("SELECT last_fire_at FROM schedules WHERE id = ?", ["sch_off"]))!.last_fire_at).toBeNull();
    const manual = await claimFire(a, { scheduleId: "sch_off", trigger: "manual", at: new Date().toISOString() });
    expect(manual?.status).toBe("started");
  });
});

describe.skipIf(!!skip)("BossScheduler: two drivers on one database", () => {
  test("every occurrence of a per-second schedule is enqueued once and run once", async () => {
    const url = await freshDb();
    const sql = sqlOn(url);
    await addSchedule(sql, "sch_tick", "* * * * * *");
    const seen: { occurrence: string | null; by: string }[] = [];
    const recipe = (by: string): BossRunRecipe => async (input) => {
      seen.push({ occurrence: input.occurrence, by });
      return ok();
    };
    const a = driver(url, recipe("a"));
    const b = driver(url, recipe("b"));
    await Promise.all([a.start({ work: true }), b.start({ work: true })]);
    await until("6 runs happened", () => seen.length >= 6);
    await Promise.all([a.stop(), b.stop()]);
    const occurrences = seen.map((s) => s.occurrence);
    expect(occurrences.every((o) => o !== null && o.endsWith(".000Z"))).toBe(true);
    expect(new Set(occurrences).size).toBe(occurrences.length);
    // the queue holds one job per occurrence, with the deterministic id
    const jobs = await sql.all<{ id: string; data: string | { occurrence: string } }>("SELECT id::text AS id, data FROM pgboss.job WHERE name = ?", [FIRE_QUEUE]);
    const byId = new Map(jobs.map((j) => [j.id, typeof j.data === "string" ? (JSON.parse(j.data) as { occurrence: string }) : j.data]));
    for (const o of occurrences) expect(byId.get(occurrenceJobId("sch_tick", new Date(o!)))?.occurrence).toBe(o!);
    const runs = await loadRuns(sql, "sch_tick", 1000);
    expect(runs.filter((r) => r.status === "completed").length).toBe(seen.length);
    expect(runs.every((r) => r.trigger === "cron" || r.trigger === "catch-up")).toBe(true);
  }, 120_000);

  test("overlap holds across drivers: while A runs the schedule, B's fires are skipped naming A's run", async () => {
    const url = await freshDb();
    const sql = sqlOn(url);
    await addSchedule(sql, "sch_slow", "* * * * * *");
    const gate = deferred();
    const ranOn: string[] = [];
    const a = driver(
      url,
      async (input) => {
        ranOn.push("a");
        await Promise.race([gate.promise, new Promise((_, rej) => input.signal.addEventListener("abort", () => rej(input.signal.reason)))]);
        return ok();
      },
      { concurrency: 1 },
    );
    await a.start({ work: true });
    await until("A started a run", () => ranOn.length === 1);
    const skippedOnB: string[] = [];
    const b = driver(url, async () => {
      ranOn.push("b");
      return ok();
    });
    b.onEvent((e) => {
      if (e.type === "skipped") skippedOnB.push(e.run.reason ?? "");
    });
    await b.start({ work: true });
    await until("B skipped 3 fires", () => skippedOnB.length >= 3);
    const running = (await loadRuns(sql, "sch_slow", 1000)).filter((r) => r.status === "running");
    expect(running).toHaveLength(1);
    expect(a.activeRuns()).toEqual([running[0]!.id]);
    for (const reason of skippedOnB) expect(reason).toBe(`previous run ${running[0]!.id} of schedule sch_slow is still running`);
    expect(ranOn).toEqual(["a"]);
    gate.resolve();
    await until("A's run finished", async () => (await loadRuns(sql, "sch_slow", 1000)).some((r) => r.id === running[0]!.id && r.status === "completed"));
  }, 120_000);

  test("catch-up as today: two drivers starting together run a schedule that missed its fires once; none for one that missed nothing", async () => {
    const url = await freshDb();
    const sql = sqlOn(url);
    const twoDaysAgo = new Date(Date.now() - 2 * 86_400_000).toISOString();
    await addSchedule(sql, "sch_missed", "0 0 * * *", { created_at: twoDaysAgo });
    await addSchedule(sql, "sch_fresh", "0 0 1 1 *", { created_at: new Date().toISOString() });
    const runs: { schedule: string; trigger: string }[] = [];
    const recipe: BossRunRecipe = async (input) => {
      runs.push({ schedule: input.schedule.id, trigger: input.trigger });
      return ok();
    };
    const a = driver(url, recipe);
    const b = driver(url, recipe);
    const [ca, cb] = await Promise.all([a.start({ work: true }), b.start({ work: true })]);
    expect([...ca, ...cb]).toEqual(["sch_missed"]);
    await until("the catch-up run finished", async () => (await loadRuns(sql, "sch_missed")).some((r) => r.status === "completed"));
    // a third driver starting now finds nothing missed
    const c = driver(url, recipe);
    expect(await c.start({ work: true })).toEqual([]);
    await Bun.sleep(1500); // poll interval ×3: a duplicate would have been worked by now
    expect(runs).toEqual([{ schedule: "sch_missed", trigger: "catch-up" }]);
    expect(await loadRuns(sql, "sch_fresh")).toEqual([]);
  }, 120_000);

  test("an API-only driver enqueues without working; a worker started later runs only the latest due occurrence", async () => {
    const url = await freshDb();
    const sql = sqlOn(url);
    await addSchedule(sql, "sch_api", "* * * * * *");
    const api = driver(url, async () => {
      throw new Error("an API-only driver must not run recipes");
    });
    await api.start({ work: false });
    const queued = async () =>
      (await sql.get<{ n: number }>("SELECT count(*)::int AS n FROM pgboss.job WHERE name = ? AND state = 'created'", [FIRE_QUEUE]))!.n;
    await until("3 fires are queued", async () => (await queued()) >= 3);
    await api.stop();
    expect(await loadRuns(sql, "sch_api")).toEqual([]);
    const occurrences: (string | null)[] = [];
    const worker = driver(url, async (input) => {
      occurrences.push(input.occurrence);
      return ok();
    });
    const backlogJobs = await sql.all<{ id: string; data: string | { occurrence: string } }>("SELECT id::text AS id, data FROM pgboss.job WHERE name = ? AND state = 'created'", [FIRE_QUEUE]);
    const backlog = backlogJobs.map((j) => j.id);
    const backlogOccurrences = backlogJobs.map((j) => (typeof j.data === "string" ? (JSON.parse(j.data) as { occurrence: string }) : j.data).occurrence);
    expect(backlog.length).toBeGreaterThanOrEqual(3);
    await worker.start({ work: true });
    const stillQueued = async () =>
      (await sql.all<{ id: string }>("SELECT id::text AS id FROM pgboss.job WHERE name = ? AND state = 'created'", [FIRE_QUEUE])).filter((j) => backlog.includes(j.id)).length;
    await until("the API-only driver's backlog is worked", async () => (await stillQueued()) === 0);
    await until("a run finished", async () => (await loadRuns(sql, "sch_api")).some((r) => r.status === "completed"));
    await worker.stop();
    // stale occurrences were dropped without a run row; the runs that happened are distinct occurrences
    const runs = await loadRuns(sql, "sch_api", 1000);
    expect(runs.length).toBe(occurrences.length);
    expect(new Set(occurrences).size).toBe(occurrences.length);
    expect(runs.every((r) => r.status === "completed")).toBe(true);
    // of the backlog, at most its latest occurrence ran (the older ones had a later occurrence due)
    const ranFromBacklog = occurrences.filter((o) => backlogOccurrences.includes(o!));
    expect(ranFromBacklog.length).toBeLessThanOrEqual(1);
    if (ranFromBacklog.length) expect(ranFromBacklog[0]).toBe(backlogOccurrences.sort().at(-1)!);
  }, 120_000);

  test("the schedule API over the database: add validates, a manual fire is claimed by the API-only node and run by a worker, a second fire while it runs is skipped, remove keeps the runs", async () => {
    const url = await freshDb();
    const sql = sqlOn(url);
    const gate = deferred();
    const triggers: string[] = [];
    const api = driver(url, async () => {
      throw new Error("an API-only driver must not run recipes");
    });
    const worker = driver(url, async (input) => {
      triggers.push(`${input.trigger}:${input.occurrence}`);
      await gate.promise;
      return ok("ses_manual");
    });
    await api.start({ work: false });
    await worker.start({ work: true });
    await expect(api.add({ cron: "every day", recipe_path: "/r.yaml", recipe_text: RECIPE })).rejects.toMatchObject({ code: "bad_request" });
    await expect(api.add({ cron: "0 0 1 1 *", recipe_path: "/r.yaml", recipe_text: "nope: [" })).rejects.toMatchObject({ code: "recipe_invalid" });
    expect(await api.list()).toEqual([]);
    const added = await api.add({ cron: "0 0 1 1 *", recipe_path: "/r.yaml", recipe_text: RECIPE });
    expect(added).toMatchObject({ name: "tick", cron: "0 0 1 1 *", enabled: true, running_run_id: null });
    expect((await worker.get(added.id))?.id).toBe(added.id);
    await expect(api.fire("sch_nope")).rejects.toMatchObject({ code: "not_found" });
    const first = await api.fire(added.id);
    expect(first).toMatchObject({ status: "running", trigger: "manual" });
    await until("the worker runs it", () => triggers.length === 1);
    expect(triggers).toEqual(["manual:null"]);
    expect((await api.get(added.id))?.running_run_id).toBe(first.id);
    // the claimer (API node) handed the run to the queue; the worker that took the job holds its lease
    const held = await sql.get<{ worker_id: string | null; lease_expires_at: number | null }>("SELECT worker_id, lease_expires_at FROM runs WHERE id = ?", [first.id]);
    expect(held?.worker_id).toBe(worker.runLeases.workerId);
    expect(Number(held?.lease_expires_at)).toBeGreaterThan(Date.now() - 60_000);
    const second = await api.fire(added.id);
    expect(second).toMatchObject({ status: "skipped", reason: `previous run ${first.id} of schedule ${added.id} is still running` });
    gate.resolve();
    await until("the manual run finished", async () => (await api.run(first.id))?.status === "completed");
    expect(await api.run(first.id)).toMatchObject({ status: "completed", session_id: "ses_manual", schedule_removed: false });
    expect(await api.remove(added.id)).toBe(true);
    expect(await api.remove(added.id)).toBe(false);
    expect((await api.runs(added.id)).map((r) => [r.id, r.schedule_removed])).toEqual([
      [second.id, true],
      [first.id, true],
    ]);
    expect((await api.allRuns()).length).toBe(2);
    await expect(api.runs("sch_never")).rejects.toMatchObject({ code: "not_found" });
    expect(triggers).toHaveLength(1);
  }, 120_000);

  test("bossSchedulerFor: one started driver per runtime, stopped when the runtime closes; an unreachable database is storage_unavailable", async () => {
    const url = await freshDb();
    const closers: (() => Promise<void> | void)[] = [];
    const rt = { sql: sqlOn(url), databaseUrl: url, work: true, onClose: (fn: () => Promise<void> | void) => void closers.push(fn) };
    const ran: string[] = [];
    const first = bossSchedulerFor(rt, async (input) => {
      ran.push(input.runId);
      return ok();
    });
    expect(bossSchedulerFor(rt)).toBe(first);
    const s = await first;
    const added = await s.add({ cron: "0 0 1 1 *", recipe_path: "/r.yaml", recipe_text: RECIPE });
    const run = await s.fire(added.id);
    await until("the run finished", async () => (await s.run(run.id))?.status === "completed");
    expect(ran).toEqual([run.id]);
    expect(closers).toHaveLength(1);
    await closers[0]!();
    await expect(s.fire(added.id)).rejects.toMatchObject({ code: "storage_unavailable" });
    const bad = { ...rt, databaseUrl: "postgres://postgres@127.0.0.1:1/nothing", onClose: () => {} };
    await expect(bossSchedulerFor(bad)).rejects.toMatchObject({ code: "storage_unavailable" });
  }, 120_000);
});
