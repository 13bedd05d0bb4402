/**
 * @module scripts/bench/script-tail
 * A trivial script's latency tail (issue 20: p99 ≤ 1 ms) and the garbage collections behind it (prints JSON).
 * Alternates, in one process each round, N scripts of `return 1 + 1` through `ScriptPool.run` (warm pool of 2,
 * tools unused) with N tasks of its floor: a tinypool pool of 2 whose task makes a bare QuickJS runtime + context,
 * evaluates `1 + 1` and frees them (scripts/bench/script-tail-floor-worker.ts, no airlock code), and N no-op tinypool
 * tasks (tinypool alone). Each figure: p50, p99, p99.9, max (ms), and the collections of every heap in the process
 * while its N ran (JSC's `logGC` lines: count, pauses summed and the longest, per heap), so GC counts stand beside
 * the wall time. The process re-runs itself with `BUN_JSC_logGC=1` to read them.
 * Usage: `bun scripts/bench/script-tail.ts [--n 2000] [--rounds 3] [--only pool,floor,noop]`
 * (`AIRLOCK_BENCH_ROOT=/other/checkout` measures that checkout's `src/script/pool.ts`).
 */
import { spawnSync } from "node:child_process";
import { loadavg } from "node:os";
import { resolve } from "node:path";
import Tinypool from "tinypool";
import type { RunOptions, ScriptPool as Pool } from "../../src/script/pool.ts";

const arg = (name: string, dflt: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && process.argv[i + 1] ? process.argv[i + 1]! : dflt;
};
const N = Number(arg("n", "2000"));
const ROUNDS = Number(arg("rounds", "3"));
const ONLY = arg("only", "pool,floor,noop").split(",");
const MARK = "@@script-tail";

