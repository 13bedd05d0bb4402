/**
 * Repository metadata a confined process planted during a call whose airlock was then killed with
 * SIGKILL: the check after the call never ran, and the next call's check took the planted repository
 * for one that was there before (pinned it, never quarantined it), so the host's `git status` ran its
 * `core.fsmonitor`. Now each workspace-write call keeps a journal (in airlock's own /tmp, which
 * confined processes cannot see) and the next call on that root checks against a dead call's journal
 * first. Real launcher and bubblewrap in a child (test/security/repo-metadata-child.ts), killed for
 * real; once as root and once as nobody.
 */
import { describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { sharedTempDir, testUsers, type TestUser } from "../as-user.ts";
import { processesWith, waitFor } from "../processes.ts";

const CHILD = path.join(import.meta.dir, "repo-metadata-child.ts");

function gitEnv(base: string): Record<string, string> {
  return { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: base, GIT_CONFIG_NOSYSTEM: "1" };
}

function childEnv(base: string): Record<string, string> {
  return { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: base, BUN_RUNTIME_TRANSPILER_CACHE_PATH: "0" };
}

function child(user: TestUser, base: string, ws: string, command: string): Bun.Subprocess<"ignore", "pipe", "pipe"> {
  const job = { op: "tool", tool: "developer__shell", args: { command, timeout_s: 300 }, workspace: ws, sandbox: "workspace-write" };
  return Bun.spawn([...user.prefix, process.execPath, CHILD, JSON.stringify(job)], { cwd: base, env: childEnv(base), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
}



for (const user of testUsers()) {
  describe(`repository metadata after airlock was killed mid-call, airlock running as ${user.name}`, () => {
    test("a repository planted before kill -9 of airlock is quarantined by the next call on that workspace", async () => {
      const base = sharedTempDir("airlock-gitmeta-crash-");
      const ws = path.join(base, "ws");
      mkdirSync(ws);
      if (user.uid !== process.getuid?.()) Bun.spawnSync(["chown", "-R", `${user.uid}:${user.uid}`, ws]);
      else chmodSync(ws, 0o755);
      const marker = path.join(base, "marker");
      const tag = `crash-${crypto.randomUUID()}`;
      const plant = `python3 -c "import os; d='sub/'+'.g'+'it'; open(os.path.join(d,'con'+'fig'),'a').write('[core]\\\\n\\\\tfsmonitor = echo pwned > ${marker}; false\\\\n')"`;
      const proc = child(user, base, ws, `git init -q sub && ${plant} && touch started && sleep 300 # ${tag}`);
      await waitFor(() => existsSync(path.join(ws, "started")), "the call to plant its repository");
      proc.kill("SIGKILL");
      await proc.exited;
      await waitFor(() => processesWith(tag).length === 0, "the call's processes to end");
      expect(existsSync(path.join(ws, "sub", ".git"))).toBe(true); // the residue of the killed call

      const next = child(user, base, ws, "echo next");
      const [code, out] = await Promise.all([next.exited, new Response(next.stdout).text()]);
      expect(code).toBe(0);
      const r = JSON.parse(out.trim().split("\n").pop()!);
      expect(r.stdout).toBe("next\n");
      expect(r.warning ?? "").toContain("quarantined repository metadata");
      expect(existsSync(path.join(ws, "sub", ".git"))).toBe(false);
      Bun.spawnSync(["git", "-c", "safe.directory=*", "status"], { cwd: path.join(ws, "sub"), env: gitEnv(base), stdout: "ignore", stderr: "ignore" });
      expect(existsSync(marker)).toBe(false);
    }, 120_000);
  });
}
