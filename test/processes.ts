/**
 * @module test/processes
 * Host processes seen from a test: which ones still run with a marker in their command line, and a
 * bounded wait on a condition (an event polled, never a clock asserted).
 */
import { readdirSync, readFileSync } from "node:fs";

/**
 * Pids (other than this process) whose command line holds `marker`, arguments joined by spaces;
 * zombies are left out (they no longer run).
 */
export function processesWith(marker: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync("/proc")) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      if (stat[stat.lastIndexOf(")") + 2] === "Z") continue;
      if (readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").includes(marker)) pids.push(pid);
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/**
 * Resolves once `cond()` holds, polling every `stepMs`; throws `timed out waiting for <what>` after
 * `limitMs` (a bound against hanging, never an expectation on speed).
 */
export async function waitFor(cond: () => boolean, what: string, limitMs = 60_000, stepMs = 20): Promise<void> {
  const deadline = Date.now() + limitMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(stepMs);
  }
}
