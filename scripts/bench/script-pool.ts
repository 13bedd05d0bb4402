/**
 * @module scripts/bench/script-pool
 * The script pool's own figures (prints JSON), with tools answered at once on the main thread (no gate;
 * `scripts/bench/parked.ts` has the gated figures): a trivial script's start-to-result latency on a warm
 * pool (p50, p99), a burst of 50 scripts that each park on a tool (time until each one reached it: this
 * is where new worker threads start), the RSS those 50 parked scripts add, and the throughput of 200
 * short scripts (one tool call each), one after another and all at once, with and without the 50 parked,
 * and the start of a script that finds no idle thread, one at a time (cold start).
 *
 * `AIRLOCK_BENCH_ROOT=/path/to/other/checkout bun scripts/bench/script-pool.ts` measures another
 * checkout's `src/script/pool.ts` with the same code (for a before/after ratio).
 */
import { resolve } from "node:path";
import type { RunOptions, ScriptPool as Pool, ScriptResult } from "../../src/script/pool.ts";

const root = resolve(process.env.AIRLOCK_BENCH_ROOT ?? resolve(import.meta.dir, "../.."));
const { ScriptPool } = (await import(resolve(root, "src/script/pool.ts"))) as { ScriptPool: typeof Pool };

const LIMITS: RunOptions = { cpuTimeoutMs: 30_000, wallTimeoutMs: 600_000, maxToolCalls: 1000, maxLogBytes: 1 << 16, maxResultBytes: 1 << 20 };
const PARKED = 50;
const SHORT = 200;
const COLD = 20;
type Outcome = { ok: true; result: unknown };

const round = (x: number, d = 2): number => Math.round(x * 10 ** d) / 10 ** d;
const pct = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
const mb = (bytes: number): number => round(bytes / 2 ** 20, 1);
function must(r: ScriptResult): void {
  if (!r.ok) throw new Error(`bench script failed: ${JSON.stringify(r.error)}`);
}

let release!: () => void;
let released = new Promise<void>((r) => (release = r));
let parkedNow = 0;
let onParked: (() => void) | undefined;
const tools = async (name: string, args: unknown): Promise<Outcome> => {
  if (name === "park") {
    parkedNow++;
    onParked?.();
    await released;
  }
  return { ok: true, result: args };
};

async function settle(): Promise<number> {
  Bun.gc(true);
  await Bun.sleep(300);
  Bun.gc(true);
  return process.memoryUsage().rss;
}

/** Starts PARKED scripts at once; resolves when all wait on `park`, with each one's time to get there (ms, sorted). */
async function parkAll(pool: Pool): Promise<{ runs: Promise<ScriptResult>[]; ms: number[]; totalMs: number }> {
  parkedNow = 0;
  released = new Promise<void>((r) => (release = r));
  const t0 = performance.now();
  const ms: number[] = [];
  let all!: () => void;
  const reached = new Promise<void>((r) => (all = r));
  onParked = () => {
    ms.push(performance.now() - t0);
    if (parkedNow === PARKED) all();
  };
  const runs = Array.from({ length: PARKED }, (_, i) => pool.run(`return await tools.park({ i: ${i} })`, LIMITS, tools));
  await reached;
  onParked = undefined;
  return { runs, ms: ms.sort((a, b) => a - b), totalMs: performance.now() - t0 };
}

async function shortScripts(pool: Pool): Promise<{ sequential: number; concurrent: number }> {
  const code = (i: number): string => `return await tools.echo({ i: ${i} })`;
  let t0 = performance.now();
  for (let i = 0; i < SHORT; i++) must(await pool.run(code(i), LIMITS, tools));
  const sequential = Math.round(SHORT / ((performance.now() - t0) / 1000));
  t0 = performance.now();
  for (const r of await Promise.all(Array.from({ length: SHORT }, (_, i) => pool.run(code(i), LIMITS, tools)))) must(r);
  const concurrent = Math.round(SHORT / ((performance.now() - t0) / 1000));
  return { sequential, concurrent };
}

const rss0 = await settle();
const pool = new ScriptPool({ workers: 2, memoryMb: 64, stackKb: 512 });
for (let i = 0; i < 200; i++) must(await pool.run("return 1", LIMITS, tools)); // warm threads and JIT
const rssIdle = await settle();

const times: number[] = [];
for (let i = 0; i < 1000; i++) {
  const t0 = performance.now();
  must(await pool.run("return 1 + 1", LIMITS, tools));
  times.push(performance.now() - t0);
}
times.sort((a, b) => a - b);

const rssBefore = await settle();
const burst = await parkAll(pool);
const rssParked = await settle();
const parkedRate = await shortScripts(pool);
release();
for (const r of await Promise.all(burst.runs)) must(r);
const idleRate = await shortScripts(pool);
// The same burst again, right after: threads left idle by the first one may still be there.
const again = await parkAll(pool);
release();
for (const r of await Promise.all(again.runs)) must(r);
const threads = pool.threadIds.length;
await pool.close();

// Cold start: a pool of one (one warm thread), and scripts that each park while the next one starts, so
// every new script finds no idle thread (this pool starts a thread for it; a shared-worker pool makes a
// new instance on its one worker). Nothing else runs meanwhile.
const cold: number[] = [];
{
  const one = new ScriptPool({ workers: 1, memoryMb: 64, stackKb: 512 });
  must(await one.run("return 1", LIMITS, tools));
  parkedNow = 0;
  released = new Promise<void>((r) => (release = r));
  const runs: Promise<ScriptResult>[] = [];
  for (let i = 0; i < COLD; i++) {
    const t0 = performance.now();
    const reached = new Promise<void>((r) => (onParked = r));
    runs.push(one.run("return await tools.park({})", LIMITS, tools));
    await reached;
    cold.push(performance.now() - t0);
  }
  onParked = undefined;
  release();
  for (const r of await Promise.all(runs)) must(r);
  await one.close();
}
cold.sort((a, b) => a - b);

console.log(
  JSON.stringify(
    {
      bench: "script-pool",
      root,
      trivial_script_ms: { p50: round(pct(times, 50), 3), p99: round(pct(times, 99), 3), runs: times.length, note: "`return 1 + 1` end to end through ScriptPool.run, warm pool of 2" },
      burst_of_50_parking: {
        first_ms: { p50: round(pct(burst.ms, 50), 1), p99: round(pct(burst.ms, 99), 1), all: round(burst.totalMs, 1) },
        again_ms: { p50: round(pct(again.ms, 50), 1), p99: round(pct(again.ms, 99), 1), all: round(again.totalMs, 1) },
        note: "50 scripts started at once, time from start until each one is waiting on its tool",
      },
      cold_start_ms: { p50: round(pct(cold, 50), 1), max: round(cold[cold.length - 1]!, 1), runs: COLD, note: "a script that finds no idle thread, until it waits on its tool; one at a time" },
      memory_mb: { idle_pool_of_2: mb(rssIdle - rss0), added_by_50_parked: mb(rssParked - rssBefore), per_parked_script: round((rssParked - rssBefore) / PARKED / 2 ** 20, 2), threads_after: threads },
      short_scripts_per_s: { none_parked: idleRate, with_50_parked: parkedRate, scripts: SHORT, note: "one tool call each; sequential = one after another, concurrent = all 200 started at once" },
    },
    null,
    2,
  ),
);
process.exit(0);
