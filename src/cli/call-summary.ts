/**
 * @module cli/call-summary
 * What a tool call is about, in one line for a person: a built-in tool's shell command, file path, subagent's
 * instructions or program, else (any other tool's) the arguments as compact JSON. The one summary of a call the text
 * surfaces print (`airlock run`'s `→` and `✗` lines and its refused calls on stderr, `airlock acp`'s tool
 * call titles). Its text comes from the model, so it is made {@link safe} for a terminal: it cannot move the
 * cursor, retitle the window or start a line of its own. Pure; it imports only cli/output.ts (it is on `airlock run`'s path).
 */

import { safe } from "./output.ts";

/** The longest summary {@link callSummary} returns by default, characters. */
export const SUMMARY_MAX = 80;

/**
 * The argument that says what a call of a built-in tool is about: the one that tool runs (its schema takes no
 * other key of this kind). Other tools (an MCP server's, which runs its own keys and may drop unknown ones)
 * name no key: a `command` or `path` the model added beside what the tool really takes would otherwise be
 * shown as the call (MCP server names of built-in tools are reserved: config/schema.ts `RESERVED_SERVER_NAMES`).
 */
const TELLING_KEY: Readonly<Record<string, string>> = {
  developer__shell: "command",
  developer__read_file: "path",
  developer__write_file: "path",
  developer__edit_file: "path",
  developer__list_dir: "path",
  subagent__spawn: "instructions",
  interpreter__python: "code",
  interpreter__js: "code",
  code_execution__execute: "code",
};

/**
 * A one-line summary of a call of `tool` with arguments `args`: the argument that built-in tool runs
 * (`developer__shell` → its command, the file tools → their path, `subagent__spawn` → its instructions, the
 * interpreters and scripts → their program) when it is a non-empty string, else the arguments as compact JSON
 * (any other tool's, an MCP tool's: all its keys, in the model's order), `""` when there are none (`{}`, not an
 * object). Surrounding blanks are dropped, every control, line break and bidirectional character is escaped
 * ({@link safe}), and the result is at most `max` characters (cut with `…`, never inside an escape).
 * @param max the most characters returned (≥ 2; default {@link SUMMARY_MAX}).
 */
export function callSummary(tool: string, args: unknown, max: number = SUMMARY_MAX): string {
  let text = "";
  if (args !== null && typeof args === "object" && !Array.isArray(args)) {
    const a = args as Record<string, unknown>;
    const key = Object.hasOwn(TELLING_KEY, tool) ? TELLING_KEY[tool]! : undefined;
    const v = key !== undefined && Object.hasOwn(a, key) ? a[key] : undefined;
    if (typeof v === "string" && v.trim() !== "") text = v;
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
  const short = callSummary(tool, args);
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
