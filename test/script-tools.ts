/**
 * @module test/script-tools
 * Tool callbacks for `ScriptPool.run` (one that records each call and answers `{echoed: args}`, one that answers its
 * arguments), and a script result's code.
 */
import type { ToolOutcome } from "../src/script/protocol.ts";
import type { ScriptResult } from "../src/script/pool.ts";

/** A tool callback answering each call with its own arguments. */
export const echoTool = async (_name: string, args: unknown): Promise<ToolOutcome> => ({ ok: true, result: args });

/** `"ok"`, or the failed script's error code. */
export const codeOf = (r: ScriptResult): string => (r.ok ? "ok" : r.error.code);

/** `calls`: every call in order; `fn`: the callback to hand `ScriptPool.run`. */
export function toolRecorder(): { calls: Array<{ name: string; args: unknown }>; fn: (name: string, args: unknown) => Promise<ToolOutcome> } {
  const calls: Array<{ name: string; args: unknown }> = [];
  const fn = async (name: string, args: unknown): Promise<ToolOutcome> => (calls.push({ name, args }), { ok: true, result: { echoed: args } });
  return { calls, fn };
}
