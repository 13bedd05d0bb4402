/**
 * @module test/security/claude-user-settings-writes-ask
 * `~/.claude/settings.json` (with `hooks.import_claude_settings: true`) names hooks that run as the user's
 * own, as `HOOK_PROCESS` — no sandbox on files or the network, the transcripts folder in view — in every
 * later session. When the workspace holds the home folder (airlock started in `~`), a `workspace-write`
 * session may write there, and in `autonomous` (or `smart` after one mode card) the model planted a hook
 * that ran outside its sandbox in the next run: a write that reaches outside the sandbox, like `.git/hooks`
 * or a shell startup file, so the security floor asks for it (user proof). The scripts such settings name
 * (`~/.claude/hooks/…`) are code of the same kind, so all of `~/.claude` is protected. Judged by the real
 * floor, as root and as `nobody`, against a real home folder that is the workspace.
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, symlinkSync } from "node:fs";
import path from "node:path";
import { sharedTempDir, testUsers } from "../as-user.ts";
import { securityFloor } from "../../src/gate/inspectors/security-floor.ts";

const root = sharedTempDir("airlock-claude-user-settings-");
const home = path.join(root, "home");
mkdirSync(path.join(home, ".claude", "hooks"), { recursive: true });

const BUN = process.execPath;
const JUDGE = path.join(import.meta.dir, "..", "fixtures", "floor-judge.ts");

function judge(prefix: string[], commands: string[]): string[][] {
  const r = Bun.spawnSync([...prefix, BUN, JUDGE, JSON.stringify({ workspace: home, home, policy: "workspace-write", commands })], { stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`floor-judge failed: ${r.stderr.toString()}`);
  return JSON.parse(r.stdout.toString()) as string[][];
}

for (const user of testUsers()) {
  describe(`as ${user.name}: a workspace that holds ~`, () => {
    test("a shell write to ~/.claude/settings.json or a script under ~/.claude asks (security floor)", () => {
      const commands = [
        `echo '{"hooks":{}}' > ~/.claude/settings.json`,
        `cp /tmp/x .claude/settings.json`,
        `tee "$HOME/.claude/settings.json" < /dev/null`,
        `mv payload .claude/hooks/guard.sh`,
        `sed -i s/a/b/ ~/.claude/hooks/guard.sh`,
      ];
      const got = judge(user.prefix, commands);
      expect(commands.filter((_, i) => got[i]!.length === 0)).toEqual([]);
    });
  });
}

test("developer__write_file and developer__edit_file of ~/.claude/settings.json ask with user proof", () => {
  const env = { workspace: home, home, policy: "workspace-write" as const, PATH: process.env.PATH };
  for (const [name, alias] of [
    ["developer__write_file", "Write"],
    ["developer__edit_file", "Edit"],
  ] as const) {
    for (const p of [".claude/settings.json", path.join(home, ".claude", "hooks", "guard.sh")]) {
      expect({ name, p, v: securityFloor({ name, claude: { name: alias } }, { path: p }, env) }).toMatchObject({ name, p, v: { kind: "ask", userProof: true } });
    }
  }
  // the control: an ordinary file of the same workspace does not
  expect(securityFloor({ name: "developer__write_file", claude: { name: "Write" } }, { path: "notes.txt" }, env).kind).toBe("allow");
});

test("~/.claude kept in a dotfiles repository (a symlink) is protected where it really is: a write there through the repository asks", () => {
  const home2 = path.join(root, "home2");
  const repo = path.join(home2, "dotfiles");
  mkdirSync(path.join(repo, "claude"), { recursive: true });
  symlinkSync(path.join(repo, "claude"), path.join(home2, ".claude"));
  const env = { workspace: repo, home: home2, policy: "workspace-write" as const, PATH: process.env.PATH };
  expect(securityFloor({ name: "developer__write_file", claude: { name: "Write" } }, { path: "claude/settings.json" }, env)).toMatchObject({ kind: "ask", userProof: true });
  expect(securityFloor({ name: "developer__shell" }, { command: "echo '{}' > claude/settings.json" }, env)).toMatchObject({ kind: "ask", userProof: true });
});
