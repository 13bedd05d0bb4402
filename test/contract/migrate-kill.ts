/**
 * @module test/contract/migrate-kill
 * Kills a migration from inside its transaction, for the contract tests that prove a crash mid-migration leaves
 * the database at the version before (migrate-stop-child.ts pauses at `stopAt` and prints `stopped`).
 */
import { spawn } from "node:child_process";
import { join } from "node:path";

const CHILD = join(import.meta.dir, "migrate-stop-child.ts");

/**
 * Starts the kill child on `target` (`dialect`: sqlite or postgres), waits for its `stopped` line (it is then inside
 * the version's transaction) and SIGKILLs it.
 * @returns what the child printed on stdout. @throws when the child ended without being killed there.
 */
export function killInsideMigration(dialect: string, target: string, stopAt: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [CHILD, dialect, target, stopAt, "forever"], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    p.stdout.on("data", (d) => {
      out += d;
      if (out.includes("stopped\n")) p.kill("SIGKILL");
    });
    p.stderr.on("data", (d) => (err += d));
    p.on("close", (_code, signal) => (signal === "SIGKILL" ? resolve(out) : reject(new Error(`the child was not killed inside the migration: ${out} ${err}`))));
  });
}
