/**
 * Two ways a confined process could reach outside its policy through files the host later trusts
 * or that hold secrets, closed in the launcher (real bubblewrap, real processes):
 * - a workspace that is not a git repository: a process must not create `.git` there, since the
 *   host's next git command would run the hooks and config it wrote;
 * - credential folders and files under HOME (`~/.ssh`, `~/.aws`, `~/.netrc`, …) are not readable by
 *   confined processes, including interpreters whose code the security floor cannot read.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { hostTools } from "../../src/tool/host-tools.ts";
import { makeToolContext, runTool, tempWorkspace } from "../fixtures/tool-context.ts";

const tools = new Map(hostTools().map((t) => [t.name, t]));
const shell = tools.get("developer__shell")!;
const python = tools.get("interpreter__python")!;
const cleanups: (() => void)[] = [];
afterAll(() => cleanups.forEach((c) => c()));

describe("workspace-write: no repository can be planted", () => {
  test("in a workspace without .git, git init and .git/hooks fail inside; nothing is left on the host", async () => {
    const ws = tempWorkspace();
    cleanups.push(ws.cleanup);
    const ctx = makeToolContext({ workspace: ws.dir, sandbox: "workspace-write" });
    const r = await runTool(shell, { command: "git init -q; mkdir -p .git/hooks; echo 'echo pwned' > .git/hooks/pre-commit; echo ok > file.txt; echo done" }, ctx);
    expect(r.stderr).toContain("Read-only file system");
    expect(r.stdout).toContain("done");
    expect(existsSync(path.join(ws.dir, "file.txt"))).toBe(true); // the workspace itself stays writable
    expect(existsSync(path.join(ws.dir, ".git"))).toBe(false); // the empty mount point was removed
  });

  test("an existing repository still works: add and commit inside, hooks and config stay read-only", async () => {
    const ws = tempWorkspace();
    cleanups.push(ws.cleanup);
    Bun.spawnSync(["git", "init", "-q", ws.dir]);
    const ctx = makeToolContext({ workspace: ws.dir, sandbox: "workspace-write" });
    const r = await runTool(
      shell,
      { command: "echo hi > a.txt && git add a.txt && git -c user.email=a@b -c user.name=a commit -qm one && echo committed; echo x > .git/hooks/pre-commit 2>&1" },
      ctx,
    );
    expect(r.stdout).toContain("committed");
    expect(r.stdout + r.stderr).toContain("Read-only file system");
    expect(existsSync(path.join(ws.dir, ".git", "hooks", "pre-commit"))).toBe(false);
  });
});

describe("confined processes cannot read credentials under HOME", () => {
  const home = realpathSync(mkdtempSync(path.join("/var/tmp", "airlock-home-"))); // outside the private /tmp
  cleanups.push(() => rmSync(home, { recursive: true, force: true }));
  mkdirSync(path.join(home, ".ssh"));
  writeFileSync(path.join(home, ".ssh", "id_rsa"), "PRIVATE-KEY-MATERIAL");
  mkdirSync(path.join(home, ".aws"));
  writeFileSync(path.join(home, ".aws", "credentials"), "AWS-SECRET-MATERIAL");
  writeFileSync(path.join(home, ".netrc"), "machine x login y password NETRC-SECRET");
  writeFileSync(path.join(home, "notes.txt"), "ordinary file");

  async function withHome<T>(fn: () => Promise<T>): Promise<T> {
    const old = process.env.HOME;
    process.env.HOME = home;
    try {
      return await fn();
    } finally {
      process.env.HOME = old;
    }
  }

  for (const sandbox of ["read-only", "workspace-write"] as const) {
    test(`${sandbox}: python sees empty credential folders and files, ordinary files as usual`, async () => {
      const ws = tempWorkspace();
      cleanups.push(ws.cleanup);
      const ctx = makeToolContext({ workspace: ws.dir, sandbox });
      const code = [
        "import os",
        "h = os.path.expanduser('~')",
        "def rd(p):",
        "    try: return open(os.path.join(h, p)).read()",
        "    except Exception as e: return type(e).__name__",
        "print(rd('.ssh/id_rsa'), rd('.aws/credentials'), rd('notes.txt'), os.listdir(os.path.join(h, '.ssh')))",
        "print(rd('.netrc'))",
      ].join("\n");
      const r = await withHome(() => runTool(python, { code }, ctx));
      expect(r.exit_code).toBe(0);
      const [first, netrc] = r.stdout.trim().split("\n");
      expect(first).toBe("FileNotFoundError FileNotFoundError ordinary file []");
      expect(["", "PermissionError"]).toContain(netrc); // /dev/null bound over it: empty or unopenable, never the secret
    });
  }

  test("negative control: danger-full-access (no sandbox) does read them — the test can fail", async () => {
    const ws = tempWorkspace();
    cleanups.push(ws.cleanup);
    const ctx = makeToolContext({ workspace: ws.dir, sandbox: "danger-full-access" });
    const r = await withHome(() => runTool(python, { code: "import os\nprint(open(os.path.expanduser('~/.ssh/id_rsa')).read())" }, ctx));
    expect(r.stdout).toContain("PRIVATE-KEY-MATERIAL");
  });
});