if (process.env.BUN_JSC_logGC !== "1") {
  // parent: run the measuring child with GC logging, then read its stderr section by section
  const child = spawnSync(process.execPath, [import.meta.path, ...process.argv.slice(2)], { env: { ...process.env, BUN_JSC_logGC: "1" }, encoding: "utf8", maxBuffer: 1 << 30 });
  if (child.status !== 0) {
    process.stderr.write(child.stderr.split("\n").filter((l) => !l.startsWith("[GC") && !l.startsWith("Requesting GC") && l !== "GC END!").join("\n"));
    process.exit(child.status ?? 1);
  }
  const gcs: Record<string, { count: number; heaps: Record<string, { n: number; pauseMs: number; maxMs: number }>; pauseMs: number; maxMs: number }> = {};
  let section: string | undefined;
  for (const line of child.stderr.split("\n")) {
    if (line.startsWith(MARK)) {
      const [, what, name] = line.split(" ");
      section = what === "start" ? name : undefined;
      continue;
    }
    const m = section && /^\[GC<(0x[0-9a-f]+)>: START .* p=([0-9.]+)ms/.exec(line);
    if (!m || !section) continue;
    const g = (gcs[section] ??= { count: 0, heaps: {}, pauseMs: 0, maxMs: 0 });
    const h = (g.heaps[m[1]!] ??= { n: 0, pauseMs: 0, maxMs: 0 });
    const p = Number(m[2]);
    g.count++;
    g.pauseMs += p;
    g.maxMs = Math.max(g.maxMs, p);
    h.n++;
    h.pauseMs += p;
    h.maxMs = Math.max(h.maxMs, p);
  }
  const out = JSON.parse(child.stdout) as { rounds: Array<Record<string, Record<string, unknown>>> };
  for (const [r, round] of out.rounds.entries()) {
    for (const [name, fig] of Object.entries(round)) {
      const g = gcs[`${name}#${r}`];
      if (!g || typeof fig !== "object") {
        if (typeof fig === "object") fig.gc = { count: 0 };
        continue;
      }
      const round2 = (x: number): number => Math.round(x * 100) / 100;
      fig.gc = { count: g.count, pause_ms_sum: round2(g.pauseMs), pause_ms_max: round2(g.maxMs), per_heap: Object.values(g.heaps).map((h) => h.n).sort((a, b) => b - a) };
    }
  }
  console.log(JSON.stringify(out, null, 2));
  process.exit(0);
}

const root = resolve(process.env.AIRLOCK_BENCH_ROOT ?? resolve(import.meta.dir, "../.."));
const { ScriptPool } = (await import(resolve(root, "src/script/pool.ts"))) as { ScriptPool: typeof Pool };
const LIMITS: RunOptions = { cpuTimeoutMs: 30_000, wallTimeoutMs: 600_000, maxToolCalls: 1000, maxLogBytes: 1 << 16, maxResultBytes: 1 << 20 };
const tools = async (_name: string, args: unknown): Promise<{ ok: true; result: unknown }> => ({ ok: true, result: args });

const round3 = (x: number): number => Math.round(x * 1000) / 1000;
const pct = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
function figures(times: number[]): { p50: number; p99: number; p999: number; max: number; over_1ms: number } {
  const s = [...times].sort((a, b) => a - b);
  return { p50: round3(pct(s, 50)), p99: round3(pct(s, 99)), p999: round3(pct(s, 99.9)), max: round3(s[s.length - 1]!), over_1ms: s.filter((t) => t > 1).length };
}

async function timed(name: string, r: number, one: () => Promise<unknown>): Promise<Record<string, unknown>> {
  const times: number[] = [];
  process.stderr.write(`${MARK} start ${name}#${r}\n`);
  for (let i = 0; i < N; i++) {
    const t0 = performance.now();
    await one();
    times.push(performance.now() - t0);
  }
  process.stderr.write(`${MARK} end ${name}#${r}\n`);
  return { ...figures(times), runs: N };
}

const pool = new ScriptPool({ workers: 2, memoryMb: 64, stackKb: 512 });
const runScript = async (): Promise<void> => {
  const r = await pool.run("return 1 + 1", LIMITS, tools);
  if (!r.ok || r.value !== 2) throw new Error(`bench script failed: ${JSON.stringify(r)}`);
};
const floor = new Tinypool({ filename: resolve(import.meta.dir, "script-tail-floor-worker.ts"), minThreads: 2, maxThreads: 2, concurrentTasksPerWorker: 1, useAtomics: false });
const floorTask = async (mode: "quickjs" | "noop"): Promise<void> => {
  if ((await floor.run({ mode })) !== 2) throw new Error("floor task failed");
};
// warm threads and JIT on every side
for (let i = 0; i < 300; i++) {
  if (ONLY.includes("pool")) await runScript();
  await floorTask("quickjs");
  await floorTask("noop");
}
const rounds: Array<Record<string, unknown>> = [];
const load: number[] = [loadavg()[0]!];
for (let r = 0; r < ROUNDS; r++) {
  const round: Record<string, unknown> = {};
  // which side goes first alternates between rounds
  const order = r % 2 === 0 ? ["pool", "floor", "noop"] : ["noop", "floor", "pool"];
  for (const name of order) {
    if (!ONLY.includes(name)) continue;
    if (name === "pool") round.pool = await timed("pool", r, runScript);
    else if (name === "floor") round.floor = await timed("floor", r, () => floorTask("quickjs"));
    else round.noop = await timed("noop", r, () => floorTask("noop"));
  }
  if (round.pool && round.floor) round.p99_ratio_to_floor = round3((round.pool as { p99: number }).p99 / (round.floor as { p99: number }).p99);
  rounds.push(round);
  load.push(loadavg()[0]!);
}
const threads = pool.threadIds.length;
await pool.close();
await floor.destroy();
console.log(JSON.stringify({ bench: "script-tail", root, n: N, load_1min: load.map((l) => Math.round(l * 10) / 10), pool_threads_after: threads, rounds }));
process.exit(0);
