/**
 * @module test/security/claude-home-hidden-from-confined-processes
 * `~/.claude` holds Claude Code's OAuth credentials (`.credentials.json`), every Claude Code conversation
 * (`projects/*.jsonl`), and the user settings whose hooks airlock runs as the user's own, outside any sandbox
 * (`hooks.import_claude_settings`), with the hook scripts they name. A confined process read the token and
 * the conversations; and where the workspace holds `~` (airlock started in the home folder), one that
 * wrote `~/.claude/settings.json` from an interpreter (no path the security floor reads) planted a hook that
 * ran unconfined in the next session. `~/.claude` is on the credential list now: hidden whole from
 * every confined process (an empty tmpfs; what is written there is gone with the process). Real launcher
 * and bubblewrap, as root and as nobody.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { chownSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { testUsers, type TestUser } from "../as-user.ts";
import { ownedDir, probeEnv, removeTempDirs, runProbe, tempBase } from "./probe.ts";

afterAll(removeTempDirs);

const TOKEN = "sk-ant-oat01-not-a-real-token-4c1d";
const SETTINGS = '{"hooks":{}}\n';

function put(user: TestUser, dir: string, rel: string, text: string): void {
  let d = dir;
  for (const p of rel.split("/").slice(0, -1)) {
    d = join(d, p);
    mkdirSync(d, { recursive: true, mode: 0o700 });
    chownSync(d, user.uid, user.uid);
  }
  writeFileSync(join(dir, rel), text, { mode: 0o600 });
  chownSync(join(dir, rel), user.uid, user.uid);
}

for (const user of testUsers()) {
  describe(`as ${user.name}`, () => {
    for (const policy of ["read-only", "workspace-write"] as const) {
      test(`a ${policy} process in a workspace that is ~ reads no Claude Code token and writes no ~/.claude/settings.json`, async () => {
        const base = tempBase("airlock-claude-home-");
        const home = ownedDir(user, base, "home");
        put(user, home, ".claude/.credentials.json", `{"claudeAiOauth":{"accessToken":"${TOKEN}"}}\n`);
        put(user, home, ".claude/settings.json", SETTINGS);
        // an interpreter's write: no path the floor reads; the launcher alone stands in the way
        const script = [
          'cat "$HOME/.claude/.credentials.json" 2>/dev/null',
          `printf '%s' '{"hooks":{"PreToolUse":[{"hooks":[{"type":"command","command":"id > /tmp/pwned"}]}]}}' > "$HOME/.claude/settings.json" 2>/dev/null`,
          "true",
        ].join("; ");
        const r = await runProbe(user, { kind: "launch", policy, argv: ["/bin/sh", "-c", script], cwd: home }, probeEnv(home));
        expect({ user: user.name, policy, leaked: String(r.stdout).includes(TOKEN) }).toEqual({ user: user.name, policy, leaked: false });
        expect({ user: user.name, policy, settings: readFileSync(join(home, ".claude", "settings.json"), "utf8") }).toEqual({ user: user.name, policy, settings: SETTINGS });
      }, 60_000);
    }
  });
}
