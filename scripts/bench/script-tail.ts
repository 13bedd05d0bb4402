/**
 * @module scripts/bench/script-tail
 * A trivial script's latency tail (issue 20: p99 ≤ 1 ms) and the garbage collections behind it (prints JSON).
 * Alternates, each in a child process of its own, N scripts of `return 1 + 1` through `ScriptPool.run` (warm pool of 2,
 * tools unused) with N tasks of its floor: a tinypool pool of 2 whose task makes a bare QuickJS runtime + context,
 * evaluates `1 + 1` and frees them (scripts/bench/script-tail-floor-worker.ts, no airlock code), and N no-op tinypool
 * tasks (tinypool alone). Each figure: p50, p99, p99.9, max (ms), the process's CPU per run (all threads, µs), and the collections of every heap in the process
 * while its N ran (JSC's `logGC` lines: count, pauses summed and the longest, the main thread's and each worker's), so
 * GC counts stand beside the wall time. The children run with `BUN_JSC_logGC=1`; the parent reads their stderr.
 * `steps`: in one thread (no worker), the CPU per script of a bare runtime + context, of the guest the pool prepares
 * (runtime, context, limits, the bridge: script/vm.ts `prepareGuest`), of that guest plus the run of `return 1 + 1`, and
 * of that guest plus a run of `return (await tools.echo(1)) + 1` whose call is answered at once, and of a run of
 * `return 1 + 1` in a guest snapshot (lent, run, its memory written back: script/snapshot.ts), the thread's usual path.
 * Bun runs its own collector timer on every thread (an eden collection about once a second while the heap changes), so
 * a count per N mixes garbage with the run's length; `--gc-timer off` turns that timer off in the children
 * (`BUN_GC_TIMER_DISABLE`), leaving the collections the garbage itself triggers (compare sides with it; use a larger `--n`).
 * `--script calls`: the pool's script makes one tool call (`return (await tools.echo(1)) + 1`, the host echoes its
 * arguments) instead of `return 1 + 1` (the floor and steps stay trivial).
 * Usage: `bun scripts/bench/script-tail.ts [--n 2000] [--rounds 3] [--only pool,floor,noop,steps] [--gc-timer on|off] [--script trivial|calls] [--floor-work-us 0] [--floor-after-us 0]`
 * (`AIRLOCK_BENCH_ROOT=/other/checkout` measures that checkout's `src/script/pool.ts`).
 */
import { spawnSync } from "node:child_process";
import { loadavg } from "node:os";
import { resolve } from "node:path";
import Tinypool from "tinypool";
import type { RunOptions, ScriptPool as Pool } from "../../src/script/pool.ts";
import { processCpuPerCall } from "./thread-cpu.ts";

const arg = (name: string, dflt: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && process.argv[i + 1] ? process.argv[i + 1]! : dflt;
};
const N = Number(arg("n", "2000"));
const ROUNDS = Number(arg("rounds", "3"));
const ONLY = arg("only", "pool,floor,noop,steps").split(",");
/** `off`: the children run with Bun's collector timer disabled (`BUN_GC_TIMER_DISABLE`), so only garbage triggers a collection. */
const GC_TIMER = arg("gc-timer", "on");
if (GC_TIMER !== "on" && GC_TIMER !== "off") throw new Error("--gc-timer is on or off");
/** `trivial` (`return 1 + 1`) or `calls` (one tool call, then `+ 1`): what the pool side runs. */
const SCRIPT = arg("script", "trivial");
if (SCRIPT !== "trivial" && SCRIPT !== "calls") throw new Error("--script is trivial or calls");
/**
 * µs of busy work the floor's tasks do inside each task (`--floor-work-us`) or just after it (`--floor-after-us`): what a
 * given amount of work in or after a task costs the floor's p50 and p99, on this machine (docs/performance.md,
 * "thirteenth session").
 */
const FLOOR_WORK_US = Number(arg("floor-work-us", "0"));
const FLOOR_AFTER_US = Number(arg("floor-after-us", "0"));
if (!(FLOOR_WORK_US >= 0 && FLOOR_AFTER_US >= 0)) throw new Error("--floor-work-us and --floor-after-us are µs >= 0");
const MARK = "@@script-tail";

type Gc = { count: number; pause_ms_sum: number; pause_ms_max: number; main: number; workers: number[] };

