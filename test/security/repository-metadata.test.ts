/**
 * No confined process and no file tool may create, replace, move or redirect repository metadata in
 * the workspace without a person (SPEC §9, security-model "Repository metadata"). Each input runs
 * airlock's real launcher and bubblewrap (or the real floor and file tool) in a child process, once
 * as root and once as nobody (test/as-user.ts); then the HOST runs `git status` the way a person
 * would, and the test checks that no command planted in a git config (`core.fsmonitor`) ran.
 */
import { describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, readdirSync, statSync } from "node:fs";
import path from "node:path";
import { sharedTempDir, testUsers, type TestUser } from "../as-user.ts";

const CHILD = path.join(import.meta.dir, "repo-metadata-child.ts");
const users = testUsers();

/** A git config that makes the host's next `git status` run a command which writes `marker`. */
function fsmonitorConfig(marker: string): string {
  return `[core]\n\tfsmonitor = echo pwned > ${marker}; false\n`;
}

/** A fresh folder for one test: `base` (outside the workspace, for the marker) and `ws` owned by `user`. */
function setup(user: TestUser, o: { repo?: boolean } = {}): { base: string; ws: string; marker: string } {
  const base = sharedTempDir("airlock-gitmeta-");
  const ws = path.join(base, "ws");
  mkdirSync(ws);
  if (o.repo) Bun.spawnSync(["git", "init", "-q", ws], { env: gitEnv(base) });
  if (user.uid !== process.getuid?.()) Bun.spawnSync(["chown", "-R", `${user.uid}:${user.uid}`, ws]);
  else chmodSync(ws, 0o755);
  return { base, ws, marker: path.join(base, "marker") };
}

function gitEnv(base: string): Record<string, string> {
  return { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: base, GIT_CONFIG_NOSYSTEM: "1" };
}

/** The host runs `git status` in `dir` as a person would (trusting the folder); true when the planted command ran. */
function hostGitRanPlantedCommand(dir: string, base: string, marker: string): boolean {
  Bun.spawnSync(["git", "-c", "safe.directory=*", "status"], { cwd: dir, env: gitEnv(base), stdout: "ignore", stderr: "ignore" });
  return existsSync(marker);
}

function childArgv(user: TestUser, job: unknown): string[] {
  return [...user.prefix, process.execPath, CHILD, JSON.stringify(job)];
}

function childEnv(base: string): Record<string, string> {
  return { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: base, BUN_RUNTIME_TRANSPILER_CACHE_PATH: "0" };
}

/** Runs one job in the child as `user`; resolves with its parsed JSON line. */
async function runChild(user: TestUser, base: string, job: unknown): Promise<any> {
  const proc = Bun.spawn(childArgv(user, job), { cwd: base, env: childEnv(base), stdout: "pipe", stderr: "pipe" });
  const [code, out, err] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  if (code !== 0) throw new Error(`child exited ${code}: ${err}`);
  return JSON.parse(out.trim().split("\n").pop()!);
}

function quarantined(dir: string): string[] {
  return readdirSync(dir).filter((n) => n.includes(".airlock-quarantine-"));
}

