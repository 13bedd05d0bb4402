/**
 * @module gate/inspectors/hooks
 * User `PreToolUse` hooks, compatible with Claude Code's command-hook protocol (SPEC §5; peers §2):
 * JSON on stdin, a decision on stdout (`hookSpecificOutput.permissionDecision` or legacy `decision`),
 * exit 2 blocks with stderr as the reason. Airlock is stricter than Claude Code where a hook fails:
 * a timeout, a crash, a failure to start or broken output never allows — it asks (hook_timeout /
 * hook_error / hook_output_invalid), and the hook's whole process group is killed.
 */
import { spawn } from "node:child_process";
import { z } from "zod";
import type { Config, HookMatcher, Mode, SandboxPolicyName } from "../../config/schema.ts";
import { hookSource, type HookSource } from "../../config/claude-settings.ts";
import { existsSync } from "node:fs";
import path from "node:path";
import { sanitizedEnv } from "../../launcher/env.ts";
import { HOOK_PROCESS } from "../../launcher/plan.ts";
import { launch as launchTool } from "../../launcher/spawn.ts";
import { BWRAP_INSTALL_HINT } from "../../launcher/probe.ts";
import { resolveRealPath } from "../../launcher/resolve.ts";
import { confinementFor, extraStdio, setUpSandbox } from "../../launcher/setup.ts";
import { holdLifeline, killPipeHolders, outputPipes } from "../../launcher/tree.ts";
import type { ToolDef } from "../../tool/tool.ts";
import type { Verdict } from "../verdict.ts";
import { assertNever } from "../../errors.ts";

/** Extensions whose tools are airlock's own (never reported to hooks as `mcp__…`). */
export const BUILTIN_EXTENSIONS = new Set(["developer", "interpreter", "code_execution", "subagent"]);

/** Most stdout or stderr kept from one hook run, bytes (more breaks the protocol). */
export const HOOK_OUTPUT_CAP = 1024 * 1024;

/** The name hooks see: Claude Code's alias (`Bash`, `Read` …), `mcp__server__tool` for MCP tools, else airlock's name. */
export function claudeToolName(def: Pick<ToolDef, "name" | "claude">): string {
  if (def.claude) return def.claude.name;
  const ext = def.name.split("__")[0] ?? "";
  if (def.name.includes("__") && !BUILTIN_EXTENSIONS.has(ext)) return `mcp__${def.name}`;
  return def.name;
}

/** The `tool_input` hooks see: Claude Code's field names where the tool has an alias, else the arguments. */
export function claudeToolInput(def: Pick<ToolDef, "claude">, args: unknown, workspace: string): unknown {
  if (def.claude) return def.claude.input(args, { workspace });
  return args;
}

/** Claude Code's `permission_mode` for an airlock mode. */
export function permissionModeFor(mode: Mode): string {
  switch (mode) {
    case "autonomous":
      return "bypassPermissions";
    case "smart":
    case "approve":
      return "default";
    case "chat":
      return "plan";
    default:
      return assertNever(mode, "mode");
  }
}

/**
 * The hooks whose matcher matches either name. A matcher is an anchored regex; empty or `*` matches all.
 * Identical handlers (command and timeout) of one source run once; `source` is where each came from
 * (config/claude-settings.ts `HookSource`), which decides how it is confined.
 */
export function matchingHooks(matchers: HookMatcher[], names: string[]): { command: string; timeout: number; source: HookSource; badMatcher?: string }[] {
  const out = new Map<string, { command: string; timeout: number; source: HookSource; badMatcher?: string }>();
  for (const m of matchers) {
    let hit: boolean;
    let bad: string | undefined;
    if (m.matcher === "" || m.matcher === "*") hit = true;
    else {
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
      const key = `${h.command}\0${h.timeout}\0${source}`; // identical handlers run once (as Claude Code does), per confinement
      if (!out.has(key)) out.set(key, { command: h.command, timeout: h.timeout, source, ...(bad ? { badMatcher: bad } : {}) });
    }
  }
  return [...out.values()];
}

