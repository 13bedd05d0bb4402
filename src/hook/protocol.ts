/**
 * @module hook/protocol
 * What each hook event sends on stdin and may answer on stdout, after Claude Code's hooks reference
 * (code.claude.com/docs/en/hooks: "Hook Input", "Hook Output", per-event "decision control"). The
 * input of every event carries Claude Code's common fields (`session_id`, `transcript_path`, `cwd`,
 * `permission_mode`, `hook_event_name`) and airlock's own (`parent_session_id`, `ancestors`). An
 * answer is read strictly: JSON that is not one object, a key given twice, a key or value the event
 * does not name is `hook_output_invalid` — airlock refuses where Claude Code would guess.
 */
import { z } from "zod";
import type { HookEvent, Mode } from "../config/schema.ts";
import { assertNever } from "../errors.ts";
import type { HookFailureCode, HookProcessResult } from "./run.ts";

/** Claude Code's `permission_mode` for an airlock mode (its names: `default`, `plan`, `bypassPermissions`). */
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

/** Fields every hook input carries (Claude Code's common input fields, then airlock's own). */
export interface HookCommonInput {
  session_id: string;
  /** The session's transcript, JSONL in Claude Code's transcript shape. */
  transcript_path: string;
  /** The session's workspace (also the hook's working directory). */
  cwd: string;
  permission_mode: string;
  /** airlock: the parent session of a subagent, else null. */
  parent_session_id: string | null;
  /** airlock: the session's ancestors, root first. */
  ancestors: string[];
}

/** Where a session starts (Claude Code's `SessionStart` `source`; airlock fires `startup` and `resume`). */
export type SessionStartSource = "startup" | "resume" | "clear" | "compact";
/** Why a session ends (Claude Code's `SessionEnd` `reason`). */
export type SessionEndReason = "clear" | "logout" | "prompt_input_exit" | "other";

/** The stdin object of one hook run, per event (Claude Code's fields; names as in its reference). */
export type HookInput =
  | (HookCommonInput & {
      hook_event_name: "PreToolUse";
      tool_name: string;
      tool_input: unknown;
      tool_use_id: string;
      /** airlock: the tool's own name (`developer__shell`) beside Claude Code's (`Bash`). */
      airlock_tool_name: string;
    })
  | (HookCommonInput & {
      hook_event_name: "PostToolUse";
      tool_name: string;
      tool_input: unknown;
      tool_use_id: string;
      /** The tool's result as the model sees it (an error result is `{error: {code, message}}`). */
      tool_response: unknown;
      airlock_tool_name: string;
    })
  | (HookCommonInput & { hook_event_name: "UserPromptSubmit"; prompt: string })
  | (HookCommonInput & {
      hook_event_name: "Stop" | "SubagentStop";
      /** True when the turn already continued because a Stop hook blocked it (so a hook can avoid loops). */
      stop_hook_active: boolean;
      /** The model's last answer (newer Claude Code versions send it). */
      last_assistant_message: string;
    })
  | (HookCommonInput & { hook_event_name: "SessionStart"; source: SessionStartSource })
  | (HookCommonInput & { hook_event_name: "SessionEnd"; reason: SessionEndReason })
  | (HookCommonInput & {
      hook_event_name: "Notification";
      /** What a person would see. */
      message: string;
      /** Claude Code's notification types; airlock sends `permission_prompt` when a card parks. */
      notification_type: string;
      title?: string;
    })
  | (HookCommonInput & { hook_event_name: "PreCompact"; trigger: "manual" | "auto"; custom_instructions: string });

/**
 * What a matcher of `input`'s event is tested against (Claude Code's per-event matchers): the tool's two
 * names for `PreToolUse`/`PostToolUse`, `notification_type`, `source`, `reason`, `trigger`; null for the
 * events Claude Code runs without matchers (`UserPromptSubmit`, `Stop`, `SubagentStop`).
 */
export function matchQuery(input: HookInput): string[] | null {
  switch (input.hook_event_name) {
    case "PreToolUse":
    case "PostToolUse":
      return [input.tool_name, input.airlock_tool_name];
    case "Notification":
      return [input.notification_type];
    case "SessionStart":
      return [input.source];
    case "SessionEnd":
      return [input.reason];
    case "PreCompact":
      return [input.trigger];
    case "UserPromptSubmit":
    case "Stop":
    case "SubagentStop":
      return null;
    default:
      return assertNever(input, "hook event");
  }
}

