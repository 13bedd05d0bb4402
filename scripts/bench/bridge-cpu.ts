/**
 * @module scripts/bench/bridge-cpu
 * Where a sequential raw tool call's time goes, by thread (prints JSON): one script of `--calls` sequential
 * `tools.echo` calls answered at once on the main thread (`workers: 1`), run `--rounds` times; for each run the CPU
 * each thread of the process used (`/proc/self/task/TID/schedstat`, ns of run time: what the thread ran, not how long
 * it waited for a core), per call, split into the main thread, the busiest other thread (the sandbox worker: its
 * figure includes its spin while it waits for the reply, channel.ts `SPIN_MS`) and the rest (Bun's and JSC's helper
 * threads), with the run's calls/s and the load average. With `AIRLOCK_BENCH_BASE=/other/checkout` that checkout's
 * pool runs in the same process, each round alternating the two sides (a before/after in the same minutes). The
 * median run of each side is its figure; the per-run values are printed too.
 *
 * Usage: `[AIRLOCK_BENCH_BASE=/other/checkout] bun scripts/bench/bridge-cpu.ts [--calls 10000] [--rounds 5]`. Linux
 * only (procfs).
 */
import { readdirSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import type { RunOptions, ScriptPool as Pool } from "../../src/script/pool.ts";
import type { ToolOutcome } from "../../src/script/protocol.ts";

const arg = (name: string, dflt: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  const v = i < 0 ? dflt : Number(process.argv[i + 1]);
  if (!Number.isInteger(v) || v < 1) throw new Error(`--${name} wants a positive integer`);
  return v;
};
const CALLS = arg("calls", 10_000);
const ROUNDS = arg("rounds", 5);
const LIMITS: RunOptions = { cpuTimeoutMs: 60_000, wallTimeoutMs: 600_000, maxToolCalls: 10_000_000, maxLogBytes: 1 << 16, maxResultBytes: 1 << 20 };

/** Run time in ns of every thread of this process, by thread id. */
function threadNs(): Map<number, number> {
  const out = new Map<number, number>();
  for (const tid of readdirSync("/proc/self/task")) {
    try {
      out.set(Number(tid), Number(readFileSync(`/proc/self/task/${tid}/schedstat`, "utf8").split(" ")[0]));
    } catch {
      // the thread ended meanwhile
    }
  }
  return out;
}
const loadavg = (): number => Number(readFileSync("/proc/loadavg", "utf8").split(" ")[0]);

const echo = async (_n: string, args: unknown): Promise<ToolOutcome> => ({ ok: true, result: args });
const code = `for (let i = 0; i < ${CALLS}; i++) await tools.echo({ i }); return 1;`;
type Run = { calls_per_s: number; main_us: number; worker_us: number; other_us: number; load: number };
type Side = { root: string; pool: Pool; runs: Run[] };
const sides: Side[] = [];
for (const root of [resolve(import.meta.dir, "../.."), ...(process.env.AIRLOCK_BENCH_BASE ? [resolve(process.env.AIRLOCK_BENCH_BASE)] : [])]) {
  const { ScriptPool } = (await import(resolve(root, "src/script/pool.ts"))) as { ScriptPool: typeof Pool };
  sides.push({ root, pool: new ScriptPool({ workers: 1, memoryMb: 64, stackKb: 512 }), runs: [] });
}
const must = async (pool: Pool): Promise<void> => {
  const r = await pool.run(code, LIMITS, echo);
  if (!r.ok) throw new Error(`bench script failed: ${JSON.stringify(r.error)}`);
};
for (const side of sides) await must(side.pool); // warm: the thread, its instance, the JIT on both sides
const pid = process.pid;
for (let k = 0; k < ROUNDS; k++) {
  for (const side of k % 2 === 0 ? sides : [...sides].reverse()) {
    const load = loadavg();
    const before = threadNs();
    const t0 = performance.now();
    await must(side.pool);
    const ms = performance.now() - t0;
    const after = threadNs();
    let main = 0;
    let worker = 0;
    let other = 0;
    for (const [tid, ns] of after) {
      const d = ns - (before.get(tid) ?? 0);
      if (tid === pid) main = d;
      else if (d > worker) {
        other += worker;
        worker = d;
      } else other += d;
    }
    const us = (ns: number): number => Math.round((ns / CALLS / 1000) * 10) / 10;
    side.runs.push({ calls_per_s: Math.round((CALLS / ms) * 1000), main_us: us(main), worker_us: us(worker), other_us: us(other), load });
  }
}
for (const side of sides) await side.pool.close();
const median = (runs: Run[], f: (r: Run) => number): number => {
  const s = runs.map(f).sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};
console.log(
  JSON.stringify({
    calls: CALLS,
    rounds: ROUNDS,
    sides: sides.map(({ root, runs }) => ({
      root,
      median: { calls_per_s: median(runs, (r) => r.calls_per_s), main_us_per_call: median(runs, (r) => r.main_us), worker_us_per_call: median(runs, (r) => r.worker_us), other_us_per_call: median(runs, (r) => r.other_us) },
      runs,
    })),
  }),
);
