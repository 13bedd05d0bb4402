/**
 * @module launcher/spawn
 * A tool's host process (shell, interpreters): its sandbox from the one plan (./setup.ts, ./plan.ts),
 * the environment rebuilt from an allow-list, stdin fed, the timeout enforced, the whole process tree
 * killed on timeout or cancel, and captured output capped (SPEC §9).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import type { Config } from "../config/schema.ts";
import { AirlockError } from "../errors.ts";
import { sanitizedEnv } from "./env.ts";
import { TOOL_PROCESS } from "./plan.ts";
import type { SandboxPolicy } from "./policy.ts";
import { BWRAP_INSTALL_HINT } from "./probe.ts";
import { findInPath } from "./resolve.ts";
import { checkWarning, releaseRoot } from "./roots.ts";
import { closeSeccomp, confinementFor, extraStdio, setUpSandbox, warmLauncher, type SandboxSetup } from "./setup.ts";
import { holdLifeline, killTree, outputPipes, pipeHolders, waitGone } from "./tree.ts";

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
 * Runs `opts.argv` under `opts.policy` and resolves when the process tree is gone. The sandbox is
 * planned by ./setup.ts and ./plan.ts with {@link TOOL_PROCESS}'s options, like every host process.
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
  const confinement = await confinementFor(policy, opts.bwrapPath, env.PATH, config.allow_unenforced, TOOL_PROCESS);
  const refuse = (why: string) => new AirlockError("sandbox_unavailable", `sandbox policy "${policy}" cannot be enforced: ${why}. Nothing was run.`, { policy });
  if (confinement.kind === "refuse") throw new AirlockError("sandbox_unavailable", `sandbox policy "${policy}" cannot be enforced: ${confinement.why}. Nothing was run. To fix: ${BWRAP_INSTALL_HINT}`, { policy });

  const exe = findInPath(opts.argv[0] ?? "", env.PATH);
  if (!exe) throw new AirlockError("tool_failed", `command not found: ${opts.argv[0]} (searched PATH=${env.PATH})`);
  if (!existsSync(opts.cwd)) throw new AirlockError("tool_failed", `working directory ${opts.cwd} does not exist`);
  const cmd = [exe, ...opts.argv.slice(1)];

  let setup: SandboxSetup | undefined;
  let meta: RunMeta;
  switch (confinement.kind) {
    case "direct":
      meta = {
        policy,
        unconfined: confinement.unconfined,
        warning: confinement.unconfined
          ? `ran UNCONFINED: sandbox policy "${policy}" was not enforced (${confinement.why}; allow_unenforced: true)`
          : `ran under "${policy}" without bubblewrap: its process tree is not tied to airlock's lifetime (a process it leaves behind may outlive a crash or kill -9 of airlock). To fix: ${BWRAP_INSTALL_HINT}`,
      };
      break;
    case "bwrap":
      setup = await setUpSandbox(confinement, {
        policy,
        options: TOOL_PROCESS,
        argv: cmd,
        cwd: opts.cwd,
        writableRoots: opts.writableRoots ?? [opts.workspace],
        homes: [env.HOME, process.env.HOME],
        dataDirs: opts.hiddenPaths ?? [],
        unixSockets: config.sandbox_unix_sockets ?? [],
        maxFolders: config.sandbox_scan_max_folders,
        refuse,
      });
      meta = { policy, unconfined: false, setup };
      break;
    default: {
      const never: never = confinement;
      throw new AirlockError("internal", `unknown confinement ${String(never)}`);
    }
  }
  let result: LaunchResult;
  try {
    result = await run(setup?.argv ?? cmd, env, opts, meta);
  } catch (e) {
    if (setup) closeSeccomp(setup);
    await releaseRoot(setup?.prepared ?? []);
    throw e;
  }
  if (setup) closeSeccomp(setup);
  const check = await releaseRoot(setup?.prepared ?? []);
  if (check.quarantined.length > 0) result.quarantined = check.quarantined;
  const checked = checkWarning(check);
  if (checked) result.warning = [result.warning, checked].filter(Boolean).join("\n");
  return result;
}

/**
 * The launcher's warm-up, off the path to the first model request: ./setup.ts {@link warmLauncher} (probe cache,
 * seccomp filter, credential stores, and on a probe-cache hit the confinement decided and a dry `workspace-write`
 * plan hiding `dataDirs` — airlock's data dir, as every call hides it —, the reaper), then one {@link launch} of
 * {@link refusedLaunchOptions}, refused at once, so JavaScriptCore has compiled `launch` (about 0.5 ms of CPU a
 * first confined call paid: docs/performance.md, issue 20, branch `wip/cold`), and the launch's pipe check
 * ({@link outputPipes}) asked once of airlock's own fds; on a probe-cache hit, also the code a call runs from its
 * spawn to its result ({@link watchInert}), the warning of its metadata check ({@link checkWarning}) and the
 * wait for killed processes to be gone ({@link waitGone}, asked of airlock's own pid with no time to wait), so a
 * first confined call runs none of it cold (docs/performance.md, issue 20, branch `wip/first2`). Starts no process
 * but the reaper, signals none. Never rejects. `homes`: as {@link warmLauncher}'s.
 */
