/**
 * @module store/owner
 * Which process owns a row (a running turn or run): its pid plus a start identity read from
 * `/proc/PID/stat` (boot id + start time in clock ticks), so a pid reused by another process after
 * a reboot or a wrap-around is not mistaken for the owner. Start-up recovery uses `ownerIsGone`.
 */
import { readFileSync } from "node:fs";

/** A process identity as stored with a turn or run: `pid` and `start` (`<boot id>:<start ticks>`; null when unknown). */
export interface Owner {
  pid: number;
  start: string | null;
}

let boot: string | undefined;

/** This machine's boot id, read once per process (it cannot change while the process runs). */
function bootId(): string {
  if (boot !== undefined) return boot;
  try {
    boot = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
  } catch {
    boot = "unknown-boot";
  }
  return boot;
}

/** State (field 3) and start identity of process `pid` from /proc/PID/stat; null when it cannot be read. */
function readStat(pid: number): { state: string; start: string | null } | null {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return null;
  }
  // fields after the `(comm)` field, which may hold spaces: rest[0] is field 3 (state), rest[19] field 22 (starttime)
  const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ticks = rest[19];
  return { state: rest[0] ?? "?", start: ticks ? `${bootId()}:${ticks}` : null };
}

/**
 * The start identity of process `pid` (`<boot id>:<start ticks>`), or null when it does not exist, is a
 * zombie, or /proc cannot be read.
 */
export function processStart(pid: number): string | null {
  const st = readStat(pid);
  return st && st.state !== "Z" && st.state !== "X" ? st.start : null;
}

let self: Owner | undefined;

/** This process's identity (computed once). */
export function currentOwner(): Owner {
  self ??= { pid: process.pid, start: processStart(process.pid) };
  return self;
}

/**
 * True when the owner recorded with a row no longer runs: no pid recorded (a row from before owners were
 * recorded), no such process, a zombie, or a process with that pid but another start identity (the pid was
 * reused). When /proc hides the process (hidepid) but a signal-0 probe finds it, it counts as alive: recovery
 * leaves a turn alone rather than interrupt one that may still run.
 */
export function ownerIsGone(o: { pid: number | null; start: string | null }): boolean {
  if (o.pid === null) return true;
  const st = readStat(o.pid);
  if (st === null) {
    try {
      process.kill(o.pid, 0);
      return false;
    } catch (e) {
      return (e as NodeJS.ErrnoException).code === "ESRCH";
    }
  }
  if (st.state === "Z" || st.state === "X") return true;
  return o.start !== null && st.start !== null && o.start !== st.start;
}
