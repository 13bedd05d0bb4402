/**
 * @module test/harness-binary
 * The compiled binary for e2e tests: builds `dist/airlock` once per test file (build.ts skips when it is
 * fresh, and one build at a time holds its lock, so files running in parallel build it once), puts it
 * ALONE into an empty temp folder of the file's own with no node_modules above it (a hard link when
 * the temp folder is on the same file system, else a copy), and runs it.
 */
import { copyFileSync, existsSync, linkSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { removeAfterAllTests } from "./cleanup.ts";

export const REPO = join(import.meta.dir, "..");
let cached: Promise<string> | undefined;

/**
 * Path of the freshly built binary alone in an empty temp folder (the same one for every test of this
 * file; the folder is also the binary's cwd and HOME in {@link runBinary}). The binary is a hard link to
 * `dist/airlock` (a rebuild replaces that path by a rename, so the link keeps its bytes), or a copy.
 */
export function compiledBinary(): Promise<string> {
  cached ??= (async () => {
    const proc = Bun.spawn([process.execPath, join(REPO, "build", "build.ts")], { cwd: REPO, stdout: "pipe", stderr: "pipe" });
    const [code, err] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
    if (code !== 0) throw new Error(`build/build.ts failed (exit ${code}): ${err}`);
    const dir = mkdtempSync(join(tmpdir(), "airlock-bin-"));
    for (let d = dir; d !== dirname(d); d = dirname(d)) {
      if (existsSync(join(d, "node_modules"))) throw new Error(`${d} has a node_modules folder; the binary must be tested alone`);
    }
    const bin = join(dir, "airlock");
    try {
      linkSync(join(REPO, "dist", "airlock"), bin);
    } catch {
      copyFileSync(join(REPO, "dist", "airlock"), bin); // another file system (EXDEV) or links refused
    }
    removeAfterAllTests(dir);
    return bin;
  })();
  return cached;
}

export interface BinaryRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the binary with `args`, `stdin` text, in its own folder; kills it after `timeoutMs`. */
export async function runBinary(bin: string, args: string[], stdin = "", timeoutMs = 60_000): Promise<BinaryRun> {
  const proc = Bun.spawn([bin, ...args], { cwd: dirname(bin), stdin: "pipe", stdout: "pipe", stderr: "pipe", env: { PATH: "/usr/bin:/bin", HOME: dirname(bin) } });
  proc.stdin.write(stdin);
  await proc.stdin.end();
  const timer = setTimeout(() => proc.kill("SIGKILL"), timeoutMs);
  const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  clearTimeout(timer);
  return { code, stdout, stderr };
}
