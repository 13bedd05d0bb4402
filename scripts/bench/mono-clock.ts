/**
 * @module scripts/bench/mono-clock
 * One clock that two processes on this machine share: CLOCK_MONOTONIC (`clock_gettime(2)`, Linux), in ms as a
 * double (ns resolution kept to ~0.1 µs at a day's uptime). Bun's `process.hrtime` and `Bun.nanoseconds` start at
 * each process's own start, and `performance.timeOrigin + performance.now()` rests on each process's reading of the
 * wall clock at its start, so neither lets one process timestamp a send and another its receipt.
 * Through `bun:ffi` (libc): ~1.7 µs a call on the 2 vCPU EPYC this was written on.
 * @throws Error at import when libc or `clock_gettime` cannot be loaded, or the call fails (not Linux/glibc).
 */
import { dlopen, ptr } from "bun:ffi";

const CLOCK_MONOTONIC = 1;
const libc = dlopen("libc.so.6", { clock_gettime: { args: ["i32", "ptr"], returns: "i32" } });
const ts = new BigInt64Array(2);
const tsPtr = ptr(ts);

/** CLOCK_MONOTONIC now, ms (the same origin in every process of this boot). @throws Error when the call fails. */
export function monoMs(): number {
  if (libc.symbols.clock_gettime(CLOCK_MONOTONIC, tsPtr) !== 0) throw new Error("clock_gettime(CLOCK_MONOTONIC) failed");
  return Number(ts[0]) * 1e3 + Number(ts[1]) / 1e6;
}

monoMs();
