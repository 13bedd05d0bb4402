/**
 * @module test/harness-release
 * The release build for tests. {@link sharedRelease}: the three-target release (`bun build/release.ts`)
 * built ONCE per test run and shared by every test file that checks it (release.test, the installer
 * tests), in a temp folder keyed by the run and a digest of what the build reads; files running at once
 * (`bun test --parallel`) wait on a lock folder while one of them builds. {@link buildRelease}: a fresh
 * build of its own, for the test that compares two builds.
 */
import { readdirSync, renameSync, rmSync, mkdirSync, existsSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { alive, lockOutput } from "../build/build.ts";
import { commitFacts } from "../build/release.ts";
import { removeAfterAllTests } from "./cleanup.ts";

export const REPO = join(import.meta.dir, "..");
/** Where the shared releases live: `<run pid>-<digest>/` (a finished build), `….lock`, `.partial-<pid>/`. */
export const SHARED_RELEASE_ROOT = join(tmpdir(), "airlock-test-release");

/** Runs build/release.ts into `out` (default: a fresh temp dir, removed after the file). Returns the dir; throws with the script's stderr on failure. */
export async function buildRelease(targets: string[] = [], out?: string): Promise<string> {
  if (!out) {
    out = join(tmpdir(), `airlock-release-${process.pid}-${Math.random().toString(36).slice(2)}`);
    removeAfterAllTests(out);
  }
  mkdirSync(out, { recursive: true });
  const args = [process.execPath, join(REPO, "build", "release.ts"), "--out", out, ...targets.flatMap((t) => ["--target", t])];
  const proc = Bun.spawn(args, { cwd: REPO, stdout: "pipe", stderr: "pipe" });
  const [code, err] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
  if (code !== 0) throw new Error(`build/release.ts failed (exit ${code}): ${err}`);
  return out;
}

/**
 * The test run this process belongs to: under `bun test --parallel` every file runs in a worker process
 * of one coordinator (`BUN_TEST_WORKER_ID` is set, the coordinator is the parent); otherwise this process.
 */
export function testRunPid(): number {
  return process.env.BUN_TEST_WORKER_ID ? process.ppid : process.pid;
}

/**
 * SHA-256 (hex) over what a release build reads from the checkout — every tracked or untracked,
 * not ignored file under src/ and build/, scripts/install.sh, package.json, package-lock.json and
 * tsconfig.json (path and bytes) — and the commit facts release.json embeds, the Bun version and the
 * checkout's path. Throws when git cannot list the files.
 */
export function releaseInputsDigest(): string {
  const ls = Bun.spawnSync(["git", "ls-files", "-z", "-co", "--exclude-standard", "--", "src", "build", "scripts/install.sh", "package.json", "package-lock.json", "tsconfig.json"], {
    cwd: REPO,
    stdout: "pipe",
    stderr: "pipe",
  });
  if (ls.exitCode !== 0) throw new Error(`git ls-files failed: ${ls.stderr.toString()}`);
  const files = ls.stdout.toString().split("\0").filter(Boolean).sort();
  const h = new Bun.CryptoHasher("sha256");
  h.update(JSON.stringify({ repo: REPO, bun: Bun.version, facts: commitFacts() }));
  for (const f of files) {
    h.update(`\0${f}\0`);
    if (existsSync(join(REPO, f))) h.update(readFileSync(join(REPO, f)));
  }
  return h.digest("hex");
}

/** Removes the shared releases, partial builds and locks of runs (or builders) that no longer run. */
function removeDeadRuns(except: string): void {
  let names: string[];
  try {
    names = readdirSync(SHARED_RELEASE_ROOT);
  } catch {
    return;
  }
  for (const name of names) {
    if (name === except || name === `${except}.lock`) continue;
    const m = /^(?:\.partial-)?(\d+)/.exec(name);
    if (m && !alive(Number(m[1]))) rmSync(join(SHARED_RELEASE_ROOT, name), { recursive: true, force: true });
  }
}

let shared: Promise<string> | undefined;

/**
 * The folder of the release of all three targets for this run (build/release.ts's output: the
 * artifacts, install.sh, SHA256SUMS, release.json). The first file of the run to ask builds it into a
 * partial folder and renames it into place under the lock `<folder>.lock` (build/build.ts `lockOutput`,
 * taken over from a dead builder); the others wait for the lock and find it. The folder outlives the
 * files (another may still need it): the next run removes the folders of runs that ended; a run
 * without `--parallel` removes it after its last file. Throws with build/release.ts's stderr on failure.
 */
export function sharedRelease(): Promise<string> {
  shared ??= (async () => {
    const key = `${testRunPid()}-${releaseInputsDigest().slice(0, 16)}`;
    const dir = join(SHARED_RELEASE_ROOT, key);
    mkdirSync(SHARED_RELEASE_ROOT, { recursive: true });
    if (!process.env.BUN_TEST_WORKER_ID) removeAfterAllTests(dir);
    const unlock = await lockOutput(dir);
    try {
      if (existsSync(join(dir, "release.json"))) return dir;
      removeDeadRuns(key);
      const partial = join(SHARED_RELEASE_ROOT, `.partial-${process.pid}`);
      rmSync(partial, { recursive: true, force: true });
      try {
        await buildRelease([], partial);
        rmSync(dir, { recursive: true, force: true });
        renameSync(partial, dir);
      } finally {
        rmSync(partial, { recursive: true, force: true });
      }
      return dir;
    } finally {
      unlock();
    }
  })();
  return shared;
}

export { readElf } from "../build/elf.ts";
