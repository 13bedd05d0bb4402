/**
 * @module hook/run
 * Runs hook commands as processes, for every event (Claude Code's command-hook protocol: JSON on
 * stdin, an answer on stdout, exit 2 with stderr as the reason; its hooks reference,
 * code.claude.com/docs/en/hooks, is the source). Each hook runs `/bin/sh -c command` in its own
 * process group under bubblewrap (launcher/plan.ts `HOOK_PROCESS`), in the session's workspace, with
 * the sanitized environment plus {@link hookEnvironment}. A timeout, a crash or a failure to start is
 * a {@link HookProcessResult} of kind `failed` — what that means is up to the event (hook/protocol.ts).
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { hookSource, type HookSource } from "../config/claude-settings.ts";
import type { Config, HookMatcher, SandboxPolicyName } from "../config/schema.ts";
import { sanitizedEnv } from "../launcher/env.ts";
import { HOOK_PROCESS } from "../launcher/plan.ts";
import { BWRAP_INSTALL_HINT } from "../launcher/probe.ts";
import { resolveRealPath } from "../launcher/resolve.ts";
import { confinementFor, extraStdio, setUpSandbox } from "../launcher/setup.ts";
import { launch as launchTool } from "../launcher/spawn.ts";
import { holdLifeline, killPipeHolders, outputPipes } from "../launcher/tree.ts";

/** Most stdout or stderr kept from one hook run, bytes (more breaks the protocol). */
export const HOOK_OUTPUT_CAP = 1024 * 1024;

/** The codes a hook that did not answer properly carries (hook/protocol.ts decides what each event does with it). */
export type HookFailureCode = "hook_error" | "hook_timeout" | "hook_output_invalid";

/** What one hook process did: it exited (with its output), or it failed to answer at all. */
export type HookProcessResult =
  | { kind: "exited"; code: number | null; signal: string | null; stdout: string; stderr: string }
  | { kind: "failed"; code: HookFailureCode; reason: string };

/**
 * One handler to run: its command and timeout (s); where it came from (config/claude-settings.ts
 * `HookSource`: it decides how the hook is confined); `badMatcher` when its group's matcher could not be read.
 */
export interface HookHandler {
  command: string;
  timeout: number;
  source: HookSource;
  badMatcher?: string;
}

/**
 * The handlers whose group matches one of `names`, identical handlers (command, timeout and source) once
 * (as Claude Code does; per source, since the source decides the confinement).
 * A matcher is an anchored regular expression; empty or `*` matches all. `names: null` is an event
 * without matchers (Claude Code ignores `matcher` on `UserPromptSubmit` and `Stop`): every group runs.
 * A matcher that is not a valid regular expression matches (its hooks must not be skipped silently)
 * and carries `badMatcher`, which the caller turns into a failure.
 */
export function matchingHooks(matchers: readonly HookMatcher[], names: readonly string[] | null): HookHandler[] {
  const out = new Map<string, HookHandler>();
  for (const m of matchers) {
    let hit: boolean;
    let bad: string | undefined;
    const risk = names === null || m.matcher === "" || m.matcher === "*" ? null : backtrackingRisk(m.matcher);
    if (names === null || m.matcher === "" || m.matcher === "*") hit = true;
    else if (risk) {
      hit = true; // never run it (it could stop airlock for minutes), never skip its hooks silently
      bad = `matcher ${JSON.stringify(m.matcher)} is refused: ${risk}, which can take minutes of airlock's own time to test against one tool name (catastrophic backtracking); write it as Claude Code's matchers are written (a name, A|B, prefix.*)`;
    } else {
      try {
        const re = new RegExp(`^(?:${m.matcher})$`);
        hit = names.some((n) => re.test(n));
      } catch (e) {
        hit = true; // a broken matcher must not silently skip its hooks
        bad = `matcher ${JSON.stringify(m.matcher)} is not a valid regular expression (${(e as Error).message})`;
      }
    }
    if (!hit) continue;
    for (const h of m.hooks) {
      const source = hookSource(h);
      const key = `${h.command}\0${h.timeout}\0${source}`;
      if (!out.has(key)) out.set(key, { command: h.command, timeout: h.timeout, source, ...(bad ? { badMatcher: bad } : {}) });
    }
  }
  return [...out.values()];
}

/** Most quantifiers (`*`, `+`, `?`, `{…}`) a matcher may hold: `.*` five times already takes seconds on a long MCP tool name. */
export const MAX_MATCHER_QUANTIFIERS = 4;

