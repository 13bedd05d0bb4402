/**
 * @module cli/canned-usage
 * The usage table of the compiled binary (cli/usage-error.ts), recorded at build time. In the source tree
 * it is `null` (every argument error goes through commander in `main.ts`); build/build.ts replaces this
 * module in the binary with the table read from the commander program (build/usage-table.ts).
 */
import type { UsageTable } from "./usage-error.ts";

/** Recorded table of the binary; `null` when running from source. */
export const CANNED_USAGE: UsageTable | null = null;

/** The module text that replaces this one in the compiled binary, holding `table`. */
export function cannedUsageModule(table: UsageTable): string {
  return `export const CANNED_USAGE = JSON.parse(${JSON.stringify(JSON.stringify(table))});\nexport function cannedUsageModule() { throw new Error("not in the binary"); }\n`;
}

