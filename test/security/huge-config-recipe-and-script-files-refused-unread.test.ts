/**
 * @module test/security/huge-config-recipe-and-script-files-refused-unread
 * FINDING (medium): `airlock.yaml` (or `--config FILE`), a recipe given on the CLI (`airlock run --recipe`,
 * `airlock schedule add --recipe`) and the scripted provider's `provider.script` were read whole with no size cap
 * (config/paths.ts `readRegularFile` without `maxBytes`): a sparse file of gigabytes (one `truncate` away for anything
 * that writes the config dir or the workspace the recipe sits in) made each command read all of it and build a string
 * of it, seconds to minutes and more memory than the file's size; an endless one, until the memory ran out. Fixed: a
 * config is read up to 1 MiB (`config_invalid`), a recipe up to 4 MiB wherever it is read (`recipe_invalid`), a script
 * of model turns up to 16 MiB (`config_invalid`); the size is checked before the read and the read stops past it.
 * Real `airlock` processes from source; each file is a sparse 64 MiB (above every cap, no disk used).
 */
import { describe, expect, test } from "bun:test";
import { mkdtempSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { removeAfterAllTests } from "../cleanup.ts";

const MAIN = join(import.meta.dir, "..", "..", "src", "main.ts");
const SPARSE = 64 << 20;

function dataDir(yaml = "mode: smart\nprovider: { name: scripted, script: turns.yaml }\n"): string {
  const dir = mkdtempSync(join(tmpdir(), "airlock-huge-files-"));
  removeAfterAllTests(dir);
  if (yaml) writeFileSync(join(dir, "airlock.yaml"), yaml);
  writeFileSync(join(dir, "turns.yaml"), 'turns:\n  - text: "done"\n');
  return dir;
}

function sparse(path: string): string {
  writeFileSync(path, "");
  truncateSync(path, SPARSE);
  return path;
}

/** `airlock ARGS…` with the data dir `dir`; SIGKILLed after 60 s so that a stall fails the test. */
function airlock(dir: string, args: string[]): { exitCode: number | null; stderr: string } {
  const r = Bun.spawnSync(["timeout", "-s", "KILL", "60", process.execPath, MAIN, ...args, "--data-dir", dir], {
    cwd: dir,
    env: { ...process.env, HOME: dir, AIRLOCK_HOME: undefined },
    stdin: "ignore",
  });
  return { exitCode: r.exitCode, stderr: r.stderr.toString() };
}

describe("files a user names are read up to a cap, refused unread past it", () => {
  test("airlock.yaml of 64 MiB: config_invalid naming the 1 MiB cap", () => {
    const dir = dataDir("");
    sparse(join(dir, "airlock.yaml"));
    const r = airlock(dir, ["run", "hi"]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain("config_invalid");
    expect(r.stderr).toContain("is larger than 1048576 bytes (1 MiB)");
  }, 90_000);

  test("--config FILE of 64 MiB: config_invalid naming the 1 MiB cap", () => {
    const dir = dataDir();
    const file = sparse(join(dir, "other.yaml"));
    const r = airlock(dir, ["run", "hi", "--config", file]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain("is larger than 1048576 bytes (1 MiB)");
  }, 90_000);

  test("airlock run --recipe of 64 MiB: recipe_invalid naming the 4 MiB cap", () => {
    const dir = dataDir();
    const recipe = sparse(join(dir, "nightly.yaml"));
    const r = airlock(dir, ["run", "--recipe", recipe]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain("recipe_invalid");
    expect(r.stderr).toContain("EFBIG: larger than 4194304 bytes (4 MiB)");
  }, 90_000);

  test("airlock schedule add --recipe of 64 MiB: recipe_invalid before any server is asked", () => {
    const dir = dataDir();
    const recipe = sparse(join(dir, "nightly.yaml"));
    const r = airlock(dir, ["schedule", "add", "--cron", "0 3 * * *", "--recipe", recipe, "--url", "http://127.0.0.1:9"]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain("recipe_invalid");
    expect(r.stderr).toContain("EFBIG: larger than 4194304 bytes (4 MiB)");
  }, 90_000);

  test("provider.script of 64 MiB: config_invalid naming the 16 MiB cap", () => {
    const dir = dataDir();
    sparse(join(dir, "turns.yaml"));
    const r = airlock(dir, ["run", "hi"]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain("config_invalid");
    expect(r.stderr).toContain("EFBIG: larger than 16777216 bytes (16 MiB)");
  }, 90_000);
});
