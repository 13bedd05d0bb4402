/**
 * @module config/paths.test
 * Data dir resolution order and token files (0600, created once, stable, tightened) on a real filesystem.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, closeSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { AirlockError } from "../errors.ts";
import { ensureTokens, pickDataDir, readAtMost, readRegularFile, resolveDataDir } from "./paths.ts";

const dirs: string[] = [];
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), "airlock-paths-"));
  dirs.push(d);
  return d;
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const mode = (p: string) => statSync(p).mode & 0o777;

describe("pickDataDir", () => {
  const env = { AIRLOCK_HOME: "/a/home", XDG_DATA_HOME: "/xdg", HOME: "/home/u" };

  test("--data-dir wins over everything", () => {
    expect(pickDataDir({ flag: "/from/flag", env })).toEqual({ dir: "/from/flag", source: "flag" });
  });
  test("then $AIRLOCK_HOME", () => {
    expect(pickDataDir({ env })).toEqual({ dir: "/a/home", source: "AIRLOCK_HOME" });
  });
  test("then $XDG_DATA_HOME/airlock", () => {
    expect(pickDataDir({ env: { XDG_DATA_HOME: "/xdg", HOME: "/home/u" } })).toEqual({ dir: "/xdg/airlock", source: "XDG_DATA_HOME" });
  });
  test("then ~/.local/share/airlock", () => {
    expect(pickDataDir({ env: { HOME: "/home/u" } })).toEqual({ dir: "/home/u/.local/share/airlock", source: "home" });
  });
  test("empty values and a relative $XDG_DATA_HOME are ignored (XDG requires absolute paths)", () => {
    expect(pickDataDir({ flag: "", env: { AIRLOCK_HOME: "", XDG_DATA_HOME: "rel/xdg", HOME: "/home/u" } })).toEqual({
      dir: "/home/u/.local/share/airlock",
      source: "home",
    });
  });
  test("without an absolute $HOME, the OS account's home (node:os, loaded only then)", () => {
    expect(pickDataDir({ env: {} })).toEqual({ dir: join(homedir(), ".local", "share", "airlock"), source: "home" });
    expect(pickDataDir({ env: { HOME: "rel" } }).dir).toBe(join(homedir(), ".local", "share", "airlock"));
  });
  test("a relative flag resolves against the cwd", () => {
    expect(pickDataDir({ flag: "rel/dir", env: {} }).dir).toBe(join(process.cwd(), "rel/dir"));
  });
});

describe("resolveDataDir", () => {
  test("creates a missing data dir (and parents) with mode 0700", () => {
    const root = tempDir();
    const dir = join(root, "deep", "airlock");
    expect(resolveDataDir({ env: { AIRLOCK_HOME: dir } })).toBe(dir);
    expect(statSync(dir).isDirectory()).toBe(true);
    expect(mode(dir)).toBe(0o700);
  });

  test("an existing directory is used as it is", () => {
    const dir = tempDir();
    chmodSync(dir, 0o750);
    expect(resolveDataDir({ flag: dir, env: {} })).toBe(dir);
    expect(mode(dir)).toBe(0o750);
  });

  test("a path that is a file is a usage error naming it", () => {
    const file = join(tempDir(), "plain-file");
    writeFileSync(file, "x");
    let err: unknown;
    try {
      resolveDataDir({ flag: file, env: {} });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(AirlockError);
    expect((err as AirlockError).code).toBe("usage");
    expect((err as AirlockError).message).toContain(file);
  });
});

describe("ensureTokens", () => {
  test("creates both token files with mode 0600: 32 random bytes in hex, different from each other", () => {
    const dir = tempDir();
    const t = ensureTokens(dir, { warn: () => {} });
    expect(t.apiTokenPath).toBe(join(dir, "api-token"));
    expect(t.approverTokenPath).toBe(join(dir, "approver-token"));
    expect(t.apiToken).toMatch(/^[0-9a-f]{64}$/);
    expect(t.approverToken).toMatch(/^[0-9a-f]{64}$/);
    expect(t.apiToken).not.toBe(t.approverToken);
    expect(mode(t.apiTokenPath)).toBe(0o600);
    expect(mode(t.approverTokenPath)).toBe(0o600);
    expect(readFileSync(t.apiTokenPath, "utf8").trim()).toBe(t.apiToken);
    expect(readdirSync(dir).sort()).toEqual(["api-token", "approver-token"]); // no temp files left behind
  });

  test("created once: later calls return the same tokens and leave the files unchanged", () => {
    const dir = tempDir();
    const first = ensureTokens(dir, { warn: () => {} });
    const before = statSync(first.apiTokenPath).mtimeMs;
    const second = ensureTokens(dir, { warn: () => {} });
    expect(second).toEqual(first);
    expect(statSync(first.apiTokenPath).mtimeMs).toBe(before);
  });

  test("an existing file with looser permissions is tightened to 0600, with a warning naming it", () => {
    const dir = tempDir();
    const first = ensureTokens(dir, { warn: () => {} });
    chmodSync(first.apiTokenPath, 0o644);
    const warnings: string[] = [];
    const again = ensureTokens(dir, { warn: (m) => warnings.push(m) });
    expect(again.apiToken).toBe(first.apiToken);
    expect(mode(first.apiTokenPath)).toBe(0o600);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(first.apiTokenPath);
    expect(warnings[0]).toContain("0644");
  });

  test("a token the user put there is kept", () => {
    const dir = tempDir();
    writeFileSync(join(dir, "api-token"), "my-own-token\n", { mode: 0o600 });
    expect(ensureTokens(dir, { warn: () => {} }).apiToken).toBe("my-own-token");
  });

  test("an empty token file is a config_invalid error saying to delete it", () => {
    const dir = tempDir();
    writeFileSync(join(dir, "api-token"), "", { mode: 0o600 });
    let err: unknown;
    try {
      ensureTokens(dir, { warn: () => {} });
    } catch (e) {
      err = e;
    }
    expect((err as AirlockError).code).toBe("config_invalid");
    expect((err as AirlockError).message).toContain("delete it");
  });

  test("processes racing to create the tokens all get the same ones", async () => {
    const dir = tempDir();
    const script = `import { ensureTokens } from ${JSON.stringify(join(import.meta.dir, "paths.ts"))};
      const t = ensureTokens(process.argv[2]); process.stdout.write(t.apiToken + " " + t.approverToken);`;
    const file = join(tempDir(), "race.ts");
    writeFileSync(file, script);
    const procs = Array.from({ length: 6 }, () => Bun.spawn([process.execPath, file, dir], { stdout: "pipe", stderr: "pipe" }));
    const outs = await Promise.all(procs.map((p) => new Response(p.stdout).text()));
    expect(await Promise.all(procs.map((p) => p.exited))).toEqual([0, 0, 0, 0, 0, 0]);
    expect(new Set(outs).size).toBe(1);
    expect(outs[0]).toMatch(/^[0-9a-f]{64} [0-9a-f]{64}$/);
    expect(readdirSync(dir).sort()).toEqual(["api-token", "approver-token"]);
  });
});

describe("readRegularFile with maxBytes", () => {
  test("a file whose size fstat does not tell (size 0: a FUSE file; /proc's here, which readRegularFile itself refuses) is read only up to the cap: EFBIG past it", () => {
    expect(statSync("/proc/self/maps").size).toBe(0);
    const fd = openSync("/proc/self/maps", "r");
    try {
      let code: string | undefined;
      try {
        readAtMost(fd, "/proc/self/maps", 64, 0);
      } catch (e) {
        code = (e as NodeJS.ErrnoException).code;
      }
      expect(code).toBe("EFBIG");
    } finally {
      closeSync(fd);
    }
    const again = openSync("/proc/self/maps", "r");
    try {
      expect(readAtMost(again, "/proc/self/maps", 1 << 24, 0).length).toBeGreaterThan(64);
    } finally {
      closeSync(again);
    }
  });

  test("a file of exactly the cap is read whole", () => {
    const d = mkdtempSync(join(tmpdir(), "airlock-paths-cap-"));
    try {
      writeFileSync(join(d, "f"), "x".repeat(3 << 20));
      expect(readRegularFile(join(d, "f"), { maxBytes: 3 << 20 }).toString()).toBe("x".repeat(3 << 20));
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });
});
