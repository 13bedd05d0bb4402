/**
 * @module hook/context
 * What a hook adds for the model (`hookSpecificOutput.additionalContext`, Claude Code's hooks reference)
 * travels with a tool call's outcome, marked as a hook's so the model never takes it for the tool's own
 * output: {@link withHookContext}.
 */
import type { HookEvent } from "../config/schema.ts";
import type { ToolOutcome } from "../script/protocol.ts";

/** One hook's `additionalContext` for the model, with the event and hook that gave it. */
export interface HookContextNote {
  event: HookEvent;
  /** The hook's command. */
  hook: string;
  context: string;
}

/** The field of a result or error object that carries the hooks' notes. */
export const HOOK_CONTEXT_FIELD = "hook_context";

/**
 * `outcome` with `notes` added for the model (none: `outcome` itself), each note
 * `{event, hook, context}`:
 * - a refusal or error: its error object gets `hook_context: [notes]` (the model sees the whole error);
 * - a result that is a plain object: it gets `hook_context: [notes]` (a field of that name already there
 *   is kept, the notes appended to it when it is an array, else the result is wrapped as below);
 * - a string result: the notes follow it, each on its own line as `[<event> hook "<command>" adds context] …`;
 * - any other result (array, number, null): wrapped as `{result, hook_context: [notes]}`.
 * Pure; never throws.
 */
export function withHookContext(outcome: ToolOutcome, notes: readonly HookContextNote[]): ToolOutcome {
  if (notes.length === 0) return outcome;
  const list = notes.map((n) => ({ ...n }));
  if (!outcome.ok) {
    const prev = outcome.error[HOOK_CONTEXT_FIELD];
    return { ok: false, error: { ...outcome.error, [HOOK_CONTEXT_FIELD]: Array.isArray(prev) ? [...prev, ...list] : list } };
  }
  const r = outcome.result;
  if (typeof r === "string") {
    const lines = list.map((n) => `[${n.event} hook ${JSON.stringify(n.hook)} adds context] ${n.context}`);
    return { ok: true, result: `${r}\n\n${lines.join("\n")}` };
  }
  if (r !== null && typeof r === "object" && !Array.isArray(r) && Object.getPrototypeOf(r) === Object.prototype) {
    const prev = (r as Record<string, unknown>)[HOOK_CONTEXT_FIELD];
    if (prev === undefined || Array.isArray(prev)) return { ok: true, result: { ...r, [HOOK_CONTEXT_FIELD]: [...((prev as unknown[]) ?? []), ...list] } };
  }
  return { ok: true, result: { result: r, [HOOK_CONTEXT_FIELD]: list } };
}
