/**
 * @module test/e2e/postgres-schedules
 * Two `airlock serve` processes (from source) on one throwaway PostgreSQL database share one schedule
 * (SPEC §6, docs/scale-out.md): both arm it through the pg-boss driver, and each cron occurrence runs
 * once in the whole deployment. The schedule fires every 3 s; a fire is only worked while its
 * occurrence is the latest due one (a later one due drops it), so a run's `started_at` lies in its
 * occurrence's 3-second window: two runs in one window would be a double fire. The run history read
 * through either server's API is the same. Skipped, with the reason, only when PostgreSQL is not installed.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { spawnServe, type ServeProcess } from "../harness-serve.ts";
import { type PgCluster, pgAvailable, startPgCluster } from "../pg-cluster.ts";

const MAIN = join(import.meta.dir, "..", "..", "src", "main.ts");
const why = pgAvailable();
/** The schedule's period, s (the cron below). */
const PERIOD_S = 3;

interface RunView {
  run_id: string;
  schedule_id: string | null;
  status: string;
  trigger: string;
  started_at: string;
}

async function until<T>(what: string, f: () => Promise<T | undefined>, ms = 180_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(200);
  }
}

describe.skipIf(why !== null)(`schedules on two airlock serve processes on one PostgreSQL database${why ? ` — skipped: ${why}` : ""}`, () => {
  let cluster: PgCluster;
  let url: string;
  const dir = mkdtempSync(join(tmpdir(), "airlock-pg-schedules-e2e-"));
  const ws = join(dir, "ws");
  const procs: Bun.Subprocess[] = [];
  mkdirSync(ws);

  beforeAll(async () => {
    cluster = await startPgCluster();
    url = await cluster.createDatabase("airlock_schedules_e2e");
  }, 120_000);
  afterAll(async () => {
    for (const p of procs) {
      p.kill("SIGKILL");
      await p.exited;
    }
    cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  function dataDir(name: string): string {
    const d = join(dir, name);
    mkdirSync(d, { recursive: true });
    // the server's own script must exist (serve checks it); the runs use the recipe's
    writeFileSync(join(d, "turns.yaml"), stringify({ turns: [] }));
    writeFileSync(join(d, "airlock.yaml"), stringify({ provider: { name: "scripted", script: "turns.yaml" }, storage: url }));
    return d;
  }

  async function serve(d: string): Promise<ServeProcess & { token: string }> {
    const sp = await spawnServe([process.execPath, MAIN, "serve", "--port", "0", "--data-dir", d], { cwd: ws });
    procs.push(sp.proc);
    return { ...sp, token: readFileSync(join(d, "api-token"), "utf8").trim() };
  }

  const api = (s: { url: string; token: string }, path: string, init: RequestInit = {}) =>
    fetch(s.url + path, { ...init, headers: { authorization: `Bearer ${s.token}`, "content-type": "application/json", ...(init.headers ?? {}) } });

  async function runsOn(s: { url: string; token: string }, scheduleId: string): Promise<RunView[]> {
    const r = await api(s, `/schedules/${scheduleId}/runs?limit=1000`);
    expect(r.status).toBe(200);
    return ((await r.json()) as { runs: RunView[] }).runs;
  }

  test("both servers arm one every-3-seconds schedule; each occurrence runs once; either API lists the same runs", async () => {
    const recipeDir = join(dir, "recipes");
    mkdirSync(recipeDir);
    writeFileSync(join(recipeDir, "turns.yaml"), stringify({ turns: [{ text: "tick done" }] }));
    const recipe = join(recipeDir, "tick.yaml");
    writeFileSync(recipe, stringify({ name: "tick", instructions: "tick", provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous" }));

    const dA = dataDir("a");
    const a = await serve(dA);
    const add = await api(a, "/schedules", { method: "POST", body: JSON.stringify({ cron: `*/${PERIOD_S} * * * * *`, recipe_path: recipe, name: "every-3s" }) });
    expect(add.status).toBe(201);
    const schedule = (await add.json()) as { id: string };

    // B starts after the schedule exists: it arms it at start (and would within its sync period anyway)
    const dB = dataDir("b");
    copyFileSync(join(dA, "api-token"), join(dB, "api-token"));
    const b = await serve(dB);
    expect((await (await api(b, `/schedules/${schedule.id}`)).json()) as { id: string }).toMatchObject({ id: schedule.id, enabled: true });

    // Runs that started after B was up: both processes had the schedule armed for each of them.
    const bUp = Date.now();
    const WANT = 6;
    const settled = await until(`${WANT} finished runs after both servers were up`, async () => {
      const runs = (await runsOn(a, schedule.id)).filter((r) => Date.parse(r.started_at) >= bUp);
      return runs.length >= WANT && runs.every((r) => r.status !== "running") ? runs : undefined;
    });

    // one run per occurrence: no two runs in one occurrence's window
    const byOccurrence = new Map<number, RunView[]>();
    for (const r of settled) {
      const occurrence = Math.floor(Date.parse(r.started_at) / (PERIOD_S * 1000));
      byOccurrence.set(occurrence, [...(byOccurrence.get(occurrence) ?? []), r]);
    }
    const doubled = [...byOccurrence.values()].filter((rs) => rs.length > 1);
    expect(doubled).toEqual([]);
    for (const r of settled) {
      expect(r.trigger === "cron" || r.trigger === "catch-up").toBe(true);
      // a run still going at the next occurrence makes that one a skipped run (overlap policy): still one run per occurrence
      expect(["completed", "skipped"]).toContain(r.status);
    }

    // the same history through B's API
    const ids = new Set(settled.map((r) => r.run_id));
    const onB = (await runsOn(b, schedule.id)).filter((r) => ids.has(r.run_id));
    expect(onB.map((r) => r.run_id).sort()).toEqual([...ids].sort());

    // run now through B: 202 with a running run (the pg-boss driver's manual fire), finished by a worker
    const now = await api(b, `/schedules/${schedule.id}/run`, { method: "POST" });
    expect([202, 409]).toContain(now.status);
    const fired = (await now.json()) as { run_id?: string; run?: { run_id: string } };
    const firedId = fired.run_id ?? fired.run?.run_id;
    expect(typeof firedId).toBe("string");
    const finished = await until("the manual run finished", async () => {
      const r = (await (await api(a, `/runs/${firedId}`)).json()) as RunView;
      return r.status !== "running" ? r : undefined;
    });
    expect(finished.trigger).toBe("manual");
    expect(["completed", "skipped"]).toContain(finished.status);

    // remove through B: gone on A too
    expect((await api(b, `/schedules/${schedule.id}`, { method: "DELETE" })).status).toBe(200);
    expect((await api(a, `/schedules/${schedule.id}`)).status).toBe(404);
  }, 300_000);
});
