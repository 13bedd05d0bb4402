/**
 * @module test/settings-hooks-cli
 * Set-up of the CLI tests of Claude Code settings hooks (`hooks.import_claude_settings`): a temp folder with a HOME
 * (its `.claude` made), data dirs whose `airlock.yaml` imports the settings hooks and runs one scripted shell call, and
 * `bun src/main.ts` run as a real subprocess with only PATH, HOME and AIRLOCK_HOME set. The folder is removed after
 * the file's tests.
 */
import { afterAll } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const MAIN = join(import.meta.dir, "..", "src", "main.ts");

/** What one `airlock` subprocess ended with. */
export interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * A temp folder (`base`, its real path; name starting with `prefix`) holding `home` (with `.claude/`), removed after
 * all tests of the file. `dataDir(name, command, extra)` makes `base/name` with an `airlock.yaml` (autonomous,
 * workspace-write, settings hooks imported, `extra` YAML lines, the scripted provider) and a `turns.yaml` whose first
 * turn runs `developer__shell` `command` and whose second answers "done"; returns its path.
 */
export function settingsHooksBase(prefix: string): { base: string; home: string; dataDir(name: string, command?: string, extra?: string): string } {
  const base = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  afterAll(() => rmSync(base, { recursive: true, force: true }));
  const home = join(base, "home");
  mkdirSync(join(home, ".claude"), { recursive: true });
  const dataDir = (name: string, command = "true", extra = ""): string => {
    const data = join(base, name);
    mkdirSync(data);
    writeFileSync(
      join(data, "airlock.yaml"),
      `mode: autonomous\nsandbox: workspace-write\nhooks:\n  import_claude_settings: true\n${extra}provider: { name: scripted, script: turns.yaml }\n`,
    );
    writeFileSync(join(data, "turns.yaml"), `turns:\n  - tool_calls: [{ name: developer__shell, arguments: { command: ${JSON.stringify(command)} } }]\n  - text: "done"\n`);
    return data;
  };
  return { base, home, dataDir };
}

/** `bun src/main.ts ARGS` in `cwd` (default: this process's) with HOME `home` and AIRLOCK_HOME `data`; stdin ignored. */
export async function airlockWith(home: string, data: string, args: string[], cwd?: string): Promise<Ran> {
  const proc = Bun.spawn([process.execPath, MAIN, ...args], {
    ...(cwd !== undefined ? { cwd } : {}),
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, AIRLOCK_HOME: data },
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}
