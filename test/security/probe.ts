/**
 * @module test/security/probe
 * Runs test/security/fixtures/launcher-probe.ts (airlock's launcher and hook runner in a bun child)
 * as a test user, so a wall is checked with airlock running as root and as `nobody`.
 */
import { chownSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { sharedTempDir, type TestUser } from "../as-user.ts";

const made: string[] = [];

/** `sharedTempDir(prefix)` (0777, usable by every test user), removed by {@link removeTempDirs}. */
export function tempBase(prefix: string): string {
  const dir = sharedTempDir(prefix);
  made.push(dir);
  return dir;
}

/** Removes every folder {@link tempBase} made (call it from `afterAll`). */
export function removeTempDirs(): void {
  for (const d of made.splice(0)) rmSync(d, { recursive: true, force: true });
}

export const PROBE = join(import.meta.dir, "fixtures", "launcher-probe.ts");

/** The environment airlock runs with in these tests: `home` as HOME (writable by every test user). */
export function probeEnv(home: string, extra: Record<string, string> = {}): Record<string, string> {
  return { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: home, XDG_CACHE_HOME: join(home, ".cache"), ...extra };
}

/** Starts the probe as `user` with `request` on stdin. `stdout` holds its JSON lines. */
export function startProbe(user: TestUser, request: unknown, env: Record<string, string>): Bun.Subprocess<"pipe", "pipe", "pipe"> {
  const proc = Bun.spawn([...user.prefix, process.execPath, PROBE], { stdin: "pipe", stdout: "pipe", stderr: "pipe", env, cwd: "/" });
  proc.stdin.write(JSON.stringify(request));
  void proc.stdin.end();
  return proc;
}

/** Runs the probe as `user` to the end: its result line (the launcher's `LaunchResult` or the hook's verdict). */
export async function runProbe(user: TestUser, request: unknown, env: Record<string, string>): Promise<any> {
  const proc = startProbe(user, request, env);
  const [code, out, err] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  if (code !== 0) throw new Error(`probe as ${user.name} exited ${code}: ${err}`);
  const lines = out.trim().split("\n");
  return JSON.parse(lines[lines.length - 1]!);
}

/**
 * A folder owned by `user` (mode 0700 like a real data dir or workspace) under `parent`, with `files`
 * written into it (mode 0600, owned by `user`).
 */
export function ownedDir(user: TestUser, parent: string, name: string, files: Record<string, string> = {}): string {
  const dir = join(parent, name);
  mkdirSync(dir, { mode: 0o700 });
  chownSync(dir, user.uid, user.uid);
  for (const [f, text] of Object.entries(files)) {
    writeFileSync(join(dir, f), text, { mode: 0o600 });
    chownSync(join(dir, f), user.uid, user.uid);
  }
  return dir;
}
