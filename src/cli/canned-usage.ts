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

/** The module text that replaces this one in the compiled binary, holding `table`. */
export function cannedUsageModule(table: UsageTable): string {
  const rest: UsageTable = { ...table, program: { ...table.program, commands: {} } };
  const parts: Record<string, string> = {};
  for (const [name, command] of Object.entries(table.program.commands)) parts[name] = JSON.stringify(command);
  return (
    `const REST = ${JSON.stringify(JSON.stringify(rest))};\n` +
    `const PARTS = ${JSON.stringify(parts)};\n` +
    `export function cannedUsageFor(first) {\n` +
    `  const table = JSON.parse(REST);\n` +
    `  if (first !== undefined && Object.hasOwn(PARTS, first)) table.program.commands[first] = JSON.parse(PARTS[first]);\n` +
    `  return table;\n` +
    `}\n` +
    `export function cannedUsageModule() { throw new Error("not in the binary"); }\n`
  );
}
