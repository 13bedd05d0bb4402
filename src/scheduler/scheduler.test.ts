import { afterEach, describe, expect, test } from "bun:test";
import { openDatabase } from "../store/db.ts";
import type { Sql } from "../store/sql.ts";
import { sqliteSql } from "../store/sql-sqlite.ts";
import { Store } from "../store/store.ts";
import { AirlockError } from "../errors.ts";
import { Scheduler, type RunRecipeInput, type RunResultObject, type SchedulerEvent } from "./scheduler.ts";
import { getRun, insertSchedule, listRuns, setLastFire } from "./store.ts";

const RECIPE = `name: tick\ninstructions: "say {{ word }}"\nparameters: { word: { type: string, default: hi }, n: { type: number, default: 1 } }\n`;

function deferred<T>() {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** Resolves with the first scheduler event matching `pred`. */
function nextEvent(s: Scheduler, pred: (e: SchedulerEvent) => boolean): Promise<SchedulerEvent> {
  return new Promise((resolve) => {
    const off = s.onEvent((e) => {
      if (pred(e)) {
        off();
        resolve(e);
      }
    });
  });
}

const quiet = () => {};
let open: Scheduler[] = [];
let dbs: Sql[] = [];
afterEach(async () => {
  for (const s of open) await s.stop();
  for (const d of dbs) await d.close();
  open = [];
  dbs = [];
});

function setup(runRecipe: (i: RunRecipeInput) => Promise<RunResultObject>, opts: { now?: () => Date; db?: Sql } = {}) {
  const db = opts.db ?? sqliteSql(openDatabase(":memory:"));
  if (!opts.db) dbs.push(db);
  const s = new Scheduler({ db, runRecipe, log: quiet, now: opts.now });
  open.push(s);
  return { db, s };
}

const result = (status: RunResultObject["status"], session_id = "ses_x"): RunResultObject => ({
  session_id,
  status,
  result: status === "completed" ? "done" : null,
  tool_calls: 0,
  refused_calls: [],
  error: null,
  duration_ms: 1,
});

describe("Scheduler.add", () => {
  test("validates the cron expression and the recipe with its parameters before storing", async () => {
    const { s } = await setup(async () => result("completed"));
    await expect(s.add({ cron: "every day", recipe_path: "/r.yaml", recipe_text: RECIPE })).rejects.toThrow(/not a valid cron expression/);
    const bad = await (async () => {
      try {
        await s.add({ cron: "* * * * *", recipe_path: "/r.yaml", recipe_text: RECIPE, params: { n: "ten" } });
      } catch (e) {
        return e as AirlockError;
      }
    })();
    expect(bad?.code).toBe("recipe_invalid");
    expect(bad?.message).toBe('recipe /r.yaml: parameters.n: expected number, got "ten"');
    expect(await s.list()).toEqual([]);
    const added = await s.add({ cron: "0 3 * * *", recipe_path: "/r.yaml", recipe_text: RECIPE, params: { word: "yo" } });
    expect(added).toMatchObject({ name: "tick", cron: "0 3 * * *", recipe_path: "/r.yaml", params: { word: "yo" }, enabled: true, last_fire_at: null, running_run_id: null });
    expect(added.next_fire_at).not.toBeNull();
    expect((await s.list()).map((x) => x.id)).toEqual([added.id]);
  });
});

describe("Scheduler.fire", () => {
  test("a fire while the previous run is going is stored as skipped; the run's result object is stored", async () => {
    const gate = deferred<void>();
    const inputs: RunRecipeInput[] = [];
    const { s, db } = await setup(async (i) => {
      inputs.push(i);
      i.onSession("ses_a");
      await gate.promise;
      return result("completed", "ses_a");
    });
    const sch = await s.add({ cron: "0 0 1 1 *", recipe_path: "/r.yaml", recipe_text: RECIPE });
    const first = await s.fire(sch.id, "manual");
    expect(first.run.status).toBe("running");
    expect((await getRun(db, first.run.id))!.session_id).toBe("ses_a");
    expect((await s.get(sch.id))!.running_run_id).toBe(first.run.id);
    const second = await s.fire(sch.id, "cron");
    expect(second.run).toMatchObject({ status: "skipped", trigger: "cron", reason: `previous run ${first.run.id} of schedule ${sch.id} is still running` });
    gate.resolve();
    const done = await first.done;
    expect(done).toMatchObject({ status: "completed", session_id: "ses_a", result: result("completed", "ses_a") });
    expect(inputs).toHaveLength(1);
    expect(inputs[0]!.schedule.recipe_text).toBe(RECIPE);
    expect((await listRuns(db, sch.id)).map((r) => r.status)).toEqual(["skipped", "completed"]);
  });

  test("a throwing runRecipe is recorded as failed with an error result; blocked results keep their status", async () => {
    let n = 0;
    const { s } = await setup(async () => {
      n++;
      if (n === 1) throw new Error("boom");
      return result("blocked");
    });
    const sch = await s.add({ cron: "0 0 1 1 *", recipe_path: "/r.yaml", recipe_text: RECIPE });
    const failed = (await (await s.fire(sch.id, "manual")).done);
    expect(failed.status).toBe("failed");
    expect(failed.result).toMatchObject({ status: "failed", error: { code: "internal", message: "boom" } });
    expect(((await (await s.fire(sch.id, "manual")).done)).status).toBe("blocked");
  });

  test("stop() cancels a run going on and waits for it to be stored", async () => {
    const { s } = await setup(
      (i) =>
        new Promise((resolve) => {
          i.signal.addEventListener("abort", () => resolve(result("cancelled")));
        }),
    );
    const sch = await s.add({ cron: "0 0 1 1 *", recipe_path: "/r.yaml", recipe_text: RECIPE });
    const { done } = await s.fire(sch.id, "manual");
    await s.stop();
    expect((await done).status).toBe("cancelled");
  });

  test("remove() keeps the run history, marked removed, by run id, by schedule id and in the list of all runs", async () => {
    const { s } = await setup(async () => result("completed"));
    const sch = await s.add({ cron: "0 0 1 1 *", recipe_path: "/r.yaml", recipe_text: RECIPE });
    const run = (await (await s.fire(sch.id, "manual")).done);
    expect(await s.remove(sch.id)).toBe(true);
    expect(await s.remove(sch.id)).toBe(false);
    expect(await s.run(run.id)).toMatchObject({ id: run.id, schedule_id: sch.id, schedule_removed: true, status: "completed" });
    expect((await s.runs(sch.id)).map((r) => [r.id, r.schedule_removed])).toEqual([[run.id, true]]);
    expect((await s.allRuns()).map((r) => r.id)).toEqual([run.id]);
    await expect(s.runs("sch_never")).rejects.toThrow(/no schedule/);
  });
});

describe("Scheduler cron (real clock)", () => {
  test("a schedule firing every second runs, skips an overlapping fire, and lists its runs", async () => {
    const release = deferred<void>();
    const { s } = await setup(async () => {
      await release.promise;
      return result("completed");
    });
    await s.start();
    const started = nextEvent(s, (e) => e.type === "started");
    const skipped = nextEvent(s, (e) => e.type === "skipped");
    const sch = await s.add({ cron: "* * * * * *", recipe_path: "/r.yaml", recipe_text: RECIPE });
    const first = await started;
    const skip = await skipped;
    expect(skip.run.reason).toContain(first.run.id);
    const finished = nextEvent(s, (e) => e.type === "finished" && e.run.id === first.run.id);
    release.resolve();
    expect((await finished).run.status).toBe("completed");
    const another = await nextEvent(s, (e) => e.type === "finished" && e.run.id !== first.run.id && e.run.status === "completed");
    const history = await s.runs(sch.id);
    expect(history.some((r) => r.id === skip.run.id && r.status === "skipped" && r.result === null)).toBe(true);
    for (const id of [first.run.id, another.run.id]) expect(history.find((r) => r.id === id)?.result).toEqual(result("completed"));
    await s.remove(sch.id);
  }, 10_000);
});

describe("Scheduler.start catch-up", () => {
  test("missed fires are not replayed in bulk: exactly one catch-up run per schedule", async () => {
    const db = sqliteSql(openDatabase(":memory:"));
    dbs.push(db);
    const yearly = await insertSchedule(db, { name: "y", cron: "0 0 1 1 *", recipe_path: "/r.yaml", recipe_text: RECIPE });
    await setLastFire(db, yearly.id, "2020-01-01T00:00:00.000Z"); // five years of missed fires
    const fresh = await insertSchedule(db, { name: "f", cron: "0 0 1 1 *", recipe_path: "/r.yaml", recipe_text: RECIPE });
    await setLastFire(db, fresh.id, "2026-06-01T00:00:00.000Z"); // next fire 2027-01-01: nothing missed
    const now = () => new Date("2026-07-01T00:00:00.000Z");
    let calls = 0;
    const { s } = await setup(
      async () => {
        calls++;
        return result("completed");
      },
      { db, now },
    );
    const catchUps = await s.start();
    expect(catchUps.map((r) => [r.schedule_id, r.trigger])).toEqual([[yearly.id, "catch-up"]]);
    await nextEvent(s, (e) => e.type === "finished");
    expect(calls).toBe(1);
    expect(await listRuns(db, fresh.id)).toEqual([]);
  });

  test("runs left running by a previous process are interrupted by the store's recovery, before the scheduler starts", async () => {
    const db = sqliteSql(openDatabase(":memory:"));
    dbs.push(db);
    const sch = await insertSchedule(db, { name: "y", cron: "0 0 1 1 *", recipe_path: "/r.yaml", recipe_text: RECIPE });
    await setLastFire(db, sch.id, new Date().toISOString());
    await db.run("INSERT INTO runs (id, schedule_id, status, trigger, started_at) VALUES ('run_old', ?, 'running', 'cron', ?)", [sch.id, new Date().toISOString()]);
    // what the runtime does when it opens the store (no owner recorded: the process is gone)
    await new Store(db).markInterruptedTurns();
    expect((await getRun(db, "run_old"))!.status).toBe("interrupted");
    const { s } = await setup(async () => result("completed"), { db });
    await s.start();
    expect((await getRun(db, "run_old"))!.status).toBe("interrupted");
  });
});