/** A hook's answer, read (see {@link readHookAnswer}); what the event does with it is the caller's. */
export interface HookAnswer {
  /** The hook's command. */
  hook: string;
  event: HookEvent;
  /** Set when the hook gave no usable answer: it crashed, timed out, could not start, or printed what the protocol does not allow. */
  failure?: { code: HookFailureCode; reason: string };
  /** Exit 2: its stderr (or a default reason naming the hook). Claude Code: blocks where the event can block. */
  blocked?: string;
  /** JSON `decision` (`approve` only for PreToolUse, where it is the deprecated allow). */
  decision?: "approve" | "block";
  reason?: string;
  /** `continue: false`: the hook asks to stop the turn, with `stopReason` shown to the person. */
  stop?: { reason: string };
  /** Shown to the person, not the model. */
  systemMessage?: string;
  suppressOutput: boolean;
  /** `hookSpecificOutput.additionalContext`: added for the model. */
  additionalContext?: string;
  /** Exit-0 stdout that is not JSON (Claude Code adds it as context for `UserPromptSubmit` and `SessionStart`). */
  text?: string;
  /** PreToolUse only. */
  permissionDecision?: "allow" | "deny" | "ask" | "defer";
  permissionDecisionReason?: string;
  updatedInput?: Record<string, unknown>;
}

const Decision = z.enum(["allow", "deny", "ask", "defer"]);
const common = {
  continue: z.boolean().optional(),
  stopReason: z.string().optional(),
  suppressOutput: z.boolean().optional(),
  systemMessage: z.string().optional(),
};
const blockOnly = { decision: z.literal("block").optional(), reason: z.string().optional() };
const specific = <E extends HookEvent, S extends z.ZodRawShape>(event: E, shape: S) =>
  z.strictObject({ hookEventName: z.literal(event).optional(), ...shape }).optional();

/**
 * The JSON each event may print (Claude Code's hooks reference, "Common JSON fields" and each event's
 * "decision control"). Strict objects: a key the protocol does not name for that event is refused.
 */
const OUTPUT: Record<HookEvent, z.ZodType> = {
  PreToolUse: z.strictObject({
    ...common,
    decision: z.enum(["approve", "block"]).optional(),
    reason: z.string().optional(),
    hookSpecificOutput: specific("PreToolUse", {
      permissionDecision: Decision.optional(),
      permissionDecisionReason: z.string().optional(),
      updatedInput: z.record(z.string(), z.unknown()).optional(),
      additionalContext: z.string().optional(),
    }),
  }),
  PostToolUse: z.strictObject({ ...common, ...blockOnly, hookSpecificOutput: specific("PostToolUse", { additionalContext: z.string().optional() }) }),
  UserPromptSubmit: z.strictObject({ ...common, ...blockOnly, hookSpecificOutput: specific("UserPromptSubmit", { additionalContext: z.string().optional() }) }),
  Stop: z.strictObject({ ...common, ...blockOnly }),
  SubagentStop: z.strictObject({ ...common, ...blockOnly }),
  SessionStart: z.strictObject({ ...common, hookSpecificOutput: specific("SessionStart", { additionalContext: z.string().optional() }) }),
  SessionEnd: z.strictObject(common),
  Notification: z.strictObject(common),
  PreCompact: z.strictObject(common),
};

