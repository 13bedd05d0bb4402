/**
 * @module tool/tool
 * What a tool is: a name (`extension__tool`), a zod argument schema (its JSON Schema is derived),
 * a model-facing description, and `execute`. Tools never judge themselves: the gate (src/gate/)
 * calls `execute` only after every inspector has allowed the call.
 */
import { z } from "zod";
import type { Config, SandboxPolicyName } from "../config/schema.ts";
import type { Session } from "../session/types.ts";
import type { ToolOutcome } from "../script/protocol.ts";
import { cannedParameters } from "./canned-specs.ts";

/** The outcome of one tool call as the model and scripts see it (defined in script/protocol.ts). */
export type { ToolOutcome };

/** A tool as listed to the model and to scripts: name, description, JSON Schema of its arguments. */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** Everything a tool's `execute` may use. Built by the gate for one call. */
export interface ToolContext {
  session: Session;
  turnId: string;
  callId: string;
  /** For calls made from a script: the id of the `code_execution__execute` call that made it. */
  parentCallId?: string;
  fromScript: boolean;
  /** Aborted when the turn is cancelled or the call times out. */
  signal: AbortSignal;
  config: Config;
  /**
   * The sandbox policy this call runs under, resolved once by the gate: the session's, or a wider one a
   * person approved for this call only (SPEC §9 elevation). Tools never re-read an elevation request.
   */
  policy: SandboxPolicyName;
  /**
   * airlock's data dir as a real path (tokens, database): hidden from every host process and refused to the
   * file tools. Absent only in tool-level tests that build a context by hand.
   */
  dataDir?: string;
  /**
   * Run a nested tool call through the gate (fromScript = true), in this call's context. `opts.signal`
   * (e.g. the script's end) cancels the nested call too, besides the turn's cancellation.
   */
  invoke(name: string, args: unknown, opts?: { signal?: AbortSignal }): Promise<ToolOutcome>;
  /**
   * The tools a script may call (every tool but `code_execution__*`), with JSON Schemas. Lists every
   * MCP server's tools, so it starts each server not yet running.
   */
  listTools(): Promise<ToolSpec[]>;
  /**
   * Where the file tools read and write text instead of the local disk: an editor's buffers through an ACP
   * client (`airlock acp`). The tools still run every path check first and only then hand the checked real
   * path to it. Absent: the local disk.
   */
  clientFiles?: ClientFiles;
}

/**
 * File I/O through a person's editor (ACP `fs/read_text_file`, `fs/write_text_file`). Paths are absolute real
 * paths the file tools already checked. Each method is present only when the client offers it.
 * Errors reject (the tool turns them into `tool_failed`).
 */
export interface ClientFiles {
  /** The file's text as the editor has it (unsaved changes included). */
  readTextFile?(path: string, signal: AbortSignal): Promise<string>;
  /** Replaces the file's text through the editor (its undo sees it). */
  writeTextFile?(path: string, content: string, signal: AbortSignal): Promise<void>;
}

/** Claude Code's view of a tool, for PreToolUse hooks (SPEC §5): its name and its `tool_input`. */
export interface ClaudeAlias<A> {
  name: string;
  input(args: A, ctx: { workspace: string }): Record<string, unknown>;
  /**
   * The inverse of {@link input}, for a PreToolUse hook's `updatedInput` (Claude Code's hooks reference,
   * "PreToolUse decision control": the changed input replaces the tool's input): Claude Code's field
   * names back to the tool's own argument names, as raw arguments the gate then validates and judges
   * from the start. `original` is the call's arguments as sent: fields Claude Code's input never
   * carries (airlock's `sandbox_permissions`, `justification`) are taken from it. Returns a string —
   * why the input cannot be mapped (a field this tool has no argument for) — instead of guessing.
   * Absent: the tool cannot take a rewritten input, and a hook's `updatedInput` for it is refused.
   */
  args?(input: Record<string, unknown>, ctx: { workspace: string; original: unknown }): Record<string, unknown> | string;
}

/**
 * A Claude-shaped input's fields mapped to argument names (`map`: Claude Code's name → the tool's),
 * or a string naming the first field the tool has no argument for. Used by the tools' {@link ClaudeAlias.args}.
 */
export function renameClaudeFields(tool: string, input: Record<string, unknown>, map: Record<string, string>): Record<string, unknown> | string {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(input)) {
    const to = Object.hasOwn(map, k) ? map[k] : undefined;
    if (to === undefined) return `${tool} has no argument for Claude Code's field ${JSON.stringify(k)} (it takes ${Object.keys(map).join(", ")})`;
    out[to] = v;
  }
  return out;
}

export interface ToolDef<A = any> {
  name: string;
  /** Model-facing text (kept in a `.txt` beside the tool where it is long). */
  description: string;
  schema: z.ZodType<A>;
  /**
   * The JSON Schema to show for the arguments instead of the one derived from `schema` — for tools whose
   * real schema lives elsewhere (an MCP server's `inputSchema`; `schema` then accepts any object).
   */
  jsonSchema?: Record<string, unknown>;
  /** True when the call changes no state: `smart` mode allows it without asking. */
  readOnly: boolean | ((args: A) => boolean);
  /**
   * True when the call reads only airlock's own state (its tool list) and touches nothing of the user's:
   * even `approve` mode runs it without asking. Default false.
   */
  inert?: boolean;
  /** Whether executing holds a permit. False for tools that mostly wait (scripts, subagents). Default true. */
  usesPermit?: boolean;
  /** Whether scripts may call it through `tools.*`. Default true (false for `code_execution__*`). */
  scriptable?: boolean;
  /** Claude Code's name and input shape, so existing hook scripts match (`Bash`, `Read`, …). */
  claude?: ClaudeAlias<A>;
  execute(args: A, ctx: ToolContext): Promise<unknown>;
}

/** A tool schema's refusal of a call's arguments as one line: `path.to.field: message; …` (`(arguments)` for the whole object). */
export function argumentIssues(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.join(".") || "(arguments)"}: ${i.message}`).join("; ");
}

/** Defines a tool; returns it unchanged but typed. */
export function defineTool<S extends z.ZodType>(def: Omit<ToolDef<z.infer<S>>, "schema"> & { schema: S }): ToolDef<z.infer<S>> {
  return def as ToolDef<z.infer<S>>;
}

/** The JSON Schema of a tool's arguments, as sent to the model and shown by `code_execution__list_tools`. */
export function toolSpec(def: ToolDef): ToolSpec {
  return toolSpecWith(def, cannedParameters());
}

/**
 * `toolSpec` with the recorded table `canned` (tool/canned-specs.ts; `null`: convert from zod): a tool given
 * by its JSON Schema (`jsonSchema`, e.g. an MCP tool's) keeps it; a zod-defined tool the table names gets
 * the recorded schema; any other is converted from zod.
 */
export function toolSpecWith(def: ToolDef, canned: Readonly<Record<string, Readonly<Record<string, unknown>>>> | null): ToolSpec {
  const recorded = def.jsonSchema === undefined && canned !== null && Object.hasOwn(canned, def.name) ? canned[def.name] : undefined;
  const parameters = def.jsonSchema
    ? structuredClone(def.jsonSchema)
    : recorded
      ? (structuredClone(recorded) as Record<string, unknown>)
      : (z.toJSONSchema(def.schema, { io: "input", unrepresentable: "any" }) as Record<string, unknown>);
  delete parameters.$schema;
  return { name: def.name, description: def.description, parameters };
}
