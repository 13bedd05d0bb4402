/**
 * @module tool/canned-specs
 * The JSON Schemas of the built-in tools' arguments in the compiled binary, recorded at build time
 * (build/tool-specs.ts): a turn's tool specs are then not converted from zod on the first model request
 * (docs/performance.md, issue 20). In the source tree the table is `null` and `toolSpec` converts; every
 * built-in tool's schema is a module constant, so the conversion's result cannot differ at run time.
 * Also recorded: the whole spec list (name, description, parameters, in registration order) the model is
 * offered for each `tools.offer` when no MCP server is configured, for `airlock run`'s early request
 * (cli/early-request.ts), which builds its body without zod; `null` from source (computed there by
 * `offered-specs.ts`). Both are kept as JSON text and parsed when first asked for: the early request loads
 * this module, and compiling them as object literals cost it about 2M instructions (docs/performance.md, issue 20).
 */

/** A tool spec as sent to the model (tool.ts `ToolSpec`'s shape, restated here: tool.ts imports this module). */
export interface CannedSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** `tools.offer` values the recorded offered specs are kept for. */
export type CannedOffer = "code" | "direct" | "both";

/**
 * Tool name → the JSON Schema `toolSpec` sends for it (without `$schema`); `null` when running from source.
 * In the binary it is parsed from its recorded JSON text on the first call (a JSON text costs far less to
 * load than the same object literal compiled, docs/performance.md, issue 20) and the same object is returned after.
 */
export function cannedParameters(): Readonly<Record<string, Readonly<Record<string, unknown>>>> | null {
  return null;
}

/**
 * The built-in tools' specs offered to the model for `offer`, in the registry's order, parsed anew from their
 * recorded JSON text on each call (the caller may change them); `null` when running from source.
 */
export function cannedOffered(_offer: CannedOffer): CannedSpec[] | null {
  return null;
}

/**
 * The module text that replaces this one in the compiled binary, holding `table` and `offered` as JSON texts
 * (string literals) parsed on demand by {@link cannedParameters} and {@link cannedOffered}.
 */
export function cannedSpecsModule(table: Readonly<Record<string, Readonly<Record<string, unknown>>>>, offered: Readonly<Record<CannedOffer, readonly CannedSpec[]>>): string {
  const texts = { code: JSON.stringify(offered.code), direct: JSON.stringify(offered.direct), both: JSON.stringify(offered.both) };
  return (
    `const PARAMETERS = ${JSON.stringify(JSON.stringify(table))};\n` +
    `const OFFERED = ${JSON.stringify(texts)};\n` +
    `let parameters;\n` +
    `export function cannedParameters() { return (parameters ??= JSON.parse(PARAMETERS)); }\n` +
    `export function cannedOffered(offer) { return Object.hasOwn(OFFERED, offer) ? JSON.parse(OFFERED[offer]) : null; }\n` +
    `export function cannedSpecsModule() { throw new Error("not in the binary"); }\n`
  );
}