/** The stdin object of one PreToolUse hook run (SPEC §5). */
export interface HookInput {
  hook_event_name: "PreToolUse";
  session_id: string;
  cwd: string;
  permission_mode: string;
  tool_name: string;
  tool_input: unknown;
  tool_use_id: string;
  airlock_tool_name: string;
  parent_session_id: string | null;
  ancestors: string[];
}

const Decision = z.enum(["allow", "deny", "ask", "defer"]);
/**
 * A PreToolUse hook's JSON answer, after Claude Code's hooks reference ("Common JSON fields" and
 * "PreToolUse decision control", docs.claude.com/en/docs/claude-code/hooks): the common fields
 * `continue`, `stopReason`, `suppressOutput`, `systemMessage`; the deprecated `decision`
 * (`approve` | `block`) and `reason`; and `hookSpecificOutput`. Objects are strict: a key the
 * protocol does not name (a `permissionDecision` at the top level, a typo) is not guessed at.
 */
const HookOutput = z.strictObject({
  continue: z.boolean().optional(),
  stopReason: z.string().optional(),
  suppressOutput: z.boolean().optional(),
  systemMessage: z.string().optional(),
  decision: z.enum(["approve", "block"]).optional(),
  reason: z.string().optional(),
  hookSpecificOutput: z
    .strictObject({
      hookEventName: z.literal("PreToolUse").optional(),
      permissionDecision: Decision.optional(),
      permissionDecisionReason: z.string().optional(),
      updatedInput: z.record(z.string(), z.unknown()).optional(),
      additionalContext: z.string().optional(),
    })
    .optional(),
});

/** The `permissionDecision` each legacy `decision` stands for (Claude Code: `approve` → allow, `block` → deny). */
const LEGACY_DECISION = { approve: "allow", block: "deny" } as const;

/**
 * The first key that appears twice in one object of `text` (valid JSON), or null. `JSON.parse` keeps
 * the last of duplicates silently, so `{"decision":"block","decision":"approve"}` would read as a
 * single answer; a hook's output with two values for one key is ambiguous and is refused instead.
 * Keys are compared after unescaping (`"a"` and `"\u0061"` are the same key).
 */
export function duplicateJsonKey(text: string): string | null {
  const stack: { keys: Set<string> | null; expectKey: boolean }[] = [];
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (ch === "{") stack.push({ keys: new Set(), expectKey: true });
    else if (ch === "[") stack.push({ keys: null, expectKey: false });
    else if (ch === "}" || ch === "]") stack.pop();
    else if (ch === ",") {
      const top = stack[stack.length - 1];
      if (top?.keys) top.expectKey = true;
    } else if (ch === ":") {
      const top = stack[stack.length - 1];
      if (top) top.expectKey = false;
    } else if (ch === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === "\\" ? 2 : 1;
      const top = stack[stack.length - 1];
      if (top?.keys && top.expectKey) {
        const key = JSON.parse(text.slice(i, j + 1)) as string;
        if (top.keys.has(key)) return key;
        top.keys.add(key);
      }
      i = j;
    }
  }
  return null;
}

/**
 * Interprets a hook's exit code, stdout and stderr (exit 2 → deny; exit 0 → the JSON decision, or no
 * opinion when stdout is empty; anything else → an ask carrying `hook_error` / `hook_output_invalid`).
 * Exit 0 output is read strictly (Claude Code's hooks reference is the protocol; airlock refuses where
 * Claude Code would guess): stdout that is not exactly one JSON object (plain text, JSON followed or
 * preceded by more text), a key given twice, a key or value type the protocol does not name, an
 * unknown decision, or a legacy `decision` that disagrees with `permissionDecision` is
 * `hook_output_invalid` — an ask, never an allow.
 */