/**
 * Why testing the regular expression `pattern` may backtrack for minutes, or null: a quantified group
 * (`(…)*`, `(a|ab)+`, `(…){9}`: exponential) or more than {@link MAX_MATCHER_QUANTIFIERS} quantifiers
 * (`.*.*.*.*.*.*X`: polynomial of that degree). JavaScript regular expressions backtrack and cannot be
 * interrupted, and a matcher is tested in airlock's own thread at every tool call; a workspace's settings
 * file (which the model may write) must not be able to stop the gate, the API and every other session.
 * Claude Code's documented matchers (`Bash`, `Edit|Write`, `mcp__memory__.*`, `Notebook.*`) pass. Pure.
 */
export function backtrackingRisk(pattern: string): string | null {
  let quantifiers = 0;
  let inClass = false;
  let groupClosedAt = -1; // index of the last unescaped `)`
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i]!;
    if (ch === ")" && !inClass) groupClosedAt = i;
    if (ch === "\\") {
      i++;
      continue;
    }
    if (inClass) {
      if (ch === "]") inClass = false;
      continue;
    }
    if (ch === "[") {
      inClass = true;
      continue;
    }
    const quant = ch === "*" || ch === "+" || ch === "{" || (ch === "?" && pattern[i - 1] !== "(");
    if (!quant) continue;
    const prev = pattern[i - 1];
    if (ch === "?" && (prev === "*" || prev === "+" || prev === "?" || prev === "}")) continue; // lazy: same quantifier
    if (groupClosedAt === i - 1) return "it quantifies a group";
    quantifiers++;
    if (quantifiers > MAX_MATCHER_QUANTIFIERS) return `it holds more than ${MAX_MATCHER_QUANTIFIERS} quantifiers`;
  }
  return null;
}

/**
 * The variables every hook gets beside the sanitized environment: `CLAUDE_PROJECT_DIR` (Claude Code's
 * name, so `"$CLAUDE_PROJECT_DIR/.claude/hooks/x.sh"` wiring works unchanged) and `AIRLOCK_PROJECT_DIR`,
 * both the session's workspace; plus `extra` (e.g. `AIRLOCK_CONFIG_DIR`, the folder of airlock.yaml).
 */
export function hookEnvironment(workspace: string, extra: Record<string, string> = {}): Record<string, string> {
  return { ...extra, CLAUDE_PROJECT_DIR: workspace, AIRLOCK_PROJECT_DIR: workspace };
}

/** How hook processes are confined (launcher/plan.ts `HOOK_PROCESS`). */
export interface HookLaunch {
  /** airlock's data dir: its tokens and database (`DATA_DIR_SECRETS`) are shown empty to the hook. */
  dataDir?: string;
  /** `allow_unenforced`: where bubblewrap cannot run, run the hook unconfined instead of failing (hook_error). */
  allowUnenforced?: boolean;
  /** The bubblewrap binary; default `bwrap` on the hook environment's PATH; `null` = missing (tests). */
  bwrapPath?: string | null;
  /**
   * How a project's hook runs (one from the workspace's settings files, which the model can rewrite): as the
   * session's own shell would, under the session's sandbox policy through the tool launcher
   * (launcher/spawn.ts `launch`: the workspace writable only under `workspace-write`, credentials and
   * the data dir hidden, repository metadata checked) — never the call's elevated policy. Under
   * `danger-full-access` too: a `HOOK_PROCESS` sees the data dir's transcripts folder (every session's
   * conversation), which that shell never does. Without it, a project's hook is not run (`hook_error`: fail closed).
   */
  confineTo?: { policy: SandboxPolicyName; workspace: string; config: Readonly<Config> };
}

/**
 * The argv that runs `command` as a hook: `/bin/sh -c command` under bubblewrap (the launcher's one
 * plan with `HOOK_PROCESS`: `danger-full-access` but no capabilities, own PID namespace, `/proc` and
 * `/dev`, dies with airlock, the data dir's secrets masked), with the fd of its lifeline; or plain
 * `/bin/sh -c` where bubblewrap cannot run and `launch.allowUnenforced`. A string: why it cannot run.
 */
