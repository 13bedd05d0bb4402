/**
 * @module build/help-texts
 * Records the CLI's help texts for the compiled binary (src/cli/canned-help.ts): runs `bun src/main.ts`
 * for every help invocation of every command — `--help` and `-h` after each command path, `help` and
 * `help <command>` — with stdout a pipe, and keeps each one that exits 0 with nothing on stderr.
 */
import { join } from "node:path";
import type { Command } from "commander";

const ROOT = join(import.meta.dir, "..");

/** Every help argv of the program: `[…path, "--help"]`, `[…path, "-h"]`, `["help"]`, `["help", name]`. */
export async function helpInvocations(): Promise<string[][]> {
  const { buildProgram } = await import("../src/main.ts");
  const out: string[][] = [["help"]];
  const walk = (cmd: Command, path: string[]): void => {
    out.push([...path, "--help"], [...path, "-h"]);
    for (const sub of cmd.commands) {
      if (path.length === 0) out.push(["help", sub.name()]);
      walk(sub, [...path, sub.name()]);
    }
  };
  walk(buildProgram(() => {}), []);
  return out;
}

/**
 * Runs each help invocation through the source CLI (`bun src/main.ts`, stdout piped, 4 at a time) and
 * returns `{argv joined with NUL: stdout}` for those that exit 0 with an empty stderr.
 * @throws Error when none does (the CLI is broken).
 */
export async function recordHelpTexts(): Promise<Record<string, string>> {
  const todo = await helpInvocations();
  const texts: Record<string, string> = {};
  const env = { ...process.env };
  for (const k of ["NO_COLOR", "FORCE_COLOR", "CLICOLOR_FORCE"]) delete env[k];
  const worker = async (): Promise<void> => {
    for (let argv = todo.shift(); argv; argv = todo.shift()) {
      const proc = Bun.spawn([process.execPath, join(ROOT, "src", "main.ts"), ...argv], { cwd: ROOT, env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
      const [code, out, err] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
      if (code === 0 && err === "" && out !== "") texts[argv.join("\0")] = out;
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
  if (Object.keys(texts).length === 0) throw new Error("no help text could be recorded from src/main.ts");
  // in key order, not in the order the parallel runs finished: two builds of one commit embed the same bytes
  return Object.fromEntries(Object.entries(texts).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
