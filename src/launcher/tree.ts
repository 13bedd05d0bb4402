/**
 * @module launcher/tree
 * The life of a host process tree: kill it whole (descendants, process group, session), find and
 * kill processes that escaped it but still hold its output pipes, wait until they are gone, and hold
 * airlock's end of a bubblewrap lifeline.
 */
import type { ChildProcess } from "node:child_process";
import { readdirSync, readFileSync, readlinkSync } from "node:fs";

/** One process as seen in /proc: parent, process group, session. */
interface ProcInfo {
  ppid: number;
  pgid: number;
  sid: number;
}

function procTable(): Map<number, ProcInfo> {
  const table = new Map<number, ProcInfo>();
  for (const name of readdirSync("/proc")) {
    const pid = Number(name);
    if (!Number.isInteger(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      // "pid (comm) state ppid pgrp session …" — comm may hold spaces and parens: split after the last ')'.
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      table.set(pid, { ppid: Number(f[1]), pgid: Number(f[2]), sid: Number(f[3]) });
    } catch {
      // exited while we looked
    }
  }
  return table;
}

/**
 * Kills the process tree rooted at `rootPid` (a process-group and session leader): every descendant
 * by parent link — including `setsid` children and ones that ignore SIGTERM — and every member of its
 * process group and session. Freezes the tree with SIGSTOP first (re-scanning until no new process
 * appears, so nothing forks away), then sends SIGKILL. Returns the pids signalled.
 */
export function killTree(rootPid: number): number[] {
  const hit = new Set<number>();
  for (let round = 0; round < 10; round++) {
    const table = procTable();
    const set = new Set<number>();
    if (table.has(rootPid)) set.add(rootPid);
    for (const [pid, p] of table) if (p.pgid === rootPid || p.sid === rootPid) set.add(pid);
    for (const pid of hit) if (table.has(pid)) set.add(pid);
    let grew = true;
    while (grew) {
      grew = false;
      for (const [pid, p] of table) {
        if (!set.has(pid) && set.has(p.ppid)) {
          set.add(pid);
          grew = true;
        }
      }
    }
    const fresh = [...set].filter((pid) => !hit.has(pid));
    if (fresh.length === 0) break;
    for (const pid of fresh) {
      hit.add(pid);
      try {
        process.kill(pid, "SIGSTOP");
      } catch {
        // gone already
      }
    }
  }
  for (const pid of hit) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone already
    }
  }
  try {
    process.kill(-rootPid, "SIGKILL");
  } catch {
    // no such group
  }
  return [...hit];
}

function safeReadlink(p: string): string | null {
  try {
    return readlinkSync(p);
  } catch {
    return null;
  }
}

/** The identities (`pipe:[inode]` / `socket:[inode]`) of `pid`'s stdout and stderr, to find later who still holds them. */
export function outputPipes(pid: number | undefined): string[] {
  if (pid === undefined) return [];
  return [1, 2].map((fd) => safeReadlink(`/proc/${pid}/fd/${fd}`)).filter((l): l is string => !!l && /^(pipe|socket):/.test(l));
}

/**
 * Kills every process (and its tree) that still holds one of `pipes`: children that left the process
 * group with `setsid` but kept the output open. Returns the pids signalled.
 */
export function killPipeHolders(pipes: string[]): number[] {
  const killed: number[] = [];
  for (const holder of pipeHolders(pipes)) killed.push(...killTree(holder));
  return killed;
}

/** Pids (other than airlock itself) with an open fd on one of `pipes` (`pipe:[inode]` or `socket:[inode]`: Bun uses socketpairs). */
export function pipeHolders(pipes: string[]): number[] {
  if (pipes.length === 0) return [];
  const holders: number[] = [];
  for (const name of readdirSync("/proc")) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    if (fds.some((fd) => pipes.includes(safeReadlink(`/proc/${pid}/fd/${fd}`) ?? ""))) holders.push(pid);
  }
  return holders;
}

/** True when `pid` no longer runs: no such process, or a zombie waiting to be reaped. */
function isGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return true;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const state = stat[stat.lastIndexOf(")") + 2];
    return state === "Z" || state === "X";
  } catch {
    return true;
  }
}

/** Resolves once every pid in `pids` is gone, or after `ms`. */
export async function waitGone(pids: number[], ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (pids.some((p) => !isGone(p)) && Date.now() < deadline) await Bun.sleep(2);
}

/**
 * Keeps airlock's end of `child`'s lifeline socket (stdio slot `fd`, bwrap.ts `withLifeline`): read
 * (nothing ever comes) so its end is seen once the namespace is gone. Never destroyed by hand: Bun then
 * closes the fd a second time, which can hit a later child's reused fd. Used by every bubblewrap spawn.
 */
export function holdLifeline(child: ChildProcess, fd: number): void {
  const end = child.stdio[fd] as NodeJS.ReadableStream | null | undefined;
  end?.on("error", () => {});
  end?.on("data", () => {});
}
