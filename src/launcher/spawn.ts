/**
 * @module launcher/spawn
 * The one door for host processes: applies the sandbox policy (bubblewrap, or a refusal), rebuilds
 * the environment from an allow-list, feeds stdin, enforces the timeout, kills the whole process
 * tree on timeout or cancel, and caps captured output (SPEC §9).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, existsSync, lstatSync, mkdtempSync, openSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Config } from "../config/schema.ts";
import { AirlockError } from "../errors.ts";
import { bwrapArgs, unixSocketFilter } from "./bwrap.ts";
import { allCredentialPaths, dataDirSecretFiles } from "./credentials.ts";
import { sanitizedEnv } from "./env.ts";
import { isConfined, type SandboxPolicy } from "./policy.ts";
import { findInPath, resolveRealPath } from "./resolve.ts";
import { DEFAULT_SCAN_MAX_FOLDERS, finishGitMeta, prepareGitMeta, type GitMetaEntry } from "./git-meta.ts";

export { sanitizedEnv } from "./env.ts";

export interface LaunchOptions {
  policy: SandboxPolicy;
  /** Command and arguments; `argv[0]` is looked up on the rebuilt environment's PATH. */
  argv: string[];
  /** Absolute working directory. */
  cwd: string;
  /** The session workspace: the writable root under `workspace-write`. */
  workspace: string;
  /** Writable roots (default: `[workspace]`). */
  writableRoots?: string[];
  /** Written to the process's stdin, then closed (interpreter source). Absent: stdin is /dev/null. */
  stdin?: string;
  /** Wall-clock limit, ms. */
  timeoutMs: number;
  /** Cap for each of stdout and stderr, bytes; the rest is dropped with a visible marker. */
  maxOutputBytes: number;
  /** Abort = cancel: the tree is killed and the result has `cancelled: true`. */
  signal?: AbortSignal;
  /** Existing directories a confined process must not see (airlock's data dir): hidden behind an empty tmpfs. */
  hiddenPaths?: string[];
  /** Added to the allow-listed environment (secret-looking names are still dropped). */
  extraEnv?: Record<string, string>;
  config: Config;
  /** The bubblewrap binary; default: `bwrap` on the PATH. `null` = treat bubblewrap as missing (tests). */
  bwrapPath?: string | null;
}

export interface LaunchResult {
  /** Exit status, or null when killed by a signal (timeout, cancel). */
  exit_code: number | null;
  signal?: string;
  stdout: string;
  stderr: string;
  timed_out: boolean;
  /** True when stdout or stderr went over `maxOutputBytes` and was cut. */
  truncated: boolean;
  /** True when a confining policy ran WITHOUT bubblewrap (`allow_unenforced: true`). */
  unconfined?: boolean;
  /**
   * Why `unconfined` is set, in words; under `danger-full-access` without a working bubblewrap, that
   * the process tree is not tied to airlock's lifetime; and/or what repository metadata was
   * quarantined after the call.
   */
  warning?: string;
  /** Repository metadata the process created, moved or replaced, renamed to a quarantine name: one line each. */
  quarantined?: string[];
  cancelled?: boolean;
  /** The policy the call was asked to run under. */
  policy: SandboxPolicy;
}

/** How to get bubblewrap working, for `sandbox_unavailable` messages. */
export const BWRAP_INSTALL_HINT =
  "install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`; Fedora: `dnf install bubblewrap`; Arch: `pacman -S bubblewrap`; Alpine: `apk add bubblewrap`) " +
  "and make sure unprivileged user namespaces are enabled (e.g. `sysctl kernel.unprivileged_userns_clone=1`, or on Ubuntu 24.04+ `sysctl kernel.apparmor_restrict_unprivileged_userns=0`), " +
  "or set `allow_unenforced: true` in airlock.yaml to run such calls unconfined (every result then says so)";