export function interpretHookRun(hook: string, code: number | null, signal: string | null, stdout: string, stderr: string): Verdict {
  if (code === 2) {
    const reason = stderr.trim() || `hook ${JSON.stringify(hook)} blocked the call (exit 2)`;
    return { kind: "deny", inspector: "hook", code: "denied", reason, hook };
  }
  if (code !== 0) {
    const how = code === null ? `was killed by ${signal ?? "a signal"}` : code === 127 ? "could not start (exit 127: command not found)" : `failed with exit ${code}`;
    const tail = stderr.trim().slice(0, 300);
    return hookFailure("hook_error", hook, `hook ${JSON.stringify(hook)} ${how}${tail ? `: ${tail}` : ""}`);
  }
  const text = stdout.trim();
  if (text === "") return { kind: "allow", inspector: "hook" };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return hookFailure("hook_output_invalid", hook, `hook ${JSON.stringify(hook)} printed output that is not JSON: ${JSON.stringify(text.slice(0, 120))}`);
  }
  const dup = duplicateJsonKey(text);
  if (dup !== null) return hookFailure("hook_output_invalid", hook, `hook ${JSON.stringify(hook)} printed JSON with the key ${JSON.stringify(dup)} twice in one object; which one it meant is ambiguous`);
  const parsed = HookOutput.safeParse(json);
  if (!parsed.success || typeof json !== "object" || json === null || Array.isArray(json)) {
    const issue = parsed.success ? "expected a JSON object" : parsed.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`).join("; ");
    return hookFailure("hook_output_invalid", hook, `hook ${JSON.stringify(hook)} printed JSON that breaks the PreToolUse protocol (${issue})`);
  }
  const out = parsed.data;
  if (out.continue === false) {
    return { kind: "deny", inspector: "hook", code: "denied", reason: out.stopReason || `hook ${JSON.stringify(hook)} stopped the run (continue: false)`, hook };
  }
  const hso = out.hookSpecificOutput;
  if (out.decision !== undefined && hso?.permissionDecision !== undefined && LEGACY_DECISION[out.decision] !== hso.permissionDecision) {
    return hookFailure(
      "hook_output_invalid",
      hook,
      `hook ${JSON.stringify(hook)} printed both decision ${JSON.stringify(out.decision)} and permissionDecision ${JSON.stringify(hso.permissionDecision)}, which disagree`,
    );
  }
  if (hso?.updatedInput !== undefined) {
    // Claude Code would run the rewritten input; airlock runs the call's own arguments, so an allow (or an
    // ask a person answers) would run what the hook meant to change: refused, never silently dropped
    return hookFailure("hook_output_invalid", hook, `hook ${JSON.stringify(hook)} printed updatedInput; airlock never rewrites a call's arguments, so it cannot run the input the hook asked for`);
  }
  const why = hso?.permissionDecisionReason ?? out.reason;
  const decision = hso?.permissionDecision;
  switch (decision) {
    case "allow":
      // an explicit allow answers the mode's ask, as in Claude Code (gate/verdict.ts combine)
      return { kind: "allow", inspector: "hook", answersMode: true };
    case "deny":
      return { kind: "deny", inspector: "hook", code: "denied", reason: why || `hook ${JSON.stringify(hook)} denied the call`, hook };
    case "ask":
    case "defer":
      return { kind: "ask", inspector: "hook", userProof: false, reason: why || `hook ${JSON.stringify(hook)} asks for a person's decision`, hook };
    case undefined:
      break;
    default:
      return assertNever(decision, "permissionDecision");
  }
  if (out.decision === "block") return { kind: "deny", inspector: "hook", code: "denied", reason: why || `hook ${JSON.stringify(hook)} blocked the call`, hook };
  // legacy `decision: "approve"` is Claude Code's old explicit allow; no decision at all answers nothing
  return out.decision === "approve" ? { kind: "allow", inspector: "hook", answersMode: true } : { kind: "allow", inspector: "hook" };
}

function hookFailure(code: "hook_error" | "hook_timeout" | "hook_output_invalid", hook: string, reason: string): Verdict {
  return { kind: "ask", inspector: "hook", userProof: false, code, reason, hook };
}

