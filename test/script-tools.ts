/**
 * @module test/script-tools
 * A tool callback for `ScriptPool.run` that records each call (name, arguments) and answers `{echoed: args}`.
 */
import type { ToolOutcome } from "../src/script/protocol.ts";

/** `calls`: every call in order; `fn`: the callback to hand `ScriptPool.run`. */
export function toolRecorder(): { calls: Array<{ name: string; args: unknown }>; fn: (name: string, args: unknown) => Promise<ToolOutcome> } {
  const calls: Array<{ name: string; args: unknown }> = [];
  const fn = async (name: string, args: unknown): Promise<ToolOutcome> => (calls.push({ name, args }), { ok: true, result: { echoed: args } });
  return { calls, fn };
}
