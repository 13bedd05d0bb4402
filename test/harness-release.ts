/**
 * @module test/harness-release
 * The release build for tests: `bun build/release.ts --out <temp>` run once per test file and target
 * set (the outputs cached in a temp dir).
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { removeAfterAllTests } from "./cleanup.ts";

export const REPO = join(import.meta.dir, "..");
const cache = new Map<string, Promise<string>>();

/** Runs build/release.ts into a fresh temp dir. Returns the dir; throws with the script's stderr on failure. */
export async function buildRelease(targets: string[] = []): Promise<string> {
  const out = mkdtempSync(join(tmpdir(), "airlock-release-"));
  removeAfterAllTests(out);
  const args = [process.execPath, join(REPO, "build", "release.ts"), "--out", out, ...targets.flatMap((t) => ["--target", t])];
  const proc = Bun.spawn(args, { cwd: REPO, stdout: "pipe", stderr: "pipe" });
  const [code, err] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
  if (code !== 0) throw new Error(`build/release.ts failed (exit ${code}): ${err}`);
  return out;
}

/** {@link buildRelease}, once per test process for a given target list. */
export function cachedRelease(targets: string[] = []): Promise<string> {
  const key = targets.join(",");
  let p = cache.get(key);
  if (!p) {
    p = buildRelease(targets);
    cache.set(key, p);
  }
  return p;
}

export { readElf } from "../build/elf.ts";
