/**
 * @module cli/call-summary
 * What a tool call is about, in one line for a person: the shell command, the file path, the subagent's
 * instructions, the program, else the arguments as compact JSON. The one summary of a call the text
 * surfaces print (`airlock run`'s `→` and `✗` lines and its refused calls on stderr, `airlock acp`'s tool
 * call titles). Its text comes from the model, so it is made {@link safe} for a terminal: it cannot move the
 * cursor, retitle the window or start a line of its own. Pure; it imports only cli/output.ts (it is on `airlock run`'s path).
 */

import { safe } from "./output.ts";

/** The longest summary {@link callSummary} returns by default, characters. */
export const SUMMARY_MAX = 80;

/** The argument that says what a call is about, in this order: the first one present as a non-empty string. */
const TELLING_KEYS = ["command", "path", "instructions", "code"] as const;

/**
 * A one-line summary of a call's arguments: the first of `command`, `path`, `instructions`, `code` that is
 * a non-empty string (so `developer__shell` → its command, the file tools → their path, `subagent__spawn`
 * → its instructions, the interpreters and scripts → their program), else the arguments as compact JSON
 * (an MCP tool's), `""` when there are none (`{}`, not an object). Surrounding blanks are dropped, every
 * control, line break and bidirectional character is escaped ({@link safe}), and the result is at most
 * `max` characters (cut with `…`, never inside an escape).
 * @param max the most characters returned (≥ 2; default {@link SUMMARY_MAX}).
 */
export function callSummary(args: unknown, max: number = SUMMARY_MAX): string {
  let text = "";
  if (args !== null && typeof args === "object" && !Array.isArray(args)) {
    const a = args as Record<string, unknown>;
    const key = TELLING_KEYS.find((k) => typeof a[k] === "string" && (a[k] as string).trim() !== "");
    if (key) text = a[key] as string;
    else if (Object.keys(a).length > 0) text = compactJson(a);
  } else if (args !== undefined && args !== null) {
    text = compactJson(args);
  }
  return cut(text.trim(), Math.max(2, max));
}

/**
 * A call as the text surfaces name it: `prefix` (who made it: cli/chain-prefix.ts, `""` for the root's own), the
 * tool (escaped) and its {@link callSummary} when that says anything — `[root›subagent#0] developer__shell ls`.
 */
export function callTitle(prefix: string, tool: string, args: unknown): string {
  const short = callSummary(args);
  return `${prefix}${safe(tool)}${short ? ` ${short}` : ""}`;
}

/** `v` as compact JSON (`String(v)` when it cannot be). */
function compactJson(v: unknown): string {
  try {
    return JSON.stringify(v) ?? "";
  } catch {
    return String(v);
  }
}

/** `text` made {@link safe} and cut to at most `max` characters with `…`, whole characters and escapes only. */
function cut(text: string, max: number): string {
  const whole = safe(text);
  if (whole.length <= max) return whole;
  let out = "";
  for (const ch of text) {
    const shown = safe(ch);
    if (out.length + shown.length > max - 1) break;
    out += shown;
  }
  return `${out}…`;
}
