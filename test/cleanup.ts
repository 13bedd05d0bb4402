/**
 * @module test/cleanup
 * Temp folders that live for a whole test file (the compiled binary's link, folders shared by several
 * users) and are removed once its tests have run. `process.on("exit")` never fires under `bun test`,
 * so the removal runs from the global `afterAll` in test/preload.ts (bunfig `[test] preload`). Under
 * `npm test` (`--parallel`, which implies `--isolate`) every file gets its own copy of this module and
 * its own run of that `afterAll`, so a file never removes a folder another file still uses; a plain
 * `bun test FILE…` shares one copy and removes everything after the last file.
 */
import { rmSync } from "node:fs";

const folders = new Set<string>();

/** Removes `dir` (recursively) after the last test of this file (of the whole run without `--isolate`). */
export function removeAfterAllTests(dir: string): void {
  folders.add(dir);
}

/** Removes every registered folder; errors are ignored (already gone). Called by test/preload.ts. */
export function removeRegisteredFolders(): void {
  for (const dir of folders) rmSync(dir, { recursive: true, force: true });
  folders.clear();
}

/** SIGKILLs each of `pids` (a test's own processes, by pid); one already gone is skipped. */
export function killPids(pids: Iterable<number>): void {
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone already
    }
  }
}
