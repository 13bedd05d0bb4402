/**
 * @module gate/inspectors/hooks
 * `PreToolUse` hooks as a gate inspector (SPEC §5; Claude Code's hooks reference, "PreToolUse decision
 * control"): the hook runs through src/hook/, and its answer becomes a verdict —
 * `permissionDecision` (or the legacy `decision`), exit 2 blocks with stderr as the reason. Airlock is
 * stricter than Claude Code where a hook fails: a timeout, a crash, a failure to start or broken output
 * never allows — it asks (hook_timeout / hook_error / hook_output_invalid).
 */
import type { HookMatcher } from "../../config/schema.ts";
import type { ToolDef } from "../../tool/tool.ts";
import type { Verdict } from "../verdict.ts";
import { assertNever } from "../../errors.ts";
import { hookEnvironment, matchingHooks, matchQuery, readHookAnswer, runHandler, runHookProcess, type HookAnswer, type HookFailureCode, type HookInput, type HookLaunch } from "../../hook/index.ts";

/** Extensions whose tools are airlock's own (never reported to hooks as `mcp__…`). */
export const BUILTIN_EXTENSIONS = new Set(["developer", "interpreter", "code_execution", "subagent"]);

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

/** The stdin object of one PreToolUse hook run (SPEC §5; hook/protocol.ts `HookInput`). */
export type PreToolUseInput = Extract<HookInput, { hook_event_name: "PreToolUse" }>;

/**
 * The verdict of one PreToolUse answer (hook/protocol.ts `readHookAnswer`): a failure is an ask carrying
 * its code; exit 2, `continue: false`, `permissionDecision: deny` and the legacy `decision: block` deny;
 * `permissionDecision: allow` and the legacy `approve` are an allow that answers the mode's ask (as in
 * Claude Code); `ask` / `defer` ask; no decision at all answers nothing. `updatedInput` is refused
 * (`hook_output_invalid`): airlock runs the call's own arguments, so running it would not run what the hook meant.
 */
export function preToolUseVerdict(a: HookAnswer): Verdict {
  const hook = a.hook;
  const name = JSON.stringify(hook);
  if (a.failure) return hookFailure(a.failure.code, hook, a.failure.reason);
  if (a.blocked !== undefined) return { kind: "deny", inspector: "hook", code: "denied", reason: a.blocked, hook };
  if (a.stop) return { kind: "deny", inspector: "hook", code: "denied", reason: a.stop.reason, hook };
  if (a.updatedInput !== undefined) {
    return hookFailure("hook_output_invalid", hook, `hook ${name} printed updatedInput; airlock never rewrites a call's arguments, so it cannot run the input the hook asked for`);
  }
  const why = a.permissionDecisionReason ?? a.reason;
  const decision = a.permissionDecision;
  switch (decision) {
    case "allow":
      // an explicit allow answers the mode's ask, as in Claude Code (gate/verdict.ts combine)
      return { kind: "allow", inspector: "hook", answersMode: true };
    case "deny":
      return { kind: "deny", inspector: "hook", code: "denied", reason: why || `hook ${name} denied the call`, hook };
    case "ask":
    case "defer":
      return { kind: "ask", inspector: "hook", userProof: false, reason: why || `hook ${name} asks for a person's decision`, hook };
    case undefined:
      break;
    default:
      return assertNever(decision, "permissionDecision");
  }
  if (a.decision === "block") return { kind: "deny", inspector: "hook", code: "denied", reason: why || `hook ${name} blocked the call`, hook };
  // legacy `decision: "approve"` is Claude Code's old explicit allow; no decision at all answers nothing
  return a.decision === "approve" ? { kind: "allow", inspector: "hook", answersMode: true } : { kind: "allow", inspector: "hook" };
}

/**
 * Interprets a PreToolUse hook's exit code, stdout and stderr ({@link preToolUseVerdict} of
 * hook/protocol.ts `readHookAnswer`): exit 2 → deny; exit 0 → the JSON decision, or no opinion when
 * stdout is empty; anything else, or output the protocol does not allow → an ask carrying
 * `hook_error` / `hook_output_invalid`, never an allow.
 */
export function interpretHookRun(hook: string, code: number | null, signal: string | null, stdout: string, stderr: string): Verdict {
  return preToolUseVerdict(readHookAnswer("PreToolUse", hook, { kind: "exited", code, signal, stdout, stderr }));
}

function hookFailure(code: HookFailureCode, hook: string, reason: string): Verdict {
  return { kind: "ask", inspector: "hook", userProof: false, code, reason, hook };
}

/**
 * Runs one PreToolUse hook command (hook/run.ts `runHookProcess`: `/bin/sh -c` under bubblewrap, its
 * own process group, `cwd` the workspace, the sanitized environment plus `CLAUDE_PROJECT_DIR` /
 * `AIRLOCK_PROJECT_DIR` and `extraEnv`, `timeoutS` seconds) and returns its verdict. Never throws.
 */
export async function runHook(
  command: string,
  input: PreToolUseInput,
  cwd: string,
  timeoutS: number,
  signal?: AbortSignal,
  extraEnv: Record<string, string> = {},
  launch: HookLaunch = {},
): Promise<Verdict> {
  const run = await runHookProcess(command, input, { cwd, timeoutS, ...(signal ? { signal } : {}), env: hookEnvironment(cwd, extraEnv), launch });
  return preToolUseVerdict(readHookAnswer("PreToolUse", command, run));
}

/**
 * Runs every matching PreToolUse hook in parallel (identical handlers once) and returns their verdicts.
 * `matchers`: `hooks.PreToolUse` of the session's effective config. A hook from a workspace's settings
 * file runs under `launch.confineTo` (the session's policy; hook/run.ts `runHandler`), or not at all without it.
 */
export async function runPreToolUseHooks(
  matchers: HookMatcher[],
  input: PreToolUseInput,
  cwd: string,
  signal?: AbortSignal,
  extraEnv: Record<string, string> = {},
  launch: HookLaunch = {},
): Promise<Verdict[]> {
  const hooks = matchingHooks(matchers, matchQuery(input));
  const env = hookEnvironment(cwd, extraEnv);
  return Promise.all(hooks.map(async (h) => preToolUseVerdict(readHookAnswer("PreToolUse", h.command, await runHandler(h, input, { cwd, ...(signal ? { signal } : {}), env, launch })))));
}