/** How hook processes are confined (launcher/plan.ts `HOOK_PROCESS`). */
export interface HookLaunch {
  /** airlock's data dir: its tokens and database (`DATA_DIR_SECRETS`) are shown empty to the hook. */
  dataDir?: string;
  /** `allow_unenforced`: where bubblewrap cannot run, run the hook unconfined instead of asking (hook_error). */
  allowUnenforced?: boolean;
  /** The bubblewrap binary; default `bwrap` on the hook environment's PATH; `null` = missing (tests). */
  bwrapPath?: string | null;
  /**
   * Run the hook as the session's own shell would run (a project's hook: the model can rewrite it): under
   * the session's sandbox policy through the tool launcher (launcher/spawn.ts `launch`, workspace writable
   * only under `workspace-write`, credentials and the data dir hidden, repository metadata checked), not
   * as `HOOK_PROCESS`. Under `danger-full-access` the hook keeps `HOOK_PROCESS`, which is already less than that shell.
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

/**
 * Runs one hook command with `/bin/sh -c` in its own process group, under bubblewrap (`launch`:
 * {@link hookArgv}), cwd = `cwd`, the sanitized
 * environment plus `extraEnv` (`AIRLOCK_PROJECT_DIR`, `AIRLOCK_CONFIG_DIR` — like Claude Code's `CLAUDE_PROJECT_DIR`), `input` as JSON on stdin, and a `timeoutS` (seconds) deadline. The whole group is
 * killed when the hook exits, times out or `signal` aborts. Never throws: failures are verdicts.
 */
export async function runHook(
  command: string,
  input: HookInput,
  cwd: string,
  timeoutS: number,
  signal?: AbortSignal,
  extraEnv: Record<string, string> = {},
  launch: HookLaunch = {},
): Promise<Verdict> {
  const env = sanitizedEnv(extraEnv);
  if (!existsSync(cwd)) return hookFailure("hook_error", command, `hook ${JSON.stringify(command)} could not start: its working directory ${cwd} does not exist`);
  if (launch.confineTo && launch.confineTo.policy !== "danger-full-access") return runConfinedHook(command, input, cwd, timeoutS, signal, extraEnv, launch, launch.confineTo);
  const planned = await hookArgv(command, cwd, env, launch);
  if (typeof planned === "string") return hookFailure("hook_error", command, `hook ${JSON.stringify(command)}: ${planned}`);
  const { argv, stdio, lifelineFd } = planned;
  return new Promise<Verdict>((resolve) => {
    let settled = false;
    let timedOut = false;
    let stdout = "";
    let stderr = "";
    let overflow = false;
    let exit: { code: number | null; signal: string | null } | null = null;
    const finish = (v: Verdict) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      killGroup();
      resolve(v);
    };
    let child: ReturnType<typeof spawn>;
    try {
      // Under bubblewrap a 4th pipe is the lifeline: airlock keeps its end, unwritten, until the hook is gone.
      child = spawn(argv[0]!, argv.slice(1), { cwd, env, detached: true, stdio: ["pipe", "pipe", "pipe", ...stdio] });
    } catch (e) {
      resolve(hookFailure("hook_error", command, `hook ${JSON.stringify(command)} could not start: ${(e as Error).message}`));
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
      finish(hookFailure("hook_timeout", command, `hook ${JSON.stringify(command)} did not answer within ${timeoutS} s; it was killed`));
    }, timeoutS * 1000);
    const onAbort = () => finish(hookFailure("hook_error", command, `hook ${JSON.stringify(command)} was stopped because the turn was cancelled`));
    signal?.addEventListener("abort", onAbort, { once: true });
    if (signal?.aborted) onAbort();
    child.on("error", (e) => finish(hookFailure("hook_error", command, `hook ${JSON.stringify(command)} could not start: ${e.message}`)));
    const take = (which: "out" | "err") => (chunk: Buffer) => {
      if (which === "out") {
        if (stdout.length + chunk.length > HOOK_OUTPUT_CAP) overflow = true;
        else stdout += chunk.toString("utf8");
      } else if (stderr.length < HOOK_OUTPUT_CAP) stderr += chunk.toString("utf8");
    };
    child.stdout!.on("data", take("out"));
    child.stderr!.on("data", take("err"));
    child.stdin!.on("error", () => {}); // a hook that does not read stdin is fine
    child.stdin!.end(JSON.stringify(input));
    child.on("exit", (code, sig) => {
      exit = { code, signal: sig };
      killGroup(); // background children of the hook die with it; this also closes their copies of the pipes
      killPipeHolders(pipes); // and so does one that left the group (setsid) but kept the hook's output open
    });
    child.on("close", () => {
      if (timedOut || settled) return;
      const e = exit ?? { code: null, signal: null };
      if (overflow) {
        finish(hookFailure("hook_output_invalid", command, `hook ${JSON.stringify(command)} printed more than ${HOOK_OUTPUT_CAP} bytes`));
        return;
      }
      finish(interpretHookRun(command, e.code, e.signal, stdout, stderr));
    });
  });
}

