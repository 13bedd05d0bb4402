import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { findInPath, resolveExecutable, resolveRealPath, resolveWorkspacePath } from "./resolve.ts";

const base = realpathSync(mkdtempSync(path.join(tmpdir(), "airlock-resolve-")));
const ws = path.join(base, "ws");
const outside = path.join(base, "outside");
mkdirSync(path.join(ws, "src"), { recursive: true });
mkdirSync(outside);
writeFileSync(path.join(ws, "src", "a.txt"), "a");
symlinkSync(outside, path.join(ws, "out")); // leads out
symlinkSync("src", path.join(ws, "in")); // stays inside (relative)
symlinkSync(path.join(outside, "new.txt"), path.join(ws, "dangling")); // dangling, target outside
symlinkSync("../../outside", path.join(ws, "src", "up")); // relative to ws/src, leads out
afterAll(() => rmSync(base, { recursive: true, force: true }));

describe("resolve.resolveWorkspacePath", () => {
  test("a plain path inside, existing or not, is inside", () => {
    expect(resolveWorkspacePath(ws, "src/a.txt")).toEqual({ real: path.join(ws, "src/a.txt"), inside: true });
    expect(resolveWorkspacePath(ws, "src/new/deeper.txt")).toEqual({ real: path.join(ws, "src/new/deeper.txt"), inside: true });
    expect(resolveWorkspacePath(ws, path.join(ws, "x"))).toEqual({ real: path.join(ws, "x"), inside: true });
  });

  test("a symlink anywhere in the path that leads out is outside, also for a missing tail", () => {
    expect(resolveWorkspacePath(ws, "out/secret.txt")).toEqual({ real: path.join(outside, "secret.txt"), inside: false });
    expect(resolveWorkspacePath(ws, "src/up/x/y")).toEqual({ real: path.join(outside, "x/y"), inside: false });
  });

  test("a dangling symlink resolves to where a write would land", () => {
    expect(resolveWorkspacePath(ws, "dangling")).toEqual({ real: path.join(outside, "new.txt"), inside: false });
  });

  test("a link that stays inside is inside", () => {
    expect(resolveWorkspacePath(ws, "in/a.txt")).toEqual({ real: path.join(ws, "src/a.txt"), inside: true });
  });

  test("'..' after a symlink applies to the link's target, like the kernel (not lexically)", () => {
    // ws/out/.. is base, not ws
    expect(resolveWorkspacePath(ws, "out/../ws/src")).toEqual({ real: path.join(ws, "src"), inside: true });
    expect(resolveWorkspacePath(ws, "out/../escape.txt")).toEqual({ real: path.join(base, "escape.txt"), inside: false });
    expect(resolveWorkspacePath(ws, "../ws-sibling")).toEqual({ real: path.join(base, "ws-sibling"), inside: false });
  });

  test("a workspace spelled through a symlink is compared by its real path", () => {
    const alias = path.join(base, "alias");
    symlinkSync(ws, alias);
    expect(resolveWorkspacePath(alias, "src/a.txt")).toEqual({ real: path.join(ws, "src/a.txt"), inside: true });
  });

  test("resolveRealPath matches realpath for existing paths", () => {
    expect(resolveRealPath("/", path.join(ws, "in", "a.txt"))).toBe(realpathSync(path.join(ws, "in", "a.txt")));
  });
});

describe("resolve.resolveExecutable", () => {
  test("finds a name on PATH and returns its real path; null when absent", () => {
    expect(resolveExecutable("sh", "/usr/bin:/bin")).toBe(realpathSync(findInPath("sh", "/usr/bin:/bin")!));
    expect(resolveExecutable("definitely-not-a-command-xyz", "/usr/bin:/bin")).toBeNull();
  });

  test("a symlinked command in a PATH dir resolves to the binary it runs", () => {
    const bin = path.join(base, "bin");
    mkdirSync(bin);
    symlinkSync("/bin/rm", path.join(bin, "innocent"));
    expect(resolveExecutable("innocent", bin)).toBe(realpathSync("/bin/rm"));
  });

  test("relative PATH entries are ignored", () => {
    expect(findInPath("sh", "relative/bin")).toBeNull();
  });
});
