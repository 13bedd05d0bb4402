/**
 * @module hook
 * Hooks for every event (Claude Code's command-hook protocol): {@link runEventHooks} runs the
 * matching handlers of one event and reads each answer. What an answer does — block a call, a prompt,
 * the end of a turn; add context; show a message — is decided where the event fires (the gate for
 * `PreToolUse`, the agent loop for the others).
 */
import type { HookMatcher } from "../config/schema.ts";
import { matchQuery, readHookAnswer, type HookAnswer, type HookInput } from "./protocol.ts";
import { hookEnvironment, matchingHooks, runHandler, type HookLaunch } from "./run.ts";

export * from "./protocol.ts";
export * from "./context.ts";
export { HOOK_OUTPUT_CAP, hookEnvironment, matchingHooks, runHandler, runHookProcess, type HookFailureCode, type HookHandler, type HookLaunch, type HookProcessResult } from "./run.ts";

/** Where and how the hooks of one event run. */
export interface EventHookContext {
  /** The session's workspace: the hooks' working directory, `CLAUDE_PROJECT_DIR` and `AIRLOCK_PROJECT_DIR`. */
  workspace: string;
  /** Aborting it kills the running hooks (their answers are `hook_error` failures). */
  signal?: AbortSignal;
  /** Extra environment (e.g. `AIRLOCK_CONFIG_DIR`), added to the sanitized one. */
  env?: Record<string, string>;
  launch?: HookLaunch;
}

/**
 * Runs every handler of `matchers` whose matcher matches `input` (hook/protocol.ts `matchQuery`), in
 * parallel, identical handlers once, and reads each answer. Answers come back in handler order.
 * Never throws: a handler that fails is an answer with `failure`.
 */
export async function runEventHooks(matchers: readonly HookMatcher[], input: HookInput, ctx: EventHookContext): Promise<HookAnswer[]> {
  const event = input.hook_event_name;
  const handlers = matchingHooks(matchers, matchQuery(input));
  const env = hookEnvironment(ctx.workspace, ctx.env);
  return Promise.all(
    handlers.map(async (h): Promise<HookAnswer> => {
      const run = await runHandler(h, input, { cwd: ctx.workspace, ...(ctx.signal ? { signal: ctx.signal } : {}), env, ...(ctx.launch ? { launch: ctx.launch } : {}) });
      return readHookAnswer(event, h.command, run);
    }),
  );
}
