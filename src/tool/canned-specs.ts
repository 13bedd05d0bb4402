/**
 * @module tool/canned-specs
 * The JSON Schemas of the built-in tools' arguments in the compiled binary, recorded at build time
 * (build/tool-specs.ts): a turn's tool specs are then not converted from zod on the first model request
 * (docs/performance.md, issue 20). In the source tree the table is `null` and `toolSpec` converts; every
 * built-in tool's schema is a module constant, so the conversion's result cannot differ at run time.
 */

/** Tool name → the JSON Schema `toolSpec` sends for it (without `$schema`); `null` when running from source. */
export const CANNED_PARAMETERS: Readonly<Record<string, Readonly<Record<string, unknown>>>> | null = null;

/** The module text that replaces this one in the compiled binary, holding `table`. */
export function cannedSpecsModule(table: Readonly<Record<string, Readonly<Record<string, unknown>>>>): string {
  return `export const CANNED_PARAMETERS = ${JSON.stringify(table)};\nexport function cannedSpecsModule() { throw new Error("not in the binary"); }\n`;
}
