import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { clearGitMetaCache, planGitMeta, quarantineNewGitMeta, scanGitMeta } from "./git-meta.ts";

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function root(): string {
  const d = realpathSync(mkdtempSync(path.join(tmpdir(), "airlock-gitmeta-unit-")));
  dirs.push(d);
  return d;
}

function repo(dir: string): void {
  mkdirSync(path.join(dir, "objects"), { recursive: true });
  mkdirSync(path.join(dir, "refs"));
  writeFileSync(path.join(dir, "HEAD"), "ref: refs/heads/main\n");
  writeFileSync(path.join(dir, "config"), "[core]\n");
}

const brief = (r: string, es: Awaited<ReturnType<typeof scanGitMeta>>) => es.map((e) => [path.relative(r, e.path), e.kind, e.repo]);

describe("git-meta.scanGitMeta", () => {
  test("finds .git folders, files and symlinks at any depth (any case) and bare repositories; never descends into them", async () => {
    const r = root();
    repo(path.join(r, ".git"));
    repo(path.join(r, ".git", "modules", "x")); // inside a .git: not scanned
    mkdirSync(path.join(r, "a", "b"), { recursive: true });
    writeFileSync(path.join(r, "a", "b", ".git"), "gitdir: ../../.git/modules/x\n");
    mkdirSync(path.join(r, "c", ".GIT"), { recursive: true });
    symlinkSync("/nowhere", path.join(r, "a", ".Git"));
    repo(path.join(r, "store"));
    mkdirSync(path.join(r, "store", "objects", ".git")); // inside a bare repository: not scanned
    expect(brief(r, (await scanGitMeta(r)))).toEqual([
      [".git", "dotgit-dir", true],
      ["a/.Git", "dotgit-link", false],
      ["a/b/.git", "dotgit-file", false],
      ["c/.GIT", "dotgit-dir", false],
      ["store", "bare", true],
    ]);
  });

  test("a later scan sees a .git made deep inside folders it cached, and a folder that disappeared", async () => {
    const r = root();
    mkdirSync(path.join(r, "x", "y", "z"), { recursive: true });
    expect(await scanGitMeta(r)).toEqual([]);
    mkdirSync(path.join(r, "x", "y", "z", ".git"));
    mkdirSync(path.join(r, "x", "new", "deeper"), { recursive: true });
    writeFileSync(path.join(r, "x", "new", "deeper", ".git"), "gitdir: /x\n");
    expect(brief(r, (await scanGitMeta(r)))).toEqual([
      ["x/new/deeper/.git", "dotgit-file", false],
      ["x/y/z/.git", "dotgit-dir", false],
    ]);
    rmSync(path.join(r, "x", "y"), { recursive: true });
    clearGitMetaCache();
    expect(brief(r, (await scanGitMeta(r)))).toEqual([["x/new/deeper/.git", "dotgit-file", false]]);
  });
});

describe("git-meta.planGitMeta", () => {
  test("a repository becomes a mount point with its sensitive parts read-only (hooks and info created); a .git file and a non-repository .git are read-only; no root .git is locked", async () => {
    const r = root();
    mkdirSync(path.join(r, "p"));
    repo(path.join(r, "p", ".git"));
    writeFileSync(path.join(r, "p", ".git", "commondir"), "..\n");
    writeFileSync(path.join(r, "f.git-holder"), "");
    mkdirSync(path.join(r, "w"));
    writeFileSync(path.join(r, "w", ".git"), "gitdir: /elsewhere\n");
    mkdirSync(path.join(r, "junk", ".git"), { recursive: true });
    writeFileSync(path.join(r, "junk", ".git", "x"), "");
    const plan = planGitMeta(r, (await scanGitMeta(r)));
    const rel = (ps: string[]) => ps.map((p) => path.relative(r, p));
    expect(rel(plan.mountPoints)).toEqual(["p/.git"]);
    expect(rel(plan.readOnly)).toEqual(["junk/.git", "p/.git/commondir", "p/.git/config", "p/.git/hooks", "p/.git/info", "w/.git"]);
    expect(rel(plan.locked)).toEqual([".git"]);
    expect(existsSync(path.join(r, "p", ".git", "hooks"))).toBe(true);
  });

  test("an empty root .git (a crashed run's mount point) is locked, not taken for a repository", async () => {
    const r = root();
    mkdirSync(path.join(r, ".git"));
    const plan = planGitMeta(r, (await scanGitMeta(r)));
    expect(plan).toEqual({ mountPoints: [], readOnly: [], locked: [path.join(r, ".git")] });
    expect(readdirSync(path.join(r, ".git"))).toEqual([]); // nothing created in it
  });
});

describe("git-meta.quarantineNewGitMeta", () => {
  test("new, moved and replaced entries, new sensitive parts of a repository and new bare repositories are renamed; unchanged ones are not", async () => {
    const r = root();
    repo(path.join(r, ".git"));
    mkdirSync(path.join(r, "keep", ".git"), { recursive: true });
    repo(path.join(r, "keep", ".git"));
    mkdirSync(path.join(r, "old", ".git"), { recursive: true });
    const before = (await scanGitMeta(r));
    writeFileSync(path.join(r, ".git", "commondir"), "../notes\n"); // new sensitive part
    mkdirSync(path.join(r, "sub", ".git"), { recursive: true }); // new
    renameSync(path.join(r, "old", ".git"), path.join(r, "old", "x")); // moved away...
    mkdirSync(path.join(r, "old", ".git")); // ...and replaced
    repo(path.join(r, "notes")); // newly repository-shaped
    mkdirSync(path.join(r, "wt"));
    writeFileSync(path.join(r, "wt", "HEAD"), "ref: refs/heads/x\n");
    writeFileSync(path.join(r, "wt", "commondir"), "../notes\n"); // newly a linked worktree's git folder
    const { notes, complete } = await quarantineNewGitMeta(r, before);
    expect(complete).toBe(true);
    expect(notes.length).toBe(5);
    expect(existsSync(path.join(r, "wt", "HEAD"))).toBe(false);
    expect(existsSync(path.join(r, ".git", "commondir"))).toBe(false);
    expect(existsSync(path.join(r, "sub", ".git"))).toBe(false);
    expect(existsSync(path.join(r, "old", ".git"))).toBe(false);
    expect(existsSync(path.join(r, "notes", "HEAD"))).toBe(false);
    expect(existsSync(path.join(r, "keep", ".git", "HEAD"))).toBe(true);
    expect(readdirSync(path.join(r, "sub")).every((n) => n.startsWith(".git.airlock-quarantine-"))).toBe(true);
    expect(await quarantineNewGitMeta(r, await scanGitMeta(r))).toEqual({ notes: [], complete: true }); // nothing new: nothing more
  });
});

describe("git-meta: concurrent calls on one root", () => {
  test("two checks in flight on one root run one after the other: each entry is quarantined once, never reported as unquarantinable", async () => {
    const r = root();
    mkdirSync(path.join(r, "sub"));
    const before = await scanGitMeta(r);
    writeFileSync(path.join(r, "sub", ".git"), "gitdir: ../elsewhere\n");
    const [a, b] = await Promise.all([quarantineNewGitMeta(r, before), quarantineNewGitMeta(r, before)]);
    const lines = [...a.notes, ...b.notes];
    expect(lines.length).toBe(1);
    expect(lines[0]).toContain("sub/.git was renamed to sub/.git.airlock-quarantine-");
    expect(lines.join("\n")).not.toContain("could NOT");
  });
});