/** Events whose exit-0 plain-text stdout is context for the model (Claude Code: `UserPromptSubmit`, `SessionStart`). */
const TEXT_IS_CONTEXT: ReadonlySet<HookEvent> = new Set(["UserPromptSubmit", "SessionStart"]);

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
 * Reads what one hook run of `event` answered (Claude Code's exit-code and JSON rules):
 * - a run that failed (timeout, could not start) or exited neither 0 nor 2 (a crash, a signal) → `failure`;
 * - exit 2 → `blocked` with stderr as the reason (stdout is ignored, as in Claude Code);
 * - exit 0 with empty stdout → no opinion;
 * - exit 0 with a JSON object → its fields, checked strictly against the event's schema: not one
 *   object, a key twice, a key or value the event does not name, a `hookEventName` of another event,
 *   a legacy `decision` that disagrees with `permissionDecision` → `failure` `hook_output_invalid`;
 * - exit 0 with text that is not JSON → `text` for `UserPromptSubmit` / `SessionStart` (context, as in
 *   Claude Code), ignored for the other events, and `hook_output_invalid` for `PreToolUse` (a decision
 *   point: text that was meant as an answer must not read as "no opinion").
 * Never throws.
 */
export function readHookAnswer(event: HookEvent, hook: string, run: HookProcessResult): HookAnswer {
  const answer: HookAnswer = { hook, event, suppressOutput: false };
  const fail = (code: HookFailureCode, reason: string): HookAnswer => ({ ...answer, failure: { code, reason } });
  const name = JSON.stringify(hook);
  if (run.kind === "failed") return fail(run.code, run.reason);
  const { code, signal, stdout, stderr } = run;
  if (code === 2) return { ...answer, blocked: stderr.trim() || `hook ${name} blocked it (exit 2)` };
  if (code !== 0) {
    const how = code === null ? `was killed by ${signal ?? "a signal"}` : code === 127 ? "could not start (exit 127: command not found)" : `failed with exit ${code}`;
    const tail = stderr.trim().slice(0, 300);
    return fail("hook_error", `hook ${name} ${how}${tail ? `: ${tail}` : ""}`);
  }
  const text = stdout.trim();
  if (text === "") return answer;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    if (event === "PreToolUse" || text.startsWith("{") || text.startsWith("[")) {
      return fail("hook_output_invalid", `hook ${name} printed output that is not JSON: ${JSON.stringify(text.slice(0, 120))}`);
    }
    return TEXT_IS_CONTEXT.has(event) ? { ...answer, text } : answer;
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    if (event !== "PreToolUse" && !text.startsWith("[")) return TEXT_IS_CONTEXT.has(event) ? { ...answer, text } : answer; // a bare number or string is text
    return fail("hook_output_invalid", `hook ${name} printed JSON that breaks the ${event} protocol (expected a JSON object)`);
  }
  const dup = duplicateJsonKey(text);
  if (dup !== null) return fail("hook_output_invalid", `hook ${name} printed JSON with the key ${JSON.stringify(dup)} twice in one object; which one it meant is ambiguous`);
  const parsed = OUTPUT[event].safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`).join("; ");
    return fail("hook_output_invalid", `hook ${name} printed JSON that breaks the ${event} protocol (${issue})`);
  }
  const out = parsed.data as {
    continue?: boolean;
    stopReason?: string;
    suppressOutput?: boolean;
    systemMessage?: string;
    decision?: "approve" | "block";
    reason?: string;
    hookSpecificOutput?: { permissionDecision?: HookAnswer["permissionDecision"]; permissionDecisionReason?: string; updatedInput?: Record<string, unknown>; additionalContext?: string };
  };
  const hso = out.hookSpecificOutput;
  if (out.decision !== undefined && hso?.permissionDecision !== undefined && LEGACY_DECISION[out.decision] !== hso.permissionDecision) {
    return fail("hook_output_invalid", `hook ${name} printed both decision ${JSON.stringify(out.decision)} and permissionDecision ${JSON.stringify(hso.permissionDecision)}, which disagree`);
  }
  return {
    ...answer,
    suppressOutput: out.suppressOutput === true,
    ...(out.continue === false ? { stop: { reason: out.stopReason || `hook ${name} stopped the turn (continue: false)` } } : {}),
    ...(out.systemMessage !== undefined ? { systemMessage: out.systemMessage } : {}),
    ...(out.decision !== undefined ? { decision: out.decision } : {}),
    ...(out.reason !== undefined ? { reason: out.reason } : {}),
    ...(hso?.additionalContext !== undefined ? { additionalContext: hso.additionalContext } : {}),
    ...(hso?.permissionDecision !== undefined ? { permissionDecision: hso.permissionDecision } : {}),
    ...(hso?.permissionDecisionReason !== undefined ? { permissionDecisionReason: hso.permissionDecisionReason } : {}),
    ...(hso?.updatedInput !== undefined ? { updatedInput: hso.updatedInput } : {}),
  };
}

/** The `permissionDecision` each legacy `decision` stands for (Claude Code: `approve` → allow, `block` → deny). */
const LEGACY_DECISION = { approve: "allow", block: "deny" } as const;
