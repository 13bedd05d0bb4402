/**
 * Repository metadata a confined process hides where the post-call scan did not look: inside a folder
 * it made repository-shaped, inside an existing bare repository's own folders, behind a folder it made
 * unreadable (`chmod 111`: git only needs to traverse), in a `.git` it made unreadable, or in a folder
 * it made read-only so the quarantine rename fails. Each input runs airlock's real launcher and
 * bubblewrap in a child (test/security/repo-metadata-child.ts), once as root and once as nobody; then
 * the HOST runs `git status` where a person would, and the test checks that no planted
 * `core.fsmonitor` command ran.
 */
import { describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import { sharedTempDir, testUsers, type TestUser } from "../as-user.ts";

const CHILD = path.join(import.meta.dir, "repo-metadata-child.ts");

function gitEnv(base: string): Record<string, string> {
  return { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: base, GIT_CONFIG_NOSYSTEM: "1" };
}

/** A fresh `base` (marker lives there) and `ws` owned by `user`; `prepare` runs in `ws` first, as the host. */
function setup(user: TestUser, prepare?: string): { base: string; ws: string; marker: string } {
  const base = sharedTempDir("airlock-gitmeta-hide-");
  const ws = path.join(base, "ws");
  mkdirSync(ws);
  if (prepare) Bun.spawnSync(["sh", "-c", prepare], { cwd: ws, env: gitEnv(base) });
  if (user.uid !== process.getuid?.()) Bun.spawnSync(["chown", "-R", `${user.uid}:${user.uid}`, ws]);
  else chmodSync(ws, 0o755);
  return { base, ws, marker: path.join(base, "marker") };
}

/** Shell text that appends a `core.fsmonitor` writing `marker` to the git config at `cfg`. */
function plantFsmonitor(cfg: string, marker: string): string {
  return `printf '[core]\\n\\tfsmonitor = echo pwned > ${marker}; false\\n' >> ${cfg}`;
}

/** Runs `command` with developer__shell under workspace-write as `user`; resolves with the tool result. */
async function shellAs(user: TestUser, base: string, ws: string, command: string): Promise<any> {
  const job = { op: "tool", tool: "developer__shell", args: { command }, workspace: ws, sandbox: "workspace-write" };
  const proc = Bun.spawn([...user.prefix, process.execPath, CHILD, JSON.stringify(job)], {
    cwd: base,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: base, BUN_RUNTIME_TRANSPILER_CACHE_PATH: "0" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [code, out, err] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  if (code !== 0) throw new Error(`child exited ${code}: ${err}`);
  return JSON.parse(out.trim().split("\n").pop()!);
}

/**
 * The host runs `git status` in `dir` as a person would, after giving every folder back its owner's
 * read permission (as a person who found an odd mode would); true when the planted command ran.
 */
function hostGitRanPlantedCommand(ws: string, dir: string, base: string, marker: string): boolean {
  Bun.spawnSync(["chmod", "-R", "u+rwx", ws]);
  if (existsSync(dir)) Bun.spawnSync(["git", "-c", "safe.directory=*", "status"], { cwd: dir, env: gitEnv(base), stdout: "ignore", stderr: "ignore" });
  return existsSync(marker);
}

/** Like {@link hostGitRanPlantedCommand} but without touching modes: git needs only to traverse folders. */
function hostGitRanAsLeft(dir: string, base: string, marker: string): boolean {
  Bun.spawnSync(["git", "-c", "safe.directory=*", "status"], { cwd: dir, env: gitEnv(base), stdout: "ignore", stderr: "ignore" });
  return existsSync(marker);
}

for (const user of testUsers()) {
  describe(`repository metadata in hiding places, airlock running as ${user.name}`, () => {
    test("a repository planted inside a folder made repository-shaped during the call is quarantined too", async () => {
      const { base, ws, marker } = setup(user);
      const command = `mkdir -p a/objects a/refs && echo 'ref: refs/heads/main' > a/HEAD && git init -q a/sub && ${plantFsmonitor("a/sub/.git/config", marker)} && echo done`;
      const r = await shellAs(user, base, ws, command);
      expect(r.stdout).toContain("done");
      expect(existsSync(path.join(ws, "a", "sub", ".git"))).toBe(false);
      expect(hostGitRanPlantedCommand(ws, path.join(ws, "a", "sub"), base, marker)).toBe(false);
    });

    test("a workspace root made repository-shaped cannot hide a repository planted below it", async () => {
      const { base, ws, marker } = setup(user);
      const command = `mkdir -p objects refs && echo 'ref: refs/heads/main' > HEAD && git init -q src && ${plantFsmonitor("src/.git/config", marker)} && echo done`;
      const r = await shellAs(user, base, ws, command);
      expect(r.stdout).toContain("done");
      expect(existsSync(path.join(ws, "src", ".git"))).toBe(false);
      expect(hostGitRanPlantedCommand(ws, path.join(ws, "src"), base, marker)).toBe(false);
    });

    test("a repository planted inside an existing bare repository's folder (outside git's own layout) is quarantined", async () => {
      const { base, ws, marker } = setup(user, "git init -q --bare store");
      const command = `git init -q store/sub && ${plantFsmonitor("store/sub/.git/config", marker)} && echo done`;
      const r = await shellAs(user, base, ws, command);
      expect(r.stdout).toContain("done");
      expect(existsSync(path.join(ws, "store", "sub", ".git"))).toBe(false);
      expect(hostGitRanPlantedCommand(ws, path.join(ws, "store", "sub"), base, marker)).toBe(false);
    });

    test("a repository behind a folder made unreadable (chmod 111, git only traverses it) is still found and quarantined", async () => {
      const { base, ws, marker } = setup(user);
      const command = `git init -q sub && ${plantFsmonitor("sub/.git/config", marker)} && chmod 111 sub && echo done`;
      const r = await shellAs(user, base, ws, command);
      expect(r.stdout).toContain("done");
      expect(hostGitRanAsLeft(path.join(ws, "sub"), base, marker)).toBe(false);
      expect(hostGitRanPlantedCommand(ws, path.join(ws, "sub"), base, marker)).toBe(false);
    });

    test("a commondir planted in an existing repository's .git, then the .git made unreadable (chmod 311), is quarantined", async () => {
      const { base, ws, marker } = setup(user, "git init -q .");
      const command = [
        "mkdir -p notes/objects notes/refs",
        plantFsmonitor("notes/config", marker),
        "echo ../notes > .git/commondir",
        "chmod 311 .git",
        "echo done",
      ].join(" && ");
      const r = await shellAs(user, base, ws, command);
      expect(r.stdout).toContain("done");
      expect(hostGitRanAsLeft(ws, base, marker)).toBe(false);
      expect(existsSync(path.join(ws, ".git", "commondir"))).toBe(false);
      expect(hostGitRanPlantedCommand(ws, ws, base, marker)).toBe(false);
    });

    test("a bare repository whose objects/ and refs/ are symbolic links (git follows them) is quarantined", async () => {
      const { base, ws, marker } = setup(user);
      const command = [
        "mkdir -p o r/heads d",
        "ln -s ../o d/objects",
        "ln -s ../r d/refs",
        "echo 'ref: refs/heads/main' > d/HEAD",
        `printf '[alias]\\n\\tst = !echo pwned > ${marker}\\n' > d/config`,
        "echo done",
      ].join(" && ");
      const r = await shellAs(user, base, ws, command);
      expect(r.stdout).toContain("done");
      const d = path.join(ws, "d");
      // the host's git no longer takes the folder for a repository, so a person's `git st` there runs nothing
      const gitDir = Bun.spawnSync(["git", "-c", "safe.directory=*", "rev-parse", "--git-dir"], { cwd: d, env: gitEnv(base), stdout: "pipe", stderr: "ignore" });
      expect(gitDir.exitCode).not.toBe(0);
      Bun.spawnSync(["git", "-c", "safe.directory=*", "st"], { cwd: d, env: gitEnv(base), stdout: "ignore", stderr: "ignore" });
      expect(existsSync(marker)).toBe(false);
    });

    test("a repository planted in a folder the process named like a quarantined entry is quarantined", async () => {
      const { base, ws, marker } = setup(user);
      const dir = "tools.airlock-quarantine-20260101T000000";
      const command = `git init -q ${dir}/s && ${plantFsmonitor(`${dir}/s/.git/config`, marker)} && echo done`;
      const r = await shellAs(user, base, ws, command);
      expect(r.stdout).toContain("done");
      expect(existsSync(path.join(ws, dir, "s", ".git"))).toBe(false);
      expect(hostGitRanAsLeft(path.join(ws, dir, "s"), base, marker)).toBe(false);
    });

    test("a repository in a folder made read-only (chmod 555) is still quarantined", async () => {
      const { base, ws, marker } = setup(user);
      const command = `git init -q sub && ${plantFsmonitor("sub/.git/config", marker)} && chmod 555 sub && echo done`;
      const r = await shellAs(user, base, ws, command);
      expect(r.stdout).toContain("done");
      expect(r.warning ?? "").not.toContain("could NOT be quarantined");
      expect(existsSync(path.join(ws, "sub", ".git"))).toBe(false);
      expect(hostGitRanAsLeft(path.join(ws, "sub"), base, marker)).toBe(false);
    });
  });
}