for (const user of users) {
  describe(`repository metadata, airlock running as ${user.name}`, () => {
    test("(a) a repository's .git cannot be renamed away and replaced by one whose config the host's git runs", async () => {
      const { base, ws, marker } = setup(user, { repo: true });
      const code = [
        "import os, subprocess",
        "r = []",
        "try:",
        "    os.rename('.git', '.git-orig'); r.append('renamed')",
        "except OSError as e: r.append('rename-errno-%d' % e.errno)",
        "subprocess.run(['git', 'init', '-q'], capture_output=True)",
        "try:",
        `    open('.git/config', 'a').write(${JSON.stringify(fsmonitorConfig(marker))}); r.append('config-written')`,
        "except OSError as e: r.append('config-errno-%d' % e.errno)",
        "print(' '.join(r))",
      ].join("\n");
      const r = await runChild(user, base, { op: "tool", tool: "interpreter__python", args: { code }, workspace: ws, sandbox: "workspace-write" });
      expect(r.stdout.trim()).toBe("rename-errno-16 config-errno-30"); // EBUSY (a mount point), EROFS
      expect(existsSync(path.join(ws, ".git-orig"))).toBe(false);
      expect(hostGitRanPlantedCommand(ws, base, marker)).toBe(false);
    });

    test("(a) a nested repository moved away with its folder and replaced is quarantined after the call", async () => {
      const { base, ws, marker } = setup(user, { repo: true });
      Bun.spawnSync(["git", "init", "-q", path.join(ws, "sub")], { env: gitEnv(base) });
      if (user.uid !== process.getuid?.()) Bun.spawnSync(["chown", "-R", `${user.uid}:${user.uid}`, ws]);
      const code = [
        "import os, subprocess",
        "r = []",
        "try:",
        "    os.rename('sub/.git', 'sub/.git-orig'); r.append('renamed')",
        "except OSError as e: r.append('rename-errno-%d' % e.errno)",
        "os.rename('sub', 'sub-orig'); os.makedirs('sub')",
        "subprocess.run(['git', 'init', '-q', 'sub'], capture_output=True)",
        `open('sub/.git/config', 'a').write(${JSON.stringify(fsmonitorConfig(marker))})`,
        "print(' '.join(r))",
      ].join("\n");
      const r = await runChild(user, base, { op: "tool", tool: "interpreter__python", args: { code }, workspace: ws, sandbox: "workspace-write" });
      expect(r.stdout.trim()).toBe("rename-errno-16");
      expect(r.warning).toContain("quarantined repository metadata");
      expect(r.quarantined.length).toBe(2); // sub/.git (new) and sub-orig/.git (moved)
      expect(existsSync(path.join(ws, "sub", ".git"))).toBe(false);
      expect(quarantined(path.join(ws, "sub")).length).toBe(1);
      expect(hostGitRanPlantedCommand(path.join(ws, "sub"), base, marker)).toBe(false);
    });

    test("(b) file tools: writes planting .git/HEAD, objects, refs and a commondir to a folder with a config all ask, in every mode", async () => {
      const { base, ws, marker } = setup(user);
      const writes = [
        { path: ".git/HEAD", content: "ref: refs/heads/main\n" },
        { path: ".git/objects/keep", content: "" },
        { path: ".git/refs/keep", content: "" },
        { path: ".git/commondir", content: "../notes\n" },
        { path: "notes/config", content: fsmonitorConfig(marker) },
        { path: "notes/objects/keep", content: "" },
        { path: "notes/refs/keep", content: "" },
        { path: "notes/HEAD", content: "ref: refs/heads/main\n" }, // would make notes a bare repository
        { path: "deep/er/.GIT/config", content: fsmonitorConfig(marker) }, // any depth, any case
        { path: `${ws}/.git`, content: "gitdir: notes\n" }, // a .git file, absolute spelling
      ];
      const r = (await runChild(user, base, { op: "floor-writes", workspace: ws, writes })) as { path: string; verdict: string; userProof?: boolean; written: boolean }[];
      const asked = r.filter((w) => w.verdict === "ask").map((w) => w.path);
      expect(asked).toEqual([".git/HEAD", ".git/objects/keep", ".git/refs/keep", ".git/commondir", "notes/HEAD", "deep/er/.GIT/config", `${ws}/.git`]);
      expect(r.filter((w) => w.verdict === "ask").every((w) => w.userProof === true && !w.written)).toBe(true);
      expect(hostGitRanPlantedCommand(ws, base, marker)).toBe(false);
      expect(hostGitRanPlantedCommand(path.join(ws, "notes"), base, marker)).toBe(false);
    });

    test("(c) git init in a subfolder (and a bare one) is quarantined after the call and reported", async () => {
      const { base, ws, marker } = setup(user);
      const cfg = fsmonitorConfig(marker).replace(/\n/g, "\\n").replace(/\t/g, "\\t");
      const command = `git init -q sub && printf '${cfg}' >> sub/.git/config && git init -q --bare bare && mkdir -p d/e && git init -q d/e && echo done`;
      const r = await runChild(user, base, { op: "tool", tool: "developer__shell", args: { command }, workspace: ws, sandbox: "workspace-write" });
      expect(r.stdout).toContain("done");
      expect(r.warning).toContain("quarantined repository metadata");
      expect(r.quarantined.length).toBe(3);
      expect(existsSync(path.join(ws, "sub", ".git"))).toBe(false);
      expect(existsSync(path.join(ws, "d", "e", ".git"))).toBe(false);
      expect(existsSync(path.join(ws, "bare", "HEAD"))).toBe(false); // no longer repository-shaped
      expect(quarantined(path.join(ws, "sub")).length).toBe(1);
      expect(hostGitRanPlantedCommand(path.join(ws, "sub"), base, marker)).toBe(false);
    });

    test("(d) the empty .git mount point a killed airlock left is recognised: the next run locks it and removes it", async () => {
      const { base, ws, marker } = setup(user);
      const dotGit = path.join(ws, ".git");
      const proc = Bun.spawn(childArgv(user, { op: "tool", tool: "developer__shell", args: { command: "sleep 120", timeout_s: 120 }, workspace: ws, sandbox: "workspace-write" }), {
        cwd: base,
        env: childEnv(base),
        stdout: "ignore",
        stderr: "ignore",
      });
      // bubblewrap creates the lock's mount point on the host when the sandbox is set up
      for (let i = 0; i < 3000 && !existsSync(dotGit); i++) await Bun.sleep(10);
      expect(existsSync(dotGit)).toBe(true);
      proc.kill("SIGKILL");
      await proc.exited;
      expect(statSync(dotGit).isDirectory() && readdirSync(dotGit).length === 0).toBe(true); // the residue

      const code = [
        "import os",
        "r = []",
        "for d in ['.git/objects', '.git/refs']:",
        "    try: os.makedirs(d); r.append('made')",
        "    except OSError as e: r.append('errno-%d' % e.errno)",
        "for f, t in [('.git/HEAD', 'ref: refs/heads/main\\n'), ('.git/config', " + JSON.stringify(fsmonitorConfig(marker)) + ")]:",
        "    try: open(f, 'w').write(t); r.append('wrote')",
        "    except OSError as e: r.append('errno-%d' % e.errno)",
        "print(' '.join(r))",
      ].join("\n");
      const r = await runChild(user, base, { op: "tool", tool: "interpreter__python", args: { code }, workspace: ws, sandbox: "workspace-write" });
      expect(r.stdout.trim()).toBe("errno-30 errno-30 errno-30 errno-30"); // EROFS: locked
      expect(existsSync(dotGit)).toBe(false); // the residue is gone
      expect(hostGitRanPlantedCommand(ws, base, marker)).toBe(false);
    });
  });
}

