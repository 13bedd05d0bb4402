import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { repoMetadataWrite } from "./repo-metadata.ts";

const ws = realpathSync(mkdtempSync(path.join(tmpdir(), "airlock-floor-git-")));
afterAll(() => rmSync(ws, { recursive: true, force: true }));
mkdirSync(path.join(ws, "src"));
mkdirSync(path.join(ws, "half", "objects"), { recursive: true });
mkdirSync(path.join(ws, "half", "refs"));
symlinkSync(path.join(ws, "half"), path.join(ws, "alias"));
mkdirSync(path.join(ws, "gitlink"));
symlinkSync(path.join(ws, ".git"), path.join(ws, "gitlink", "to"));
writeFileSync(path.join(ws, "README.md"), "");

describe("repo-metadata.repoMetadataWrite", () => {
  test("ordinary workspace files: nothing to say", () => {
    for (const p of ["README.md", "src/a.ts", "src/new/deep/b.ts", "half/readme", "gitignore.txt", ".gitignore", "x.git/y"]) expect(repoMetadataWrite(p, ws)).toBeNull();
  });

  test("a .git component at any depth, in any case, spelled or reached through a symlink", () => {
    for (const p of [".git/HEAD", ".git", "a/b/.git", "a/.GIT/config", `${ws}/.Git/commondir`, "gitlink/to/config"]) {
      expect(repoMetadataWrite(p, ws)).toContain("repository metadata");
    }
  });

  test("a write that would make a folder repository-shaped (HEAD + objects/ + refs/), directly or through a symlink", () => {
    expect(repoMetadataWrite("half/HEAD", ws)).toContain("would become a git repository");
    expect(repoMetadataWrite("alias/HEAD", ws)).toContain("would become a git repository");
    expect(repoMetadataWrite("src/x/HEAD", ws)).toBeNull();
  });
});

describe("repo-metadata.repoMetadataWrite: linked-worktree shape", () => {
  test("HEAD next to a commondir file (a linked worktree's git folder) is repository-shaped too", () => {
    mkdirSync(path.join(ws, "wt"));
    writeFileSync(path.join(ws, "wt", "HEAD"), "ref: refs/heads/x\n");
    expect(repoMetadataWrite("wt/commondir", ws)).toContain("would become a git repository");
    expect(repoMetadataWrite("wt/config", ws)).toBeNull();
  });
});
