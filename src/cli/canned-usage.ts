/**
 * @module cli/canned-usage
 * The usage table of the compiled binary (cli/usage-error.ts), recorded at build time. In the source tree
 * it is `null` (every argument error goes through commander in `main.ts`); build/build.ts replaces this
 * module in the binary with the table read from the commander program (build/usage-table.ts).
 */
import type { UsageTable } from "./usage-error.ts";

/**
 * Recorded table of the binary as JSON text (a {@link UsageTable}), parsed only by what reads it: a string
 * literal costs the module's parse next to nothing, and JSON.parse is about half of the time an object
 * literal of the same table takes (docs/performance.md, 2026-12-02). `null` when running from source.
 */
export const CANNED_USAGE_JSON: string | null = null;

/** The module text that replaces this one in the compiled binary, holding `table`. */
export function cannedUsageModule(table: UsageTable): string {
  return `export const CANNED_USAGE_JSON = ${JSON.stringify(JSON.stringify(table))};\nexport function cannedUsageModule() { throw new Error("not in the binary"); }\n`;
}

