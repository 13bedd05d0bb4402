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

function bootId(): string {
  try {
    return readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
  } catch {
    return "unknown-boot";
  }
}

/**
 * The start identity of process `pid` (`<boot id>:<start ticks>`), or null when it does not exist, is a
 * zombie, or /proc cannot be read. Field 22 of /proc/PID/stat, counted after the `(comm)` field, which may hold spaces.
 */
export function processStart(pid: number): string | null {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return null;
  }
  const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // rest[0] is field 3 (state); field 22 (starttime) is rest[19]
  if (rest[0] === "Z" || rest[0] === "X") return null;
  const ticks = rest[19];
  return ticks ? `${bootId()}:${ticks}` : null;
}

let self: Owner | undefined;

/** This process's identity (computed once). */
export function currentOwner(): Owner {
  self ??= { pid: process.pid, start: processStart(process.pid) };
  return self;
}

/**
 * True when the owner recorded with a row no longer runs: no pid recorded (a row from before owners were
 * recorded), no such process, or a process with that pid but another start identity (the pid was reused).
 */
export function ownerIsGone(o: { pid: number | null; start: string | null }): boolean {
  if (o.pid === null) return true;
  const now = processStart(o.pid);
  if (now === null) {
    // no /proc entry: fall back to a signal-0 probe when /proc is unavailable altogether
    if (processStart(process.pid) !== null) return true;
    try {
      process.kill(o.pid, 0);
      return false;
    } catch (e) {
      return (e as NodeJS.ErrnoException).code === "ESRCH";
    }
  }
  return o.start !== null && o.start !== now;
}
