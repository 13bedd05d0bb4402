/**
 * @module gate/inspectors/hooks
 * `PreToolUse` hooks as a gate inspector (SPEC §5; Claude Code's hooks reference, "PreToolUse decision
 * control"): the hook runs through src/hook/, and its answer becomes a verdict —
 * `permissionDecision` (or the legacy `decision`), exit 2 blocks with stderr as the reason; `updatedInput`,
 * `continue: false`, `systemMessage` and `additionalContext` ride on the verdict as {@link HookEffects} for
 * the gate to act on. Airlock is stricter than Claude Code where a hook fails: a timeout, a crash, a
 * failure to start or broken output never allows — it asks (hook_timeout / hook_error / hook_output_invalid).
 */
import type { HookMatcher } from "../../config/schema.ts";
import { argumentIssues, type ToolDef } from "../../tool/tool.ts";
import type { HookEffects, Verdict } from "../verdict.ts";
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
 * Maps a hook's `updatedInput` (Claude Code's field names) back to the call's raw arguments: the new
 * arguments, `null` when it equals the input the hook was given (no rewrite), or a string saying why it
 * cannot be honoured.
 */
export type RewriteMapper = (updatedInput: Record<string, unknown>) => Record<string, unknown> | string | null;

/**
 * The {@link RewriteMapper} of one call of `def` (Claude Code's hooks reference, "PreToolUse decision
 * control": `updatedInput` replaces the tool's input). A tool with a Claude Code alias maps the fields
 * back with its `claude.args` (tool/tool.ts); a tool with an alias and no inverse refuses the rewrite; a
 * tool without an alias got its own arguments as `tool_input`, so `updatedInput` is its new arguments.
 * The result must pass the tool's schema, or the rewrite is refused with the schema's reason. `toolInput`:
 * what the hook was given (an `updatedInput` equal to it is no rewrite); `rawArgs`: the call's arguments as sent.
 */
export function rewriteMapper(def: Pick<ToolDef, "name" | "claude" | "schema">, toolInput: unknown, rawArgs: unknown, workspace: string): RewriteMapper {
  return (updated) => {
    if (Bun.deepEquals(updated, toolInput, true)) return null;
    let args: Record<string, unknown> | string;
    if (!def.claude) args = updated;
    else if (!def.claude.args) return `${def.name} (Claude Code's ${def.claude.name}) has no mapping from Claude Code's input back to its arguments, so it cannot run a rewritten input`;
    else args = def.claude.args(updated, { workspace, original: rawArgs });
    if (typeof args === "string") return args;
    const parsed = def.schema.safeParse(args);
    if (!parsed.success) return `the rewritten input is not valid for ${def.name}: ${argumentIssues(parsed.error)}`;
    return Bun.deepEquals(args, rawArgs, true) ? null : args;
  };
}

/**
 * The verdict of one PreToolUse answer (hook/protocol.ts `readHookAnswer`), after Claude Code's hooks
 * reference, "PreToolUse decision control":
 * - a failure is an ask carrying its code; exit 2 denies with stderr as the reason;
 * - `continue: false` denies and carries `effects.stop` (the gate stops the turn; it takes precedence over
 *   any decision, as in Claude Code);
 * - `permissionDecision: deny` and the legacy `decision: block` deny; `allow` and the legacy `approve`
 *   are an allow that answers the mode's ask; `ask` / `defer` ask; no decision answers nothing;
 * - `updatedInput` (unless the decision denies) is mapped back with `mapInput` into `effects.rewrite`:
 *   the gate judges the new input from the start, and the decision given with it applies to the new
 *   input. One that cannot be mapped (or with no `mapInput`) is `hook_output_invalid`: never dropped;
 * - `systemMessage`, `additionalContext` and an allow's `permissionDecisionReason` ride in `effects`.
 */
