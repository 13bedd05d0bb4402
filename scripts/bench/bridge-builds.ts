/**
 * @module scripts/bench/bridge-builds
 * The guest cost of the bridge's two builds (src/script/bridge.ts: the one piece for a script that names `tools`, the
 * core for any other), this checkout against another in the same process (prints JSON). One thread, no worker: each
 * task is what a script's thread does for its guest (script/vm.ts `prepareGuest`, then `ScriptRun` with its calls
 * answered at once). The two sides alternate in blocks of `--block` runs (`--blocks` of them a side, the order
 * swapped every block), each block timed in this thread's CPU (thread-cpu.ts: time spent preempted on a loaded
 * machine does not count) and in the process's (all threads: Bun's collector and JIT threads too), so both sides see
 * the same minutes; per side and clock the 10th percentile and the median of the blocks' µs per run, and after ÷ before.
 * Tasks: `prep_whole` / `prep_core` (a guest made and freed), `call_whole` / `call_core` (one tool call,
 * `return (await tools.echo(1)) + 1`; "core" writes `tools` as `\u0074ools`), `calls20_whole` (20 sequential calls
 * and a `console.log`; blocks a fifth as long).
 * Usage: `AIRLOCK_BENCH_BASE=/other/checkout bun scripts/bench/bridge-builds.ts [--blocks 300] [--block 20]`.
 * Linux only (thread CPU clock).
 */
import { resolve } from "node:path";
import type { RunOptions } from "../../src/script/pool.ts";
import { arg } from "./args.ts";
import { threadCpuNs } from "./thread-cpu.ts";

const BLOCKS = arg("--blocks", 300);
const BLOCK = arg("--block", 20);
if (!(Number.isInteger(BLOCKS) && BLOCKS > 0 && Number.isInteger(BLOCK) && BLOCK > 0)) throw new Error("--blocks and --block want positive integers");
const base = process.env.AIRLOCK_BENCH_BASE;
if (!base) throw new Error("AIRLOCK_BENCH_BASE=/other/checkout is required (the before side)");
const LIMITS: RunOptions = { cpuTimeoutMs: 10_000, wallTimeoutMs: 10_000, maxToolCalls: 1000, maxLogBytes: 1 << 16, maxResultBytes: 1 << 20 };
const MEMORY = 64 * 2 ** 20;
const STACK = 512 * 1024;

type Task = () => Promise<void> | void;

/** The tasks, on `root`'s script/vm.ts and its own QuickJS instance. */
async function tasksOf(root: string): Promise<Record<string, Task>> {
  const { Instances } = (await import(resolve(root, "src/script/instances.ts"))) as typeof import("../../src/script/instances.ts");
  const { prepareGuest, ScriptRun } = (await import(resolve(root, "src/script/vm.ts"))) as typeof import("../../src/script/vm.ts");
  const inst = await (await Instances.create(64)).take();
  const meter = new Float64Array(8);
  const run = (calls: number, whole: boolean): Task => async () => {
    const text = calls === 1 ? "return (await tools.echo(1)) + 1" : `let s = 0; for (let i = 0; i < ${calls}; i++) s += await tools.echo(1); console.log(s); return s + 1`;
    const pending: number[] = [];
    const r = new ScriptRun(inst.module, { code: whole ? text : text.replaceAll("tools", "\\u0074ools"), limits: LIMITS, memoryBytes: MEMORY, stackBytes: STACK, meter, memoryExhausted: () => false, post: (m) => pending.push(m.id) });
    r.start(prepareGuest(inst.module, MEMORY, STACK, whole));
    while (!r.finished && pending.length > 0) r.reply(pending.shift()!, '{"ok":true,"result":1}');
    const o = await r.done;
    if (!o.ok || o.json !== String(calls + 1)) throw new Error(`bench script failed: ${JSON.stringify(o)}`);
  };
  return {
    prep_whole: () => prepareGuest(inst.module, MEMORY, STACK, true).dispose(),
    prep_core: () => prepareGuest(inst.module, MEMORY, STACK, false).dispose(),
    call_whole: run(1, true),
    call_core: run(1, false),
    calls20_whole: run(20, true),
  };
}

const sides = [await tasksOf(base), await tasksOf(resolve(import.meta.dir, "../.."))];
const quantile = (xs: number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) * p)]!;
const round = (x: number, d = 1): number => Math.round(x * 10 ** d) / 10 ** d;
const out: Record<string, unknown> = {};
for (const name of Object.keys(sides[0]!)) {
  const per = name.startsWith("calls20") ? Math.max(1, Math.floor(BLOCK / 5)) : BLOCK;
  const us: [number[], number[]] = [[], []];
  const all: [number[], number[]] = [[], []];
  for (const s of [0, 1]) for (let i = 0; i < 50; i++) await sides[s]![name]!(); // warm
  for (let b = 0; b < BLOCKS; b++) {
    for (const s of b % 2 === 0 ? [0, 1] : [1, 0]) {
      const task = sides[s]![name]!;
      const p0 = process.cpuUsage();
      const t0 = threadCpuNs();
      for (let i = 0; i < per; i++) await task();
      us[s]!.push((threadCpuNs() - t0) / 1000 / per);
      const p = process.cpuUsage(p0);
      all[s]!.push((p.user + p.system) / per);
    }
  }
  const figures = ([before, after]: [number[], number[]]) => ({
    before_p10_us: round(quantile(before, 0.1)), before_p50_us: round(quantile(before, 0.5)),
    after_p10_us: round(quantile(after, 0.1)), after_p50_us: round(quantile(after, 0.5)),
    ratio_p10: round(quantile(after, 0.1) / quantile(before, 0.1), 3), ratio_p50: round(quantile(after, 0.5) / quantile(before, 0.5), 3),
  });
  out[name] = { thread: figures(us), process: figures(all) };
}
console.log(JSON.stringify({ bench: "bridge-builds", before: base, after: resolve(import.meta.dir, "../.."), blocks: BLOCKS, block: BLOCK, tasks: out }, null, 2));
process.exit(0);