export async function warmLaunch(config: Config, dataDirs: readonly string[] = [], homes?: readonly (string | undefined)[]): Promise<void> {
  const bwrap = await warmLauncher(homes, dataDirs);
  try {
    await launch(refusedLaunchOptions(config));
  } catch {
    // refused at once (external_backend): nothing ran
  }
  try {
    outputPipes(process.pid);
    if (bwrap === undefined) return;
    await watchInert(refusedLaunchOptions(config));
    checkWarning({ quarantined: [], incomplete: [] });
    // the check a call's end runs on the processes it killed, asked of airlock itself (signal 0: a liveness check) with no time to wait
    await waitGone([process.pid], 0);
  } catch {
    // only a warm-up
  }
}

/**
 * Runs {@link watch} — what a launch runs from its spawn to its result — once over an inert stand-in for a
 * child, for {@link warmLaunch}: an event emitter with no pid whose stdout and stderr are in-memory streams,
 * which end after writing `warm-up` on stdout, then an exit (code 0) and a close are reported. Nothing is
 * spawned or signalled: with no pid there is no tree or group to kill and no pipe to look for holders of, and
 * without a sandbox setup no bubblewrap fd is read. `opts` gives the policy and the output cap (its `timeoutMs`
 * is replaced by 60 s, a timer cleared when the result is built). Resolves to that result.
 */
export async function watchInert(opts: LaunchOptions): Promise<LaunchResult> {
  const [{ EventEmitter }, { PassThrough }] = await Promise.all([import("node:events"), import("node:stream")]);
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const inert = Object.assign(new EventEmitter(), { pid: undefined, stdin: null, stdout, stderr, stdio: [null, stdout, stderr] }) as unknown as ChildProcess;
  const result = watch(inert, "the launcher's warm-up", { ...opts, timeoutMs: 60_000, stdin: undefined, signal: undefined }, { policy: opts.policy, unconfined: false });
  stdout.end("warm-up");
  stderr.end();
  await new Promise((r) => setImmediate(r));
  inert.emit("exit", 0, null);
  inert.emit("close", 0, null);
  return result;
}

/**
 * The launch {@link warmLaunch} makes: `config` with `execution_backend: external`, which {@link launch} refuses
 * (`external_backend`) before it looks anything up; its working directory does not exist, so even past that it
 * would be refused (`tool_failed`) before anything is spawned.
 */
export function refusedLaunchOptions(config: Config): LaunchOptions {
  const nowhere = "/nonexistent/airlock-warm-up";
  return { policy: "workspace-write", argv: ["true"], cwd: nowhere, workspace: nowhere, timeoutMs: 1, maxOutputBytes: 1, config: { ...config, execution_backend: "external" } };
}

/** How {@link run} spawns: the policy and warning to report, and the bubblewrap setup (its fd layout) when there is one. */
interface RunMeta {
  policy: SandboxPolicy;
  warning?: string;
  unconfined: boolean;
  setup?: SandboxSetup;
}

/** The child's stdio: stdin a pipe only when there is input, stdout and stderr pipes, then the setup's fds (./setup.ts `extraStdio`). */
function childStdio(opts: LaunchOptions, setup: SandboxSetup | undefined): ("pipe" | "ignore" | number)[] {
  return [opts.stdin !== undefined ? "pipe" : "ignore", "pipe", "pipe", ...extraStdio(setup)];
}

/** The result of a run that ended: exit status (null after a timeout or cancel), captured output, and the run's flags. */
function resultOf(exit: { code: number | null; signal: NodeJS.Signals | null } | undefined, out: Capture, err: Capture, ended: { timedOut: boolean; cancelled: boolean }, meta: RunMeta): LaunchResult {
  const result: LaunchResult = {
    exit_code: ended.timedOut || ended.cancelled ? null : (exit?.code ?? null),
    stdout: out.text(),
    stderr: err.text(),
    timed_out: ended.timedOut,
    truncated: out.truncated || err.truncated,
    policy: meta.policy,
  };
  if (exit?.signal) result.signal = exit.signal;
  if (ended.cancelled) result.cancelled = true;
  if (meta.unconfined) result.unconfined = true;
  if (meta.warning) result.warning = meta.warning;
  return result;
}