async function hookArgv(command: string, cwd: string, env: Record<string, string>, launch: HookLaunch): Promise<{ argv: string[]; stdio: ("pipe" | number)[]; lifelineFd?: number } | string> {
  const sh = ["/bin/sh", "-c", command];
  const confinement = await confinementFor("danger-full-access", launch.bwrapPath, env.PATH, launch.allowUnenforced === true, HOOK_PROCESS);
  switch (confinement.kind) {
    case "refuse":
      return `bubblewrap cannot run here, so the hook could not be confined and was not run. To fix: ${BWRAP_INSTALL_HINT}`;
    case "direct":
      return { argv: sh, stdio: [] };
    case "bwrap": {
      const setup = await setUpSandbox(confinement, {
        policy: "danger-full-access",
        options: HOOK_PROCESS,
        argv: sh,
        cwd: existsSync(cwd) ? resolveRealPath("/", cwd) : cwd,
        dataDirs: launch.dataDir ? [launch.dataDir] : [],
      });
      return { argv: setup.argv, stdio: extraStdio(setup), lifelineFd: setup.fds.lifeline };
    }
    default: {
      const never: never = confinement;
      return `unknown confinement ${String(never)}`;
    }
  }
}

/** The options of one hook run besides its command and input. */
export interface HookRunOptions {
  /** The working directory: the session's workspace. */
  cwd: string;
  /** Seconds before the hook is killed. */
  timeoutS: number;
  /** Aborting it kills the hook (the turn was cancelled). */
  signal?: AbortSignal;
  /** Added to the sanitized environment ({@link hookEnvironment}). */
  env?: Record<string, string>;
  launch?: HookLaunch;
  /** What the messages call the process (default `hook`; notify commands say `notify command`). */
  label?: string;
  /** Why `signal` aborts, for the message (default "the turn was cancelled"). */
  stopped?: string;
  /** Ends the stdin JSON with a newline (one JSON line, for `read`-style readers). Default false, as Claude Code sends it. */
  newline?: boolean;
}

/**
 * Runs one hook command with `/bin/sh -c` in its own process group, under bubblewrap ({@link hookArgv}),
 * `input` as JSON on stdin. The whole group (and any process that left it but kept its output pipes)
 * is killed when the hook exits, times out or `signal` aborts. Never throws: a hook that cannot start,
 * times out, is stopped or prints more than {@link HOOK_OUTPUT_CAP} bytes is a `failed` result.
 */
export async function runHookProcess(command: string, input: unknown, opts: HookRunOptions): Promise<HookProcessResult> {
  const { cwd, timeoutS, signal } = opts;
  const failed = (code: HookFailureCode, reason: string): HookProcessResult => ({ kind: "failed", code, reason });
  const label = opts.label ?? "hook";
  const env = sanitizedEnv(opts.env ?? {});
  if (!existsSync(cwd)) return failed("hook_error", `${label} ${JSON.stringify(command)} could not start: its working directory ${cwd} does not exist`);
  const planned = await hookArgv(command, cwd, env, opts.launch ?? {});
  if (typeof planned === "string") return failed("hook_error", `${label} ${JSON.stringify(command)}: ${planned}`);
  const { argv, stdio, lifelineFd } = planned;
  return new Promise<HookProcessResult>((resolve) => {
    let settled = false;
    let timedOut = false;
    let stdout = "";
    let stderr = "";
    let overflow = false;
    let exit: { code: number | null; signal: string | null } | null = null;
    const finish = (r: HookProcessResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      killGroup();
      resolve(r);
    };
    let child: ReturnType<typeof spawn>;
    try {
      // Under bubblewrap a 4th pipe is the lifeline: airlock keeps its end, unwritten, until the hook is gone.
      child = spawn(argv[0]!, argv.slice(1), { cwd, env, detached: true, stdio: ["pipe", "pipe", "pipe", ...stdio] });
    } catch (e) {
      resolve(failed("hook_error", `${label} ${JSON.stringify(command)} could not start: ${(e as Error).message}`));
      return;
    }
    // the identities of the hook's stdout/stderr, to find a child that left the group but kept them
    const pipes = outputPipes(child.pid);
    if (lifelineFd !== undefined) holdLifeline(child, lifelineFd);
    const killGroup = () => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        /* already gone */
      }
      killPipeHolders(pipes);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      finish(failed("hook_timeout", `${label} ${JSON.stringify(command)} did not finish within ${timeoutS} s; it was killed with its process group`));
    }, timeoutS * 1000);
    const onAbort = () => finish(failed("hook_error", `${label} ${JSON.stringify(command)} was stopped because ${opts.stopped ?? "the turn was cancelled"}`));
    signal?.addEventListener("abort", onAbort, { once: true });
    if (signal?.aborted) onAbort();
    child.on("error", (e) => finish(failed("hook_error", `${label} ${JSON.stringify(command)} could not start: ${e.message}`)));
    const take = (which: "out" | "err") => (chunk: Buffer) => {
      if (which === "out") {
        if (stdout.length + chunk.length > HOOK_OUTPUT_CAP) overflow = true;
        else stdout += chunk.toString("utf8");
      } else if (stderr.length < HOOK_OUTPUT_CAP) stderr += chunk.toString("utf8");
    };
    child.stdout!.on("data", take("out"));
    child.stderr!.on("data", take("err"));
    child.stdin!.on("error", () => {}); // a hook that does not read stdin is fine
    child.stdin!.end(opts.newline ? `${JSON.stringify(input)}\n` : JSON.stringify(input));
    child.on("exit", (code, sig) => {
      exit = { code, signal: sig };
      killGroup(); // background children of the hook die with it; this also closes their copies of the pipes
      killPipeHolders(pipes); // and so does one that left the group (setsid) but kept the hook's output open
    });
    child.on("close", () => {
      if (timedOut || settled) return;
      const e = exit ?? { code: null, signal: null };
      if (overflow) {
        finish(failed("hook_output_invalid", `${label} ${JSON.stringify(command)} printed more than ${HOOK_OUTPUT_CAP} bytes`));
        return;
      }
      finish({ kind: "exited", code: e.code, signal: e.signal, stdout, stderr });
    });
  });
}

