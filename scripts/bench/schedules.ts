/**
 * @module scripts/bench/schedules
 * Scheduled runs per minute on PostgreSQL with 2 worker processes vs 1 (prints JSON). A throwaway
 * cluster (test/pg-cluster.ts) holds `SCHEDULES` schedules; an API-only driver (`start({ work: false })`)
 * enqueues one manual fire of each through pg-boss, and 1 or 2 worker processes
 * (`scheduler/boss.ts`, `concurrency` runs each) claim, run and finish them. A run is a stand-in
 * recipe that waits `RUN_MS` (the model is what a real run waits on), so the figure is the queue's
 * and the claim's throughput, not a model's. Usage: `bun scripts/bench/schedules.ts`.
 * (Internal: `--worker URL` runs one worker process until stdin closes.)
 */
import { cpus, loadavg } from "node:os";
import { BossScheduler } from "../../src/scheduler/boss.ts";
import { loadRuns } from "../../src/scheduler/claim.ts";
import { migrateSql } from "../../src/store/migrate.ts";
import { PG_MIGRATIONS } from "../../src/store/migrations-pg.ts";
import { pgSql } from "../../src/store/sql-pg.ts";
import { pgAvailable, startPgCluster } from "../../test/pg-cluster.ts";

const SCHEDULES = Number(process.env.BENCH_SCHEDULES ?? 300);
const RUN_MS = 100;
const CONCURRENCY = 8;
const round = (x: number, d = 1): number => Math.round(x * 10 ** d) / 10 ** d;

if (process.argv[2] === "--worker") {
  const url = process.argv[3]!;
  const sql = pgSql(url, { max: 4 });
  const d = new BossScheduler({
    sql,
    url,
    log: () => {},
    pollSeconds: 0.5,
    concurrency: CONCURRENCY,
    runRecipe: async () => {
      await Bun.sleep(RUN_MS);
      return { session_id: null, status: "completed", result: "ok", tool_calls: 0, refused_calls: [], error: null, duration_ms: RUN_MS };
    },
  });
  await d.start({ work: true });
  process.stdout.write("ready\n");
  for await (const _ of Bun.stdin.stream()) {
    // until stdin closes
  }
  await d.stop();
  await sql.close();
  process.exit(0);
}

const why = pgAvailable();
if (why) {
  console.log(JSON.stringify({ error: why }));
  process.exit(0);
}

const cluster = await startPgCluster();
const load_before = loadavg().map((x) => round(x, 2));

/** One measurement: `workers` processes drain `schedules` manual fires. */
async function measure(workers: number, schedules = SCHEDULES): Promise<{ workers: number; runs: number; seconds: number; runs_per_minute: number }> {
  const url = await cluster.createDatabase();
  const sql = pgSql(url, { max: 4 });
  await migrateSql(sql, PG_MIGRATIONS);
  const created = new Date().toISOString();
  for (let i = 0; i < schedules; i++)
    await sql.run("INSERT INTO schedules (id, name, cron, recipe_path, recipe_text, params, enabled, created_at) VALUES (?, ?, '0 0 1 1 *', '/r.yaml', 'name: r', '{}', 1, ?)", [`sch_${i}`, `s${i}`, created]);
  const api = new BossScheduler({ sql, url, log: () => {}, runRecipe: async () => { throw new Error("API-only"); } });
  await api.start({ work: false }); // creates pg-boss's schema before the workers start
  const procs = [];
  for (let w = 0; w < workers; w++) {
    const p = Bun.spawn([process.execPath, import.meta.path, "--worker", url], { stdin: "pipe", stdout: "pipe", stderr: "inherit" });
    const reader = p.stdout.getReader();
    let seen = "";
    while (!seen.includes("ready")) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`worker ${w} exited before it was ready`);
      seen += new TextDecoder().decode(value);
    }
    procs.push(p);
  }
  process.stderr.write(`schedules bench: ${workers} worker(s) ready\n`);
  const t0 = performance.now();
  for (let i = 0; i < schedules; i++) await api.fire(`sch_${i}`);
  process.stderr.write(`schedules bench: ${schedules} fires enqueued\n`);
  const done = async () => (await sql.get<{ n: number }>("SELECT count(*)::int AS n FROM runs WHERE status = 'completed'"))!.n;
  const deadline = Date.now() + 600_000;
  while ((await done()) < schedules) {
    if (Date.now() > deadline) throw new Error("runs did not finish within 600 s");
    await Bun.sleep(20);
  }
  const seconds = (performance.now() - t0) / 1000;
  const skipped = (await loadRuns(sql, "sch_0")).filter((r) => r.status !== "completed").length;
  if (skipped) throw new Error(`unexpected non-completed runs: ${skipped}`);
  for (const p of procs) {
    p.stdin.end();
    await p.exited;
  }
  await api.stop();
  await sql.close();
  return { workers, runs: schedules, seconds: round(seconds, 2), runs_per_minute: Math.round((schedules / seconds) * 60) };
}

try {
  await measure(1, 20); // warm-up (the first pg-boss round on a cluster is slow), not reported
  const one = await measure(1);
  const two = await measure(2);
  console.log(
    JSON.stringify(
      {
        bench: "scheduled runs per minute on PostgreSQL (pg-boss), 2 worker processes vs 1",
        setup: { schedules: SCHEDULES, run_ms: RUN_MS, concurrency_per_worker: CONCURRENCY, poll_s: 0.5, notify: true },
        machine: { cores: cpus().length, load_before, load_after: loadavg().map((x) => round(x, 2)), bun: Bun.version },
        one_worker: one,
        two_workers: two,
        speedup: round(two.runs_per_minute / one.runs_per_minute, 2),
      },
      null,
      2,
    ),
  );
} finally {
  cluster.stop();
}
