/**
 * @module cli/sandbox-exec
 * PLACEHOLDER for the hidden `airlock __sandbox-exec …` command (the sandbox's re-entry into the binary).
 * The sandbox engineer owns this file and replaces it; `main.ts` calls `sandboxExec(argv)` with the
 * arguments after `__sandbox-exec`, before commander parses anything, and exits with the returned code.
 */

/** Not implemented yet: says so on stderr and returns exit code 1. */
export async function sandboxExec(argv: string[]): Promise<number> {
  void argv;
  process.stderr.write("airlock: __sandbox-exec: not implemented yet\n");
  return 1;
}