/**
 * Runs one matched handler by its source ({@link HookHandler}): a broken matcher is a `hook_error`
 * failure; a project's hook runs under `opts.launch.confineTo` ({@link runConfinedHookProcess}), or not at
 * all without it; every other hook runs as `HOOK_PROCESS` ({@link runHookProcess}). Never throws.
 */
export async function runHandler(h: HookHandler, input: unknown, opts: Omit<HookRunOptions, "timeoutS">): Promise<HookProcessResult> {
  if (h.badMatcher) return { kind: "failed", code: "hook_error", reason: h.badMatcher };
  const { confineTo, ...asHook } = opts.launch ?? {};
  const run = { ...opts, timeoutS: h.timeout, launch: asHook };
  if (h.source !== "project-settings") return runHookProcess(h.command, input, run);
  if (!confineTo) {
    return { kind: "failed", code: "hook_error", reason: `hook ${JSON.stringify(h.command)} comes from a workspace settings file and no sandbox policy was given to confine it; it was not run` };
  }
  // under every policy, danger-full-access included: a HOOK_PROCESS keeps the transcripts folder in view,
  // which the model's own shell never sees (every session's conversation)
  return runConfinedHookProcess(h.command, input, run, confineTo);
}

/**
 * Runs a hook like a tool's shell under `to.policy` (launcher/spawn.ts `launch`: bubblewrap, the session's
 * writable roots, output capped at {@link HOOK_OUTPUT_CAP}, the tree killed on timeout or cancel). Never
 * throws: a launch refusal is `hook_error`.
 */
async function runConfinedHookProcess(command: string, input: unknown, opts: HookRunOptions, to: NonNullable<HookLaunch["confineTo"]>): Promise<HookProcessResult> {
  const name = JSON.stringify(command);
  const launch = opts.launch ?? {};
  let r;
  try {
    r = await launchTool({
      policy: to.policy,
      argv: ["/bin/sh", "-c", command],
      cwd: opts.cwd,
      workspace: to.workspace,
      stdin: JSON.stringify(input),
      timeoutMs: opts.timeoutS * 1000,
      maxOutputBytes: HOOK_OUTPUT_CAP,
      ...(opts.signal ? { signal: opts.signal } : {}),
      extraEnv: opts.env ?? {},
      config: to.config,
      hiddenPaths: launch.dataDir ? [launch.dataDir] : [],
      ...(launch.bwrapPath !== undefined ? { bwrapPath: launch.bwrapPath } : {}),
    });
  } catch (e) {
    return { kind: "failed", code: "hook_error", reason: `hook ${name} could not run under the session's sandbox policy "${to.policy}": ${(e as Error).message}` };
  }
  if (r.cancelled) return { kind: "failed", code: "hook_error", reason: `hook ${name} was stopped because the turn was cancelled` };
  if (r.timed_out) return { kind: "failed", code: "hook_timeout", reason: `hook ${name} did not finish within ${opts.timeoutS} s; it was killed with its process group` };
  if (r.truncated) return { kind: "failed", code: "hook_output_invalid", reason: `hook ${name} printed more than ${HOOK_OUTPUT_CAP} bytes` };
  return { kind: "exited", code: r.exit_code, signal: r.signal ?? null, stdout: r.stdout, stderr: r.stderr };
}