/** The child fd on which bubblewrap reports its namespace init's pid (`--info-fd`). */
const INFO_FD = 3;
/** The child fd from which bubblewrap reads the seccomp filter (`--seccomp`). */
const SECCOMP_FD = 4;
/** The child fd of the lifeline socket (bwrap.ts `withLifeline`): after the info fd, and the seccomp fd when there is one. */
const lifelineFdFor = (seccomp: boolean): number => (seccomp ? SECCOMP_FD + 1 : INFO_FD + 1);

let filterFd: number | undefined;

/**
 * A fresh read-only fd (its own file offset) on the compiled {@link unixSocketFilter}, for bubblewrap's
 * `--seccomp`; the caller closes it once the child is spawned. The filter lives in an unlinked file
 * that airlock keeps open (reopened through `/proc/self/fd`), so nothing is left on disk, even after a crash.
 * @throws Error when the temp dir is unusable (the caller turns it into `sandbox_unavailable`).
 */
export function openSeccompFilter(): number {
  if (filterFd === undefined) {
    const dir = mkdtempSync(path.join(tmpdir(), "airlock-seccomp-"));
    const file = path.join(dir, "filter.bpf");
    try {
      writeFileSync(file, unixSocketFilter(), { mode: 0o600 });
      filterFd = openSync(file, "r");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  return openSync(`/proc/self/fd/${filterFd}`, "r");
}

/**
 * The unix-socket part of a confined launch from `sandbox_unix_sockets`: the named sockets that exist
 * (absolute real paths) and the folders to hide when there are any (`/run`, and `/var/run` when it is
 * not a link into `/run`). Empty `sockets`: the seccomp filter applies instead.
 */
export function unixSocketPlan(configured: readonly string[]): { sockets: string[]; socketDirs: string[] } {
  const sockets = [...new Set(configured.map((p) => resolveRealPath("/", p)))].filter((p) => {
    try {
      return statSync(p).isSocket();
    } catch {
      return false;
    }
  });
  if (sockets.length === 0) return { sockets: [], socketDirs: [] };
  const socketDirs = [...new Set(["/run", "/var/run"].filter((d) => existsSync(d)).map((d) => resolveRealPath("/", d)))].filter(
    (d, _i, all) => !all.some((o) => o !== d && d.startsWith(o + "/")),
  );
  return { sockets, socketDirs };
}

const probes = new Map<string, Promise<boolean>>();

/**
 * Whether bubblewrap at `bwrapPath` (default: `bwrap` on airlock's PATH) can really confine a process
 * here: runs it once with the namespaces the launcher uses. Missing binary or namespaces that cannot
 * be created both count as unavailable. Cached per path for the life of the process.
 */
export function bwrapAvailable(bwrapPath: string | null = findInPath("bwrap", process.env.PATH)): Promise<boolean> {
  if (!bwrapPath) return Promise.resolve(false);
  let p = probes.get(bwrapPath);
  if (!p) {
    p = new Promise<boolean>((resolve) => {
      let child: ChildProcess;
      try {
        child = spawn(
          bwrapPath,
          ["--die-with-parent", "--unshare-net", "--unshare-pid", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--", "true"],
          { stdio: "ignore", env: sanitizedEnv() },
        );
      } catch {
        return resolve(false);
      }
      const timer = setTimeout(() => {
        child.kill("SIGKILL");
        resolve(false);
      }, 5000);
      child.on("error", () => {
        clearTimeout(timer);
        resolve(false);
      });
      child.on("exit", (code) => {
        clearTimeout(timer);
        resolve(code === 0);
      });
    });
    probes.set(bwrapPath, p);
  }
  return p;
}

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
function pipeHolders(pipes: string[]): number[] {
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
async function waitGone(pids: number[], ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (pids.some((p) => !isGone(p)) && Date.now() < deadline) await Bun.sleep(2);
}

/** Collects one output stream up to `max` bytes, counting (and draining) the rest. */
class Capture {
  private chunks: Buffer[] = [];
  private kept = 0;
  total = 0;
  constructor(private readonly max: number) {}
  push(b: Buffer): void {
    this.total += b.length;
    if (this.kept >= this.max) return;
    const take = b.length <= this.max - this.kept ? b : b.subarray(0, this.max - this.kept);
    this.chunks.push(take);
    this.kept += take.length;
  }
  get truncated(): boolean {
    return this.total > this.kept;
  }
  text(): string {
    const s = Buffer.concat(this.chunks).toString("utf8");
    if (!this.truncated) return s;
    return `${s}\n[airlock: output truncated: ${this.total - this.kept} of ${this.total} bytes not shown (limit ${this.max} bytes)]`;
  }
}

/**
 * Credential folders under HOME hidden behind an empty tmpfs in every confined process, and
 * credential files shown there as empty: the one list lives in ./credentials.ts (re-exported here).
 */

/** What a writable root needs before a confined process runs: see {@link prepareRoot}. */
export interface PreparedRoot {
  /** The root (absolute real path). */
  root: string;
  /** Existing paths to bind read-only (`.git` files, `.git` folders git would not use, sensitive parts of repositories). */
  readOnly: string[];
  /** Repository git folders bound onto themselves read-write, so they cannot be renamed or removed. */
  mountPoints: string[];
  /** Missing (or empty) paths to lock with an empty read-only mount (the `.git` of a root that is not a repository). */
  locked: string[];
  /** The repository metadata found before the process started (compared after it ends). */
  before: GitMetaEntry[];
  /** This call's journal (git-meta.ts `openJournal`): lets the next call check, should airlock be killed meanwhile. */
  journal?: string;
  /** What was quarantined for calls of an airlock process that ended mid-call; reported once, by the next {@link recheckRoot}. */
  recovered: string[];
  /** Bound on the folders each scan of this root visits (config `sandbox_scan_max_folders`). */
  maxFolders: number;
}

/**
 * Host-side preparation of a writable root so bubblewrap can protect its repository metadata
 * (src/launcher/git-meta.ts): every existing `.git` entry and repository-shaped folder at any depth is
 * found; repositories become mount points with their config, hooks, info, commondir, gitdir,
 * worktrees and modules read-only; `.git` files are bound read-only; the root's `.git` is locked when
 * missing or empty (an empty one may be a crashed run's mount point). First, the checks the root is
 * owed run: those of an airlock process that ended mid-call (`kill -9`), and those of earlier calls
 * whose check was incomplete (git-meta.ts `prepareGitMeta`); then this call's journal is written. Used by
 * every process started under `workspace-write` (tools here, MCP servers in src/tool/mcp/server.ts);
 * call {@link releaseRoot} (or, between MCP calls, {@link recheckRoot}) after. The scans never hold
 * the event loop for long.
 * @param maxFolders bound on the folders a scan visits (config `sandbox_scan_max_folders`).
 * @throws AirlockError `metadata_scan_limit` when the root has more folders than that, or an owed check cannot complete.
 */
export async function prepareRoot(root: string, maxFolders = DEFAULT_SCAN_MAX_FOLDERS): Promise<PreparedRoot> {
  const p = await prepareGitMeta(root, maxFolders);
  return { root, readOnly: p.plan.readOnly, mountPoints: p.plan.mountPoints, locked: p.plan.locked, before: p.before, journal: p.journal, recovered: p.recovered, maxFolders };
}

/** What the check after a call found: lines for quarantined entries, and one line per root whose check was incomplete. */
export interface RootCheck {
  quarantined: string[];
  incomplete: string[];
}

async function checkRoots(prepared: PreparedRoot[], release: boolean): Promise<RootCheck> {
  const out: RootCheck = { quarantined: [], incomplete: [] };
  for (const r of prepared) {
    const c = await finishGitMeta(r.root, r.before, r.maxFolders, release ? { locked: r.locked, journal: r.journal } : undefined);
    out.quarantined.push(...r.recovered.splice(0), ...c.notes);
    if (!c.complete) {
      out.incomplete.push(
        `the repository-metadata check of ${r.root} after this call was INCOMPLETE: it has more than ${r.maxFolders} folders (sandbox_scan_max_folders), and what lies in the folders not checked was not checked; ` +
          `do not run git there before checking it. The check stays owed: the next workspace-write call on it runs it first, and is refused (metadata_scan_limit) while it cannot complete`,
      );
    }
  }
  return out;
}

/**
 * Quarantines repository metadata that appeared in the prepared roots since {@link prepareRoot}
 * (see `quarantineNewGitMeta`). Returns one line per entry quarantined, and per root not wholly checked,
 * for the result's warning ({@link checkWarning}). Never throws.
 */
export function recheckRoot(prepared: PreparedRoot[]): Promise<RootCheck> {
  return checkRoots(prepared, false);
}

/**
 * After the process is gone: removes the empty mount points bubblewrap left for `locked` paths (once
 * no other call of this process holds them), then {@link recheckRoot}; removes the journals of roots
 * wholly checked and leaves the others' checks owed. Never throws.
 */
export function releaseRoot(prepared: PreparedRoot[]): Promise<RootCheck> {
  return checkRoots(prepared, true);
}

/** The warning for a {@link RootCheck}, or undefined when it found nothing and was complete. */
export function checkWarning(c: RootCheck): string | undefined {
  const lines = [...(c.quarantined.length > 0 ? [quarantineWarning(c.quarantined)] : []), ...c.incomplete];
  return lines.length > 0 ? lines.join("\n") : undefined;
}

/** The warning line for quarantined repository metadata (`notes` from {@link releaseRoot}). */
export function quarantineWarning(notes: string[]): string {
  return `airlock quarantined repository metadata that a confined process created, moved or replaced (nothing may change it without a person): ${notes.join("; ")}`;
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

/**
 * Runs `opts.argv` under `opts.policy` and resolves when the process tree is gone.
 * Throws AirlockError `external_backend` (config `execution_backend: external`), `sandbox_unavailable`
 * (a confining policy and no working bubblewrap, unless `allow_unenforced`), `tool_failed` (command
 * not found, cwd missing). A timeout or cancel is a result (`timed_out` / `cancelled`), not a throw.
 */
export async function launch(opts: LaunchOptions): Promise<LaunchResult> {
  const { policy, config } = opts;
  if (config.execution_backend === "external") {
    throw new AirlockError(
      "external_backend",
      `this airlock is configured with execution_backend: external, so it runs no local host processes (${path.basename(opts.argv[0] ?? "?")} was refused); run it on the external backend or set execution_backend: local`,
    );
  }
  const env = sanitizedEnv(opts.extraEnv);
  let confine = isConfined(policy);
  let warning: string | undefined;
  let bwrapPath: string | null = opts.bwrapPath !== undefined ? opts.bwrapPath : findInPath("bwrap", env.PATH);
  // danger-full-access still runs under bubblewrap (own PID namespace, --die-with-parent) when it works.
  let wrap = await bwrapAvailable(bwrapPath);
  if (!confine && !wrap) {
    warning = `ran under "${policy}" without bubblewrap: its process tree is not tied to airlock's lifetime (a process it leaves behind may outlive a crash or kill -9 of airlock). To fix: ${BWRAP_INSTALL_HINT}`;
  }
  if (confine) {
    if (!wrap) {
      const why = bwrapPath ? `bubblewrap at ${bwrapPath} cannot create the namespaces it needs here` : "bubblewrap (bwrap) was not found on PATH";
      if (!config.allow_unenforced) {
        throw new AirlockError(
          "sandbox_unavailable",
          `sandbox policy "${policy}" cannot be enforced: ${why}. Nothing was run. To fix: ${BWRAP_INSTALL_HINT}`,
          { policy },
        );
      }
      confine = false;
      warning = `ran UNCONFINED: sandbox policy "${policy}" was not enforced (${why}; allow_unenforced: true)`;
    }
  }

  const exe = findInPath(opts.argv[0] ?? "", env.PATH);
  if (!exe) throw new AirlockError("tool_failed", `command not found: ${opts.argv[0]} (searched PATH=${env.PATH})`);
  if (!existsSync(opts.cwd)) throw new AirlockError("tool_failed", `working directory ${opts.cwd} does not exist`);
  const cmd = [exe, ...opts.argv.slice(1)];

  let full = cmd;
  let prepared: PreparedRoot[] = [];
  let seccomp: number | undefined;
  if (wrap && !confine) {
    // the data dir's tokens and database (hiddenPaths: the data dir) read as empty even here
    const maskedFiles = dataDirSecretFiles(opts.hiddenPaths ?? []);
    full = bwrapArgs({ policy, argv: cmd, cwd: opts.cwd, writableRoots: [], maskedFiles, bwrapPath: bwrapPath!, infoFd: INFO_FD, lifelineFd: lifelineFdFor(false) });
  }
  if (confine) {
    const roots = (opts.writableRoots ?? [opts.workspace]).map((r) => resolveRealPath("/", r));
    for (const r of roots) if (!existsSync(r)) throw new AirlockError("tool_failed", `workspace root ${r} does not exist`);
    if (policy === "workspace-write") {
      try {
        for (const r of roots) prepared.push(await prepareRoot(r, config.sandbox_scan_max_folders));
      } catch (e) {
        await releaseRoot(prepared);
        throw e;
      }
    }
    const readOnlyPaths = prepared.flatMap((r) => r.readOnly);
    const lockedPaths = prepared.flatMap((r) => r.locked);
    const mountPoints = prepared.flatMap((r) => r.mountPoints);
    const creds = allCredentialPaths(env.HOME);
    const hiddenPaths = [...(opts.hiddenPaths ?? []), ...creds.dirs].map((h) => resolveRealPath("/", h)).filter((h) => existsSync(h) && h !== "/");
    const maskedFiles = creds.files.map((f) => resolveRealPath("/", f));
    const socketPlan = unixSocketPlan(config.sandbox_unix_sockets ?? []);
    if (socketPlan.sockets.length === 0) {
      try {
        seccomp = openSeccompFilter();
      } catch (e) {
        await releaseRoot(prepared);
        throw new AirlockError("sandbox_unavailable", `sandbox policy "${policy}" cannot be enforced: the seccomp filter could not be prepared (${(e as Error).message}). Nothing was run.`, { policy });
      }
    }
    full = bwrapArgs({
      policy,
      argv: cmd,
      cwd: resolveRealPath("/", opts.cwd),
      writableRoots: roots,
      readOnlyPaths,
      lockedPaths,
      mountPoints,
      hiddenPaths,
      maskedFiles,
      runtimePaths: [exe, ...cmd.slice(1).filter((a) => path.isAbsolute(a) && existsSync(a))].map((p) => resolveRealPath("/", p)),
      bwrapPath: bwrapPath!,
      infoFd: INFO_FD,
      ...(seccomp !== undefined ? { seccompFd: SECCOMP_FD } : {}),
      lifelineFd: lifelineFdFor(seccomp !== undefined),
      unixSockets: socketPlan.sockets,
      socketDirs: socketPlan.socketDirs,
    });
  }
  let result: LaunchResult;
  try {
    result = await run(full, env, opts, { policy, warning, unconfined: isConfined(policy) && !confine, infoFd: wrap, seccompFd: seccomp });
  } catch (e) {
    if (seccomp !== undefined) closeSync(seccomp);
    await releaseRoot(prepared);
    throw e;
  }
  if (seccomp !== undefined) closeSync(seccomp);
  const check = await releaseRoot(prepared);
  if (check.quarantined.length > 0) result.quarantined = check.quarantined;
  const checked = checkWarning(check);
  if (checked) result.warning = [result.warning, checked].filter(Boolean).join("\n");
  return result;
}

function run(
  full: string[],
  env: Record<string, string>,
  opts: LaunchOptions,
  meta: { policy: SandboxPolicy; warning?: string; unconfined: boolean; infoFd: boolean; seccompFd?: number },
): Promise<LaunchResult> {
  return new Promise<LaunchResult>((resolve, reject) => {
    const out = new Capture(opts.maxOutputBytes);
    const err = new Capture(opts.maxOutputBytes);
    let timedOut = false;
    let cancelled = false;
    let child: ChildProcess;
    try {
      child = spawn(full[0]!, full.slice(1), {
        cwd: opts.cwd,
        env,
        detached: true, // own session + process group: the tree can be killed as one
        stdio: [
          opts.stdin !== undefined ? "pipe" : "ignore",
          "pipe",
          "pipe",
          ...(meta.infoFd ? (["pipe"] as const) : []),
          ...(meta.seccompFd !== undefined ? [meta.seccompFd] : []),
          // The lifeline (bwrap.ts withLifeline): airlock keeps its end, unwritten, until the tree is gone.
          ...(meta.infoFd ? (["pipe"] as const) : []),
        ],
      });
    } catch (e) {
      return reject(new AirlockError("tool_failed", `could not start ${full[0]}: ${(e as Error).message}`));
    }
    const pid = child.pid;
    child.stdout!.on("data", (b: Buffer) => out.push(b));
    child.stderr!.on("data", (b: Buffer) => err.push(b));
    // bubblewrap's report of the namespace init's host pid: when that init is gone, the kernel has
    // already killed and reaped everything else in the PID namespace.
    let info = "";
    if (meta.infoFd) (child.stdio[INFO_FD] as NodeJS.ReadableStream).on("data", (b: Buffer) => (info += b.toString()));
    if (opts.stdin !== undefined) {
      child.stdin!.on("error", () => {}); // the process may exit without reading it all (EPIPE)
      child.stdin!.end(opts.stdin);
    }
    const killed = new Set<number>();
    const kill = () => {
      if (pid !== undefined) for (const k of killTree(pid)) killed.add(k);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, opts.timeoutMs);
    const onAbort = () => {
      cancelled = true;
      kill();
    };
    if (opts.signal?.aborted) onAbort();
    else opts.signal?.addEventListener("abort", onAbort, { once: true });

    // The pipes' identity (`pipe:[inode]`), to find processes that escaped the group but still hold them.
    const pipes = outputPipes(pid);
    if (meta.infoFd) holdLifeline(child, lifelineFdFor(meta.seccompFd !== undefined));

    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    let done = false;
    const timers: ReturnType<typeof setTimeout>[] = [];
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      for (const t of timers) clearTimeout(t);
      opts.signal?.removeEventListener("abort", onAbort);
      const result: LaunchResult = {
        exit_code: timedOut || cancelled ? null : (exit?.code ?? null),
        stdout: out.text(),
        stderr: err.text(),
        timed_out: timedOut,
        truncated: out.truncated || err.truncated,
        policy: meta.policy,
      };
      if (exit?.signal) result.signal = exit.signal;
      if (cancelled) result.cancelled = true;
      if (meta.unconfined) result.unconfined = true;
      if (meta.warning) result.warning = meta.warning;
      // Their pipes close a moment before killed processes are fully gone: report only once they are.
      const nsInit = /"child-pid":\s*(\d+)/.exec(info)?.[1];
      if (nsInit) killed.add(Number(nsInit));
      void waitGone([...killed], 2000).then(() => resolve(result));
    };
    child.on("error", (e) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      opts.signal?.removeEventListener("abort", onAbort);
      reject(new AirlockError("tool_failed", `could not start ${full[0]}: ${e.message}`));
    });
    child.on("exit", (code, signal) => {
      exit = { code, signal };
      // Whatever the leader left behind in its group (background jobs) dies with it.
      if (pid !== undefined) {
        try {
          process.kill(-pid, "SIGKILL");
        } catch {
          // group already empty
        }
      }
      // A process that left the group (setsid) but still holds our pipes dies too (unconfined runs;
      // under bubblewrap the PID namespace already took it).
      timers.push(
        setTimeout(() => {
          for (const holder of pipeHolders(pipes)) for (const k of killTree(holder)) killed.add(k);
        }, 50),
      );
      // Never wait forever for pipes held by something we could not find.
      timers.push(
        setTimeout(() => {
          child.stdout?.destroy();
          child.stderr?.destroy();
          finish();
        }, 2000),
      );
    });
    child.on("close", (code, signal) => {
      exit ??= { code, signal };
      finish();
    });
  });
}