/**
 * Runs a hook like a tool's shell under `to.policy` (launcher/spawn.ts `launch`: bubblewrap, the session's
 * writable roots, output capped at {@link HOOK_OUTPUT_CAP}, the tree killed on timeout or cancel) and reads
 * its answer with {@link interpretHookRun}. Never throws: a launch refusal is `hook_error`.
 */
async function runConfinedHook(
  command: string,
  input: HookInput,
  cwd: string,
  timeoutS: number,
  signal: AbortSignal | undefined,
  extraEnv: Record<string, string>,
  launch: HookLaunch,
  to: NonNullable<HookLaunch["confineTo"]>,
): Promise<Verdict> {
  let r;
  try {
    r = await launchTool({
      policy: to.policy,
      argv: ["/bin/sh", "-c", command],
      cwd,
      workspace: to.workspace,
      stdin: JSON.stringify(input),
      timeoutMs: timeoutS * 1000,
      maxOutputBytes: HOOK_OUTPUT_CAP,
      ...(signal ? { signal } : {}),
      extraEnv,
      config: to.config,
      hiddenPaths: launch.dataDir ? [launch.dataDir] : [],
      ...(launch.bwrapPath !== undefined ? { bwrapPath: launch.bwrapPath } : {}),
    });
  } catch (e) {
    return hookFailure("hook_error", command, `hook ${JSON.stringify(command)} could not run under the session's sandbox policy "${to.policy}": ${(e as Error).message}`);
  }
  if (r.cancelled) return hookFailure("hook_error", command, `hook ${JSON.stringify(command)} was stopped because the turn was cancelled`);
  if (r.timed_out) return hookFailure("hook_timeout", command, `hook ${JSON.stringify(command)} did not answer within ${timeoutS} s; it was killed`);
  if (r.truncated) return hookFailure("hook_output_invalid", command, `hook ${JSON.stringify(command)} printed more than ${HOOK_OUTPUT_CAP} bytes`);
  return interpretHookRun(command, r.exit_code, r.signal ?? null, r.stdout, r.stderr);
}

/**
 * Runs every matching hook in parallel (identical handlers once) and returns their verdicts.
 * `matchers`: `hooks.PreToolUse` of the session's effective config. A hook from a workspace's settings
 * file (`project-settings`) runs under `launch.confineTo` (the session's policy); without it, it is not
 * run (`hook_error`: fail closed). Every other hook runs as `HOOK_PROCESS`.
 */
export async function runPreToolUseHooks(
  matchers: HookMatcher[],
  input: HookInput,
  cwd: string,
  signal?: AbortSignal,
  extraEnv: Record<string, string> = {},
  launch: HookLaunch = {},
): Promise<Verdict[]> {
  const hooks = matchingHooks(matchers, [input.tool_name, input.airlock_tool_name]);
  const { confineTo, ...asHook } = launch;
  return Promise.all(
    hooks.map((h) => {
      if (h.badMatcher) return Promise.resolve(hookFailure("hook_error", h.command, h.badMatcher));
      if (h.source !== "project-settings") return runHook(h.command, input, cwd, h.timeout, signal, extraEnv, asHook);
      if (!confineTo) return Promise.resolve(hookFailure("hook_error", h.command, `hook ${JSON.stringify(h.command)} comes from a workspace settings file and no sandbox policy was given to confine it; it was not run`));
      return runHook(h.command, input, cwd, h.timeout, signal, extraEnv, { ...asHook, confineTo });
    }),
  );
}