/** The collections in a child's stderr between its markers: per heap; the main thread's heap is the one whose forced full collection came last before the start marker. */
function readGcs(stderr: string): Record<string, Gc> {
  const out: Record<string, Gc> = {};
  let section: string | undefined;
  let lastHeap: string | undefined;
  let mainHeap: string | undefined;
  let heaps: Record<string, number> = {};
  let g: Gc | undefined;
  for (const line of stderr.split("\n")) {
    const mark = line.indexOf(MARK);
    if (mark >= 0) {
      const [, what, name] = line.slice(mark).split(" ");
      if (what === "start") {
        section = name;
        mainHeap = lastHeap;
        heaps = {};
        g = out[name!] = { count: 0, pause_ms_sum: 0, pause_ms_max: 0, main: 0, workers: [] };
      } else if (g) {
        g.main = mainHeap ? (heaps[mainHeap] ?? 0) : 0;
        g.workers = Object.entries(heaps).filter(([h]) => h !== mainHeap).map(([, n]) => n).sort((a, b) => b - a);
        g.pause_ms_sum = Math.round(g.pause_ms_sum * 100) / 100;
        section = undefined;
        g = undefined;
      }
      continue;
    }
    const m = /\[GC<(0x[0-9a-f]+)>: START .*? p=([0-9.]+)ms/.exec(line);
    if (!m) continue;
    if (line.includes("FullCollection")) lastHeap = m[1]!; // the main thread's forced full collection before the marker
    if (!section || !g) continue;
    const p = Number(m[2]);
    g.count++;
    g.pause_ms_sum += p;
    g.pause_ms_max = Math.max(g.pause_ms_max, Math.round(p * 100) / 100);
    heaps[m[1]!] = (heaps[m[1]!] ?? 0) + 1;
  }
  return out;
}

if (process.env.BUN_JSC_logGC !== "1") {
  // parent: each side in a child process of its own (its heaps are only its own), with GC logging; sides alternate
  const rounds: Array<Record<string, unknown>> = [];
  const load: number[] = [Math.round(loadavg()[0]! * 10) / 10];
  let threads = 0;
  for (let r = 0; r < ROUNDS; r++) {
    const round: Record<string, unknown> = {};
    const order = r % 2 === 0 ? ["pool", "floor", "noop", "steps"] : ["steps", "noop", "floor", "pool"];
    for (const name of order) {
      if (!ONLY.includes(name)) continue;
      const env: Record<string, string | undefined> = { ...process.env, BUN_JSC_logGC: "1" };
      // Bun's own collector timer (an eden collection about every second on each thread whose heap changed) off: what
      // is left is the collections the garbage itself triggers, a count that does not grow with the run's length
      if (GC_TIMER === "off") env.BUN_GC_TIMER_DISABLE = "1";
      const child = spawnSync(process.execPath, [import.meta.path, "--n", String(N), "--only", name, "--script", SCRIPT, "--floor-work-us", String(FLOOR_WORK_US), "--floor-after-us", String(FLOOR_AFTER_US)], { env, encoding: "utf8", maxBuffer: 1 << 30 });
      if (child.status !== 0) {
        process.stderr.write(child.stderr.split("\n").filter((l) => !l.includes("[GC<") && !l.startsWith("Requesting GC") && l !== "GC END!").join("\n"));
        process.exit(child.status ?? 1);
      }
      const fig = JSON.parse(child.stdout) as Record<string, unknown>;
      threads = Math.max(threads, Number(fig.threads ?? 0));
      delete fig.threads;
      if (name !== "steps") fig.gc = readGcs(child.stderr)[name] ?? null;
      round[name] = fig;
    }
    if (round.pool && round.floor) round.p99_ratio_to_floor = Math.round(((round.pool as { p99: number }).p99 / (round.floor as { p99: number }).p99) * 1000) / 1000;
    rounds.push(round);
    load.push(Math.round(loadavg()[0]! * 10) / 10);
  }
  console.log(JSON.stringify({ bench: "script-tail", root: process.env.AIRLOCK_BENCH_ROOT ?? resolve(import.meta.dir, "../.."), n: N, gc_timer: GC_TIMER, script: SCRIPT, floor_work_us: FLOOR_WORK_US, floor_after_us: FLOOR_AFTER_US, load_1min: load, pool_threads_after: threads, rounds }, null, 2));
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

async function timed(name: string, one: () => Promise<unknown>): Promise<Record<string, unknown>> {
  const times: number[] = [];
  const cpu0 = process.cpuUsage();
  process.stderr.write(`${MARK} start ${name}\n`);
  for (let i = 0; i < N; i++) {
    const t0 = performance.now();
    await one();
    times.push(performance.now() - t0);
  }
  process.stderr.write(`${MARK} end ${name}\n`);
  const cpu = process.cpuUsage(cpu0);
  // CPU of every thread of the process per script, µs: what load does not distort (beside the wall times)
  return { ...figures(times), runs: N, cpu_us_per_run: Math.round((cpu.user + cpu.system) / N) };
}

const only = ONLY[0]!;
if (only === "steps") {
  // One thread, no worker, no tinypool: the CPU of each part of a script's guest, µs per script (the process's CPU)
  const { Instances } = (await import(resolve(root, "src/script/instances.ts"))) as typeof import("../../src/script/instances.ts");
  const { prepareGuest, ScriptRun } = (await import(resolve(root, "src/script/vm.ts"))) as typeof import("../../src/script/vm.ts");
  const inst = await (await Instances.create(64)).take();
  const meter = new Float64Array(8);
  const cpuPer = (f: () => unknown): Promise<number> => processCpuPerCall(N, f);
  const bare = await cpuPer(() => {
    const rt = inst.module.newRuntime();
    rt.setMemoryLimit(64 * 2 ** 20);
    const ctx = rt.newContext();
    ctx.dispose();
    rt.dispose();
  });
  const prepared = await cpuPer(() => prepareGuest(inst.module, 64 * 2 ** 20, 512 * 1024).dispose());
  const whole = await cpuPer(async () => {
    const run = new ScriptRun(inst.module, { code: "return 1 + 1", limits: LIMITS, memoryBytes: 64 * 2 ** 20, stackBytes: 512 * 1024, meter, memoryExhausted: () => false, post: () => {} });
    run.start(prepareGuest(inst.module, 64 * 2 ** 20, 512 * 1024));
    const o = await run.done;
    if (!o.ok) throw new Error(`bench script failed: ${JSON.stringify(o)}`);
  });
  // the same with one tool call answered at once (the loop the worker runs, without its channel)
  const withCall = await cpuPer(async () => {
    const pending: number[] = [];
    const run = new ScriptRun(inst.module, { code: "return (await tools.echo(1)) + 1", limits: LIMITS, memoryBytes: 64 * 2 ** 20, stackBytes: 512 * 1024, meter, memoryExhausted: () => false, post: (m) => pending.push(m.id) });
    // the guest a thread prepares after a script that named tools (`whole`; a checkout without that argument ignores it)
    run.start((prepareGuest as (...a: unknown[]) => ReturnType<typeof prepareGuest>)(inst.module, 64 * 2 ** 20, 512 * 1024, true));
    while (!run.finished && pending.length > 0) run.reply(pending.shift()!, '{"ok":true,"result":1}');
    const o = await run.done;
    if (!o.ok || o.json !== "2") throw new Error(`bench script failed: ${JSON.stringify(o)}`);
  });
  // a script in a guest snapshot (the thread's usual path since the fourteenth session: lend, run, write the memory
  // back); null for a checkout without src/script/snapshot.ts
  let snapshotRun: number | null = null;
  const snapshotModule = resolve(root, "src/script/snapshot.ts");
  if (await Bun.file(snapshotModule).exists()) {
    const { GuestSnapshot } = (await import(snapshotModule)) as typeof import("../../src/script/snapshot.ts");
    const pool = await Instances.create(64);
    const fresh = await pool.fresh();
    const snap = GuestSnapshot.take(fresh, prepareGuest(fresh.module, 64 * 2 ** 20, 512 * 1024, true), pool.layout);
    if (!snap) throw new Error("no guest snapshot on this build");
    snapshotRun = await cpuPer(async () => {
      const run = new ScriptRun(fresh.module, { code: "return 1 + 1", limits: LIMITS, memoryBytes: 64 * 2 ** 20, stackBytes: 512 * 1024, meter, memoryExhausted: () => false, post: () => {}, releaseLater: true });
      run.start(snap.lend());
      const o = await run.done;
      if (!o.ok || !run.release() || !snap.restore()) throw new Error(`bench script failed: ${JSON.stringify(o)}`);
    });
  }
  console.log(JSON.stringify({ runs: N, bare_runtime_context_us: bare, prepared_guest_us: prepared, prepared_guest_and_run_us: whole, prepared_guest_and_call_us: withCall, snapshot_run_us: snapshotRun, threads: 0 }));
  process.exit(0);
}
const pool = only === "pool" ? new ScriptPool({ workers: 2, memoryMb: 64, stackKb: 512 }) : undefined;
const runScript = async (): Promise<void> => {
  const r = await pool!.run(SCRIPT === "calls" ? "return (await tools.echo(1)) + 1" : "return 1 + 1", LIMITS, tools);
  if (!r.ok || r.value !== 2) throw new Error(`bench script failed: ${JSON.stringify(r)}`);
};
const floor = only === "pool" ? undefined : new Tinypool({ filename: resolve(import.meta.dir, "script-tail-floor-worker.ts"), minThreads: 2, maxThreads: 2, concurrentTasksPerWorker: 1, useAtomics: false });
const floorTask = async (mode: "quickjs" | "noop"): Promise<void> => {
  if ((await floor!.run(mode === "quickjs" ? { mode, workUs: FLOOR_WORK_US, afterUs: FLOOR_AFTER_US } : { mode })) !== 2) throw new Error("floor task failed");
};
const one = only === "pool" ? runScript : only === "floor" ? () => floorTask("quickjs") : () => floorTask("noop");
for (let i = 0; i < 300; i++) await one(); // warm threads and JIT
Bun.gc(true); // marks the main thread's heap in the log (the last collection before the start marker)
const fig = await timed(only, one);
const threads = pool?.threadIds.length ?? 2;
await pool?.close();
await floor?.destroy();
console.log(JSON.stringify({ ...fig, threads }));
process.exit(0);
