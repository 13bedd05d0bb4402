/**
 * @module tool/canned-specs
 * The JSON Schemas of the built-in tools' arguments in the compiled binary, recorded at build time
 * (build/tool-specs.ts): a turn's tool specs are then not converted from zod on the first model request
 * (docs/performance.md, issue 20). In the source tree the table is `null` and `toolSpec` converts; every
 * built-in tool's schema is a module constant, so the conversion's result cannot differ at run time.
 * Also recorded: the whole spec list (name, description, parameters, in registration order) the model is
 * offered for each `tools.offer` when no MCP server is configured, for `airlock run`'s early request
 * (cli/early-request.ts), which builds its body without zod; `null` from source (computed there by
 * `offered-specs.ts`).
 */

/** A tool spec as sent to the model (tool.ts `ToolSpec`'s shape, restated here: tool.ts imports this module). */
export interface CannedSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** Tool name → the JSON Schema `toolSpec` sends for it (without `$schema`); `null` when running from source. */
export const CANNED_PARAMETERS: Readonly<Record<string, Readonly<Record<string, unknown>>>> | null = null;

/** `tools.offer` → the built-in tools' specs offered to the model, in the registry's order; `null` when running from source. */
export const CANNED_OFFERED: Readonly<Record<"code" | "direct" | "both", readonly CannedSpec[]>> | null = null;

/** The module text that replaces this one in the compiled binary, holding `table` and `offered`. */
export function cannedSpecsModule(table: Readonly<Record<string, Readonly<Record<string, unknown>>>>, offered: Readonly<Record<"code" | "direct" | "both", readonly CannedSpec[]>>): string {
  return (
    `export const CANNED_PARAMETERS = ${JSON.stringify(table)};\n` +
    `export const CANNED_OFFERED = ${JSON.stringify(offered)};\n` +
    `export function cannedSpecsModule() { throw new Error("not in the binary"); }\n`
  );
}
