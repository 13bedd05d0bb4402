/**
 * @module test/integration/launcher-helpers
 * Helpers for the launcher's real-process tests: find host pids by a marker in their command line
 * (waiting for them to appear), and tell whether a pid is still a live process.
 */
import { readdirSync, readFileSync } from "node:fs";

/** Host pids running `sleep <marker>` (not the shells whose command text merely mentions it). */
export function pidsWith(marker: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync("/proc")) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      if (argv[0]?.split("/").pop() === "sleep" && argv[1] === marker) out.push(pid);
    } catch {
      // exited
    }
  }
  return out;
}

/** Waits (polling /proc, no fixed sleep) until at least `n` processes run `sleep <marker>`; throws after `ms`. */
export async function waitForPids(marker: string, n: number, ms = 5000): Promise<number[]> {
  const deadline = Date.now() + ms;
  for (;;) {
    const pids = pidsWith(marker);
    if (pids.length >= n) return pids;
    if (Date.now() > deadline) throw new Error(`only ${pids.length} of ${n} processes with "${marker}" appeared within ${ms} ms`);
    await Bun.sleep(10);
  }
}

/**
 * True when `pid` is a running process: `kill -0` succeeds and it is not a zombie. (A killed process
 * whose parent is gone is reparented to this machine's PID 1, which may not reap it; a zombie runs nothing.)
 */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

/** A marker unlikely to collide: a fractional `sleep` duration such as `300.4821937`. */
export function sleepMarker(): string {
  return `300.${Math.floor(Math.random() * 1e9)}`;
}