describe("repository metadata: MCP servers", () => {
  test("what a workspace-write MCP server plants during a call is quarantined when the call returns, and the result says so", async () => {
    const { McpManager } = await import("../../src/tool/mcp/index.ts");
    const { Config } = await import("../../src/config/schema.ts");
    const FS_SERVER = path.resolve(import.meta.dir, "../../node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    const base = sharedTempDir("airlock-gitmeta-mcp-");
    const ws = path.join(base, "ws");
    mkdirSync(ws);
    const lines: string[] = [];
    const m = new McpManager({
      config: Config.parse({ mcp_servers: { fs: { command: "node", args: [FS_SERVER, ws], sandbox: "workspace-write", cwd: ws } } }),
      defaultWorkspace: ws,
      log: (l) => lines.push(l),
    });
    try {
      const defs = new Map<string, any>();
      for (const s of m.sources()) for (const d of await s.list()) defs.set(d.name, d);
      const ctx = { signal: new AbortController().signal } as any;
      const r = await defs.get("fs__create_directory").execute({ path: path.join(ws, "sub", ".git", "hooks") }, ctx);
      expect(r.warning).toContain("quarantined repository metadata");
      expect(existsSync(path.join(ws, "sub", ".git"))).toBe(false);
      expect(quarantined(path.join(ws, "sub")).length).toBe(1);
      expect(lines.some((l) => l.includes("quarantined repository metadata"))).toBe(true);
      // the next call, with nothing new, reports nothing
      const again = await defs.get("fs__create_directory").execute({ path: path.join(ws, "plain") }, ctx);
      expect(JSON.stringify(again)).not.toContain("quarantine");
    } finally {
      await m.close();
    }
  });
});
