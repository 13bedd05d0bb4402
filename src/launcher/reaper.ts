/**
 * @module launcher/reaper
 * The reaper: one small process per airlock process that outlives airlock for a moment and kills
 * every process of airlock's bubblewrap launches that would otherwise survive it.
 *
 * Why: bubblewrap's parent process, armed with `--die-with-parent`, dies with airlock; if that
 * happens after it cloned the namespace init and before it released it (bubblewrap writes an
 * eventfd the init waits on), the init — still privileged, before it runs anything of ours, with no
 * parent-death signal of its own yet — waits forever (docs/spec.md §9, "Process lifetime").
 *
 * How: every bubblewrap launch gets, as an extra fd, a read-only fd on the reaper's *mark*: an empty
 * file airlock created in a private folder and unlinked at once, so no other process can open it
 * (holding it is proof a process descends from one of airlock's launches, or was given it on purpose
 * by a process of the same user, who may kill airlock's processes anyway). The reaper, `/bin/sh`,
 * holds the mark too and blocks reading a pipe only airlock can write (it never does). When airlock
 * ends in any way (`kill -9` included) the read returns at end of file, and the reaper SIGKILLs every
 * process that holds the mark, round after round until five rounds in a row find none, then exits.
 * Left open: a holder that exits between the comparison and the signal (microseconds) while its pid
 * is handed to a new process would see that process signalled; pids are reused only after wrapping
 * around `pid_max`.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, openSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

/** The reaper's fd of the mark. */
const MARK_FD = 3;

/**
 * The reaper's script: wait for end of file on stdin (airlock gone), then kill every process (but
 * itself) with an fd on the same file as its own fd {@link MARK_FD}, in rounds over `/proc`, until
 * five rounds in a row find none (at most 1000 rounds). Each process's fds are listed just before
 * they are compared: a process being spawned when airlock died still moves the mark to its fd slot
 * and closes airlock's number at exec, so a list taken for all processes at once went stale (seen: a
 * round missed a bubblewrap that went on to leave its init blocked). One empty round is not the end:
 * a process being spawned or exec'd can be missed by one round and seen by the next (seen 18 times in
 * 240 kills at load 14, never two rounds in a row; docs/performance.md, branch `wip/orphan2`). Only
 * shell builtins run (no fork per process). An fd is compared by the mount id and inode its
 * `/proc/<pid>/fdinfo/<n>` shows, which asks no file system anything: a stat of `/proc/<pid>/fd/<n>`
 * (`[ A -ef B ]`) asks the fd's file system for its attributes, and one that never answers (a FUSE
 * server of any local user's, a hard-mounted NFS server that is down) hung the reaper for good, its
 * holders alive. A match is then confirmed with `-ef` (device and inode): on one mount, fdinfo's inode
 * number alone can name two files (overlayfs layers on different file systems), and that stat only
 * ever reaches the mark's own file system. Only on a kernel whose fdinfo shows no `ino:` line (older
 * kernels) does every fd go through `-ef`.
 */
const SCRIPT = [
  "trap '' HUP INT QUIT TERM PIPE",
  // one write on each of its stdout, stderr and extra socket (fd 4), then each closed: airlock reads data and
  // end of file on them through the code a launch's output pipes and bubblewrap's info socket run, warm before
  // the first confined call (docs/performance.md, issue 20, branch `wip/cold`); the reaper needs none of them
  "printf . ; printf . >&2; printf . >&4; exec 1>&- 2>&- 4>&-",
  "while read -r _; do :; done",
  // the mark's mount and inode, as /proc/<pid>/fdinfo/<n> shows them (no ino: line on older kernels: -ef below)
  "mnt=; ino=",
  `while read -r k v; do case $k in mnt_id:) mnt=$v;; ino:) ino=$v; break;; esac; done < /proc/$$/fdinfo/${MARK_FD}`,
  "i=0; empty=0",
  "while [ $i -lt 1000 ] && [ $empty -lt 5 ]; do",
  "  i=$((i + 1)); empty=$((empty + 1))",
  "  for d in /proc/[0-9]*; do",
  '    [ "$d" = "/proc/$$" ] && continue',
  '    if [ -n "$ino" ]; then',
  '      for f in "$d"/fdinfo/*; do',
  "        m=; n=",
  '        { while read -r k v; do case $k in mnt_id:) m=$v;; ino:) n=$v; break;; esac; done; } 2>/dev/null < "$f"',
  `        if [ "$n" = "$ino" ] && [ "$m" = "$mnt" ] && [ "$d/fd/\${f##*/}" -ef /proc/$$/fd/${MARK_FD} ]; then kill -9 "\${d#/proc/}" 2>/dev/null; empty=0; break; fi`,
  "      done",
  "    else",
  '      for f in "$d"/fd/*; do',
  `        if [ "$f" -ef /proc/$$/fd/${MARK_FD} ]; then kill -9 "\${d#/proc/}" 2>/dev/null; empty=0; break; fi`,
  "      done",
  "    fi",
  "  done",
  "done",
].join("\n");

let markFd: number | undefined;
let reaper: ChildProcess | undefined;

/**
 * The fd (in airlock) of the reaper's mark, to give every bubblewrap launch as an extra fd (it stays
 * open in airlock; the caller never closes it). The first call creates the mark and starts the
 * reaper; later calls return the same fd. Synchronous, so the reaper runs before the first launch.
 * @throws Error when the mark cannot be created (temp dir unusable) or `/bin/sh` cannot be started.
 */
export function reaperMark(): number {
  if (markFd !== undefined && reaper) return markFd;
  if (markFd === undefined) {
    const dir = mkdtempSync(path.join(tmpdir(), "airlock-reaper-"));
    const file = path.join(dir, "mark");
    try {
      writeFileSync(file, "", { mode: 0o600 });
      markFd = openSync(file, "r");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  // stdin: a pipe airlock never writes (its end is close-on-exec, so no other child holds it)
  // stdout and stderr are pipes too, and fd 4 a socket (it writes one byte on each and closes them at once):
  // the same stdio a launch has, so this spawn also runs the child-process and output-reading paths a first
  // launch would otherwise run cold (docs/performance.md)
  // its working directory is `/`, as a launch names one: that runs the working-directory checks a launch's spawn
  // runs, and the reaper holds no folder of airlock's busy
  const child = spawn("/bin/sh", ["-c", SCRIPT, "airlock-reaper"], { cwd: "/", stdio: ["pipe", "pipe", "pipe", markFd, "pipe"], env: { PATH: "/usr/bin:/bin" } });
  // before anything can throw: a spawn that failed reports its error as an event, later, and an
  // 'error' event with no listener ends airlock (seen: /bin/sh not executable)
  child.on("error", () => {});
  if (child.pid === undefined) throw new Error("the reaper (/bin/sh) could not be started");
  // it must not keep airlock alive, nor its pipe ends airlock's event loop
  child.unref();
  for (const s of child.stdio) {
    if (!s) continue;
    s.on("error", () => {});
    if ("read" in s) s.on("data", () => {});
    (s as unknown as { unref?: () => void }).unref?.();
  }
  child.on("exit", () => {
    if (reaper === child) reaper = undefined;
  });
  reaper = child;
  return markFd;
}

/** The reaper's pid, or undefined when none runs (tests). */
export function reaperPid(): number | undefined {
  return reaper?.pid;
}
