/**
 * @module scripts/bench/thread-cpu
 * The calling thread's CPU time, for benches whose figure must not count time the thread spent preempted on a
 * loaded machine: Linux `clock_gettime(CLOCK_THREAD_CPUTIME_ID)` (= 3) through bun:ffi.
 */
import { dlopen, FFIType, ptr } from "bun:ffi";

const libc = dlopen(process.platform === "darwin" ? "libc.dylib" : "libc.so.6", { clock_gettime: { args: [FFIType.i32, FFIType.ptr], returns: FFIType.i32 } });
const tsBuf = new BigInt64Array(2);
const tsPtr = ptr(tsBuf);

/** The calling thread's CPU time in ns. */
export function threadCpuNs(): number {
  libc.symbols.clock_gettime(3, tsPtr);
  return Number(tsBuf[0]) * 1e9 + Number(tsBuf[1]);
}

/**
 * The process's CPU (all threads, user + system) per call of `f`, µs, rounded: `warm` calls untimed, then `n` timed,
 * one after another (each awaited).
 */
export async function processCpuPerCall(n: number, f: () => unknown, warm = 200): Promise<number> {
  for (let i = 0; i < warm; i++) await f();
  const c0 = process.cpuUsage();
  for (let i = 0; i < n; i++) await f();
  const c = process.cpuUsage(c0);
  return Math.round((c.user + c.system) / n);
}