export function preToolUseVerdict(a: HookAnswer, mapInput?: RewriteMapper): Verdict {
  const hook = a.hook;
  const name = JSON.stringify(hook);
  if (a.failure) return hookFailure(a.failure.code, hook, a.failure.reason);
  if (a.blocked !== undefined) return { kind: "deny", inspector: "hook", code: "denied", reason: a.blocked, hook };
  const effects: HookEffects = {
    ...(a.systemMessage !== undefined ? { systemMessage: a.systemMessage } : {}),
    ...(a.additionalContext !== undefined ? { additionalContext: a.additionalContext } : {}),
  };
  const fx = (e: HookEffects) => (Object.keys(e).length ? { hook, effects: e } : {});
  if (a.stop) {
    return { kind: "deny", inspector: "hook", code: "denied", reason: `hook ${name} stopped the turn (continue: false): ${a.stop.reason}`, hook, ...fx({ ...effects, stop: a.stop.reason }) };
  }
  const decided = decisionVerdict(a, name);
  if (decided.kind === "deny") return { ...decided, ...fx(effects) };
  if (a.updatedInput !== undefined) {
    const mapped = mapInput ? mapInput(a.updatedInput) : "airlock could not map it back to the tool's arguments";
    if (typeof mapped === "string") return { ...hookFailure("hook_output_invalid", hook, `hook ${name} printed an updatedInput airlock cannot run: ${mapped}`), ...fx(effects) };
    if (mapped !== null) effects.rewrite = mapped;
  }
  // an explicit allow's reason is for the person (Claude Code: "shown to the user but not Claude")
  const allowWhy = decided.kind === "allow" && decided.answersMode ? (a.permissionDecisionReason ?? a.reason) : undefined;
  if (allowWhy) effects.allowReason = allowWhy;
  return { ...decided, ...fx(effects) };
}

/** The verdict `permissionDecision` (or the legacy `decision`) alone gives. */
function decisionVerdict(a: HookAnswer, name: string): Verdict {
  const hook = a.hook;
  const why = a.permissionDecisionReason ?? a.reason;
  const decision = a.permissionDecision;
  switch (decision) {
    case "allow":
      // an explicit allow answers the mode's ask, as in Claude Code (gate/verdict.ts combine)
      return { kind: "allow", inspector: "hook", answersMode: true, hook };
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
  return a.decision === "approve" ? { kind: "allow", inspector: "hook", answersMode: true, hook } : { kind: "allow", inspector: "hook" };
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
  mapInput?: RewriteMapper,
): Promise<Verdict> {
  const run = await runHookProcess(command, input, { cwd, timeoutS, ...(signal ? { signal } : {}), env: hookEnvironment(cwd, extraEnv), launch });
  return preToolUseVerdict(readHookAnswer("PreToolUse", command, run), mapInput);
}

/**
 * Runs every matching PreToolUse hook in parallel (identical handlers once) and returns their verdicts.
 * `matchers`: `hooks.PreToolUse` of the session's effective config; `mapInput`: how a hook's
 * `updatedInput` maps back to the call's arguments ({@link rewriteMapper}; without it a rewrite is refused).
 * A hook from a workspace's settings file runs under `launch.confineTo` (the session's policy; hook/run.ts
 * `runHandler`), or not at all without it.
 */
export async function runPreToolUseHooks(
  matchers: HookMatcher[],
  input: PreToolUseInput,
  cwd: string,
  signal?: AbortSignal,
  extraEnv: Record<string, string> = {},
  launch: HookLaunch = {},
  mapInput?: RewriteMapper,
): Promise<Verdict[]> {
  const hooks = matchingHooks(matchers, matchQuery(input));
  const env = hookEnvironment(cwd, extraEnv);
  return Promise.all(
    hooks.map(async (h) => preToolUseVerdict(readHookAnswer("PreToolUse", h.command, await runHandler(h, input, { cwd, ...(signal ? { signal } : {}), env, launch })), mapInput)),
  );
}
