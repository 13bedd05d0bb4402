/**
 * @module scripts/bench/bounded
 * The worst case of a memory that forgets its oldest entry on every insertion (prints JSON): `--ops`
 * insertions (default 200,000) into a memory of `--limit` ids (default 10,000, the cards' and the feed's),
 * each past the limit forgetting the oldest, done two ways in alternation (`--pairs`, default 3):
 * - `map_keys_next`: a plain `Map` and `map.delete(map.keys().next().value)` (the code replaced; in JSC the
 *   iterator walks every entry deleted since the map last rehashed);
 * - `bounded_map`: src/bounded.ts's `BoundedMap`.
 * Per side: the main thread's CPU (`clock_gettime(CLOCK_THREAD_CPUTIME_ID)` through `bun:ffi`, so time the
 * thread spent preempted on a loaded machine is not counted) in ns per operation over the whole run, and in µs
 * per operation per window of 1,000 operations (median and max: the sawtooth shows in the max).
 * Usage: `bun scripts/bench/bounded.ts [--ops 200000] [--limit 10000] [--pairs 3]`
 */
import { threadCpuNs } from "./thread-cpu.ts";
import { BoundedMap } from "../../src/bounded.ts";
import { arg } from "./args.ts";

const OPS = arg("--ops", 200_000);
const LIMIT = arg("--limit", 10_000);
const PAIRS = arg("--pairs", 3);
const WINDOW = 1000;

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const round = (x: number, d = 2): number => Math.round(x * 10 ** d) / 10 ** d;

interface Memory {
  set(k: string, v: number): void;
}

function plain(): Memory {
  const m = new Map<string, number>();
  return {
    set(k, v) {
      m.set(k, v);
      if (m.size > LIMIT) m.delete(m.keys().next().value!);
    },
  };
}

function bounded(): Memory {
  const m = new BoundedMap<string, number>(LIMIT);
  return { set: (k, v) => void m.set(k, v) };
}

// ids made before timing (the string work is not what is measured)
const ids = Array.from({ length: OPS }, (_, i) => `act_${i.toString(16).padStart(32, "0")}`);

function run(make: () => Memory): { cpu_ns_per_op: number; window_us_median: number; window_us_max: number } {
  const mem = make();
  const windows: number[] = [];
  const c0 = threadCpuNs();
  let w = c0;
  for (let i = 0; i < OPS; i++) {
    mem.set(ids[i]!, i);
    if ((i + 1) % WINDOW === 0) {
      const now = threadCpuNs();
      windows.push((now - w) / 1000 / WINDOW);
      w = now;
    }
  }
  const cpu = (threadCpuNs() - c0) / OPS;
  return { cpu_ns_per_op: round(cpu, 0), window_us_median: round(median(windows)), window_us_max: round(Math.max(...windows)) };
}

const sides: Record<"map_keys_next" | "bounded_map", ReturnType<typeof run>[]> = { map_keys_next: [], bounded_map: [] };
for (let k = 0; k < PAIRS; k++) {
  const order = k % 2 === 0 ? (["map_keys_next", "bounded_map"] as const) : (["bounded_map", "map_keys_next"] as const);
  for (const side of order) sides[side].push(run(side === "bounded_map" ? bounded : plain));
}
const summary = (xs: ReturnType<typeof run>[]) => ({
  cpu_ns_per_op: median(xs.map((x) => x.cpu_ns_per_op)),
  window_us_median: median(xs.map((x) => x.window_us_median)),
  window_us_max: median(xs.map((x) => x.window_us_max)),
  runs: xs,
});
console.log(JSON.stringify({ bench: "bounded", ops: OPS, limit: LIMIT, pairs: PAIRS, map_keys_next: summary(sides.map_keys_next), bounded_map: summary(sides.bounded_map) }, null, 2));
