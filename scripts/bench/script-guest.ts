/**
 * @module scripts/bench/script-guest
 * The CPU of one script's guest, this checkout against another (prints JSON), in one process and one thread (no
 * worker), the two sides' rounds interleaved so both see the same minutes of a busy machine. Per round and side, µs
 * of the process's CPU per script over `--n` scripts: a bare runtime + context (the floor), the guest the pool
 * prepares (`prepareGuest`: runtime, context, limits, the bridge) and that guest plus the run of `return 1 + 1`.
 * Each figure is given as its minimum over the rounds (what load inflates least) and its median.
 * Usage: `AIRLOCK_BENCH_BASE=/other/checkout bun scripts/bench/script-guest.ts [--n 1500] [--rounds 7]`.
 */
import { loadavg } from "node:os";
import { resolve } from "node:path";
import { arg } from "./args.ts";
import { processCpuPerCall } from "./thread-cpu.ts";

const N = arg("--n", 1500);
const ROUNDS = arg("--rounds", 7);
const base = process.env.AIRLOCK_BENCH_BASE;
if (!base) {
  process.stderr.write("set AIRLOCK_BENCH_BASE to the checkout to compare with (e.g. a worktree of main)\n");
  process.exit(2);
}
const LIMITS = { cpuTimeoutMs: 30_000, wallTimeoutMs: 600_000, maxToolCalls: 1000, maxLogBytes: 1 << 16, maxResultBytes: 1 << 20 };
const MEMORY = 64 * 2 ** 20;
const STACK = 512 * 1024;

type Side = { bare: () => void; prepared: () => void; run: () => Promise<void> };
async function side(root: string): Promise<Side> {
  const { Instances } = (await import(resolve(root, "src/script/instances.ts"))) as typeof import("../../src/script/instances.ts");
  const { prepareGuest, ScriptRun } = (await import(resolve(root, "src/script/vm.ts"))) as typeof import("../../src/script/vm.ts");
  const inst = await (await Instances.create(64)).take();
  const meter = new Float64Array(8);
  return {
    bare: () => {
      const rt = inst.module.newRuntime();
      rt.setMemoryLimit(MEMORY);
      rt.setMaxStackSize(STACK);
      rt.newContext().dispose();
      rt.dispose();
    },
    prepared: () => prepareGuest(inst.module, MEMORY, STACK).dispose(),
    run: async () => {
      const run = new ScriptRun(inst.module, { code: "return 1 + 1", limits: LIMITS, memoryBytes: MEMORY, stackBytes: STACK, meter, memoryExhausted: () => false, post: () => {} });
      run.start(prepareGuest(inst.module, MEMORY, STACK));
      const o = await run.done;
      if (!o.ok) throw new Error(`bench script failed: ${JSON.stringify(o)}`);
    },
  };
}

const sides: Record<string, Side> = { this: await side(resolve(import.meta.dir, "../..")), base: await side(base) };
const cpuPer = (f: () => unknown): Promise<number> => processCpuPerCall(N, f);
const figs: Record<string, Record<string, number[]>> = { this: { bare: [], prepared: [], run: [] }, base: { bare: [], prepared: [], run: [] } };
const load = [Math.round(loadavg()[0]! * 10) / 10];
for (let r = 0; r < ROUNDS; r++) {
  for (const name of r % 2 === 0 ? ["this", "base"] : ["base", "this"]) {
    const s = sides[name]!;
    for (const step of ["bare", "prepared", "run"] as const) figs[name]![step]!.push(await cpuPer(s[step]));
  }
  load.push(Math.round(loadavg()[0]! * 10) / 10);
}
const summary = (xs: number[]): { min: number; median: number; all: number[] } => {
  const s = [...xs].sort((a, b) => a - b);
  return { min: s[0]!, median: s[Math.floor(s.length / 2)]!, all: xs };
};
const out: Record<string, Record<string, unknown>> = {};
for (const [name, steps] of Object.entries(figs)) out[name] = Object.fromEntries(Object.entries(steps).map(([k, v]) => [`${k}_us`, summary(v)]));
console.log(JSON.stringify({ bench: "script-guest", base, n: N, rounds: ROUNDS, load_1min: load, ...out }, null, 2));
process.exit(0);
