/**
 * @module test/cleanup
 * Temp folders that live for a whole `bun test` process (the compiled binary's copy, folders shared by
 * several users) and are removed once every test has run. `process.on("exit")` never fires under
 * `bun test`, so the removal runs from the global `afterAll` in test/preload.ts (bunfig `[test] preload`).
 */
import { rmSync } from "node:fs";

const folders = new Set<string>();

/** Removes `dir` (recursively) after the last test of this `bun test` process. */
export function removeAfterAllTests(dir: string): void {
  folders.add(dir);
}

/** Removes every registered folder; errors are ignored (already gone). Called by test/preload.ts. */
export function removeRegisteredFolders(): void {
  for (const dir of folders) rmSync(dir, { recursive: true, force: true });
  folders.clear();
}
