/**
 * @module cli/canned-usage
 * The usage table of the compiled binary (cli/usage-error.ts), recorded at build time. In the source tree
 * there is none (every argument error goes through commander in `main.ts`); build/build.ts replaces this
 * module in the binary with the table read from the commander program (build/usage-table.ts), written by
 * {@link cannedUsageModule}.
 */
import type { UsageTable } from "./usage-error.ts";

/**
 * The recorded table cut to what an argv whose first argument is `first` can reach: the program, its
 * options, and of its commands only `first`'s (none when `first` names no command). For that argv,
 * cli/usage-error.ts `usageError` and cli/run-argv.ts `readRunArgv` answer as with the whole table.
 * The table is held as JSON text, one text per top-level command, parsed on call: a string literal
 * costs the binary's parse next to nothing, and JSON.parse of one command's part about a tenth of the
 * whole (docs/performance.md, 2026-12-02). Returns a new object each call. `null` when running from source.
 */
export const cannedUsageFor: ((first: string | undefined) => UsageTable) | null = null;

/**
 * The character that stands for `"` in the JSON texts of the module {@link cannedUsageModule} writes: with no
 * `"` and no backslash in them, each text is a string literal the minifier quotes with `"` and JavaScriptCore
 * reads without escapes, its fast path (a template literal or an escaped one costs the binary about six times as
 * many instructions to read, for every command: docs/performance.md, issue 20, branch `wip/cold`).
 */
export const QUOTE_STAND_IN = "`";

/**
 * The module text that replaces this one in the compiled binary, holding `table`.
 * @throws Error when the table's JSON holds {@link QUOTE_STAND_IN} itself (it could not be told from a quote).
 */
export function cannedUsageModule(table: UsageTable): string {
  const rest: UsageTable = { ...table, program: { ...table.program, commands: {} } };
  const text = (value: unknown): string => {
    const json = JSON.stringify(value);
    if (json.includes(QUOTE_STAND_IN)) throw new Error(`the usage table holds ${QUOTE_STAND_IN}, which stands for a quote in the binary`);
    return json.replaceAll('"', QUOTE_STAND_IN);
  };
  const parts: Record<string, string> = {};
  for (const [name, command] of Object.entries(table.program.commands)) parts[name] = text(command);
  const q = JSON.stringify(QUOTE_STAND_IN);
  return (
    `const REST = ${JSON.stringify(text(rest))};\n` +
    `const PARTS = ${JSON.stringify(parts)};\n` +
    `export function cannedUsageFor(first) {\n` +
    `  const table = JSON.parse(REST.replaceAll(${q}, '"'));\n` +
    `  if (first !== undefined && Object.hasOwn(PARTS, first)) table.program.commands[first] = JSON.parse(PARTS[first].replaceAll(${q}, '"'));\n` +
    `  return table;\n` +
    `}\n` +
    `export function cannedUsageModule() { throw new Error("not in the binary"); }\n` +
    `export const QUOTE_STAND_IN = ${q};\n`
  );
}
