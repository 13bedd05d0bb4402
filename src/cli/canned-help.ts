/**
 * @module cli/canned-help
 * The help texts of the compiled binary, recorded at build time. In the source tree the table is `null`
 * (every `--help` goes through commander); build/build.ts replaces this module in the binary with the
 * texts commander printed for each help invocation (build/help-texts.ts `recordHelpTexts`), so
 * `airlock --help` answers without loading commander (docs/performance.md, cold start).
 */

/**
 * Recorded stdout of each help invocation that exits 0 with nothing on stderr, keyed by its argv joined
 * with NUL (`"run\0--help"`); recorded with stdout not a terminal (commander wraps at 80 columns then).
 * `null` when running from source.
 */
export const CANNED_HELP: Readonly<Record<string, string>> | null = null;

/** The module text that replaces this one in the compiled binary, holding `texts`. */
export function cannedHelpModule(texts: Readonly<Record<string, string>>): string {
  return `export const CANNED_HELP = ${JSON.stringify(texts)};\nexport function cannedHelpModule() { throw new Error("not in the binary"); }\n`;
}