/**
 * Spawns `full` in its own session and process group, feeds stdin, captures output up to the cap,
 * kills the tree on timeout or abort, and resolves once every process it killed is gone.
 * Rejects with AirlockError `tool_failed` when the process cannot start.
 */
function run(full: string[], env: Record<string, string>, opts: LaunchOptions, meta: RunMeta): Promise<LaunchResult> {
  let child: ChildProcess;
  try {
    // own session + process group: the tree can be killed as one. The lifeline (bwrap.ts withLifeline):
    // airlock keeps its end, unwritten, until the tree is gone.
    child = spawn(full[0]!, full.slice(1), { cwd: opts.cwd, env, detached: true, stdio: childStdio(opts, meta.setup) });
  } catch (e) {
    return Promise.reject(new AirlockError("tool_failed", `could not start ${full[0]}: ${(e as Error).message}`));
  }
  return watch(child, full[0]!, opts, meta);
}

/**
 * The rest of {@link run} once `child` (started as `name`) is spawned: feeds stdin, captures output up to the
 * cap, kills the tree on timeout or abort, and resolves once every process it killed is gone. Rejects with
 * AirlockError `tool_failed` when the child reports it could not start.
 */
function watch(child: ChildProcess, name: string, opts: LaunchOptions, meta: RunMeta): Promise<LaunchResult> {
  const fds = meta.setup?.fds;
  return new Promise<LaunchResult>((resolve, reject) => {
    const out = new Capture(opts.maxOutputBytes);
    const err = new Capture(opts.maxOutputBytes);
    const ended = { timedOut: false, cancelled: false };
    const pid = child.pid;
    child.stdout!.on("data", (b: Buffer) => out.push(b));
    child.stderr!.on("data", (b: Buffer) => err.push(b));
    // bubblewrap's report of the namespace init's host pid: when that init is gone, the kernel has
    // already killed and reaped everything else in the PID namespace.
    let info = "";
    if (fds?.info !== undefined) (child.stdio[fds.info] as NodeJS.ReadableStream).on("data", (b: Buffer) => (info += b.toString()));
    if (opts.stdin !== undefined) {
      child.stdin!.on("error", () => {}); // the process may exit without reading it all (EPIPE)
      child.stdin!.end(opts.stdin);
    }
    const killed = new Set<number>();
    const kill = () => {
      if (pid !== undefined) for (const k of killTree(pid)) killed.add(k);
    };
    const timer = setTimeout(() => {
      ended.timedOut = true;
      kill();
    }, opts.timeoutMs);
    const onAbort = () => {
      ended.cancelled = true;
      kill();
    };
    if (opts.signal?.aborted) onAbort();
    else opts.signal?.addEventListener("abort", onAbort, { once: true });

    // The pipes' identity (`pipe:[inode]`), to find processes that escaped the group but still hold them.
    const pipes = outputPipes(pid);
    if (fds) holdLifeline(child, fds.lifeline);

    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    let done = false;
    const timers: ReturnType<typeof setTimeout>[] = [];
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      for (const t of timers) clearTimeout(t);
      opts.signal?.removeEventListener("abort", onAbort);
      const result = resultOf(exit, out, err, ended, meta);
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
      reject(new AirlockError("tool_failed", `could not start ${name}: ${e.message}`));
    });
    child.on("exit", (code, signal) => {
      exit = { code, signal };
      timers.push(...reapAfterExit(pid, pipes, killed, () => {
        child.stdout?.destroy();
        child.stderr?.destroy();
        finish();
      }));
    });
    child.on("close", (code, signal) => {
      exit ??= { code, signal };
      finish();
    });
  });
}

/**
 * Once the leader has exited: kills what it left in its process group (background jobs) at once,
 * after 50 ms every process that left the group (setsid) but still holds `pipes` (unconfined runs;
 * under bubblewrap the PID namespace already took it), adding the pids to `killed`; after 2 s calls
 * `giveUp` (never wait forever for pipes held by something not found). Returns the two timers.
 */
function reapAfterExit(pid: number | undefined, pipes: string[], killed: Set<number>, giveUp: () => void): ReturnType<typeof setTimeout>[] {
  if (pid !== undefined) {
    try {
      process.kill(-pid, "SIGKILL");
    } catch {
      // group already empty
    }
  }
  return [
    setTimeout(() => {
      for (const holder of pipeHolders(pipes)) for (const k of killTree(holder)) killed.add(k);
    }, 50),
    setTimeout(giveUp, 2000),
  ];
}
