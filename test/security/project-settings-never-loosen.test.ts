/**
 * `permissions.import_claude_settings` reads Claude Code's settings files; the two project files live in the
 * workspace, which the model can write. A model that wrote `.claude/settings.local.json` =
 * `{"permissions":{"allow":["Bash"]}}` would have every shell command run without a card from the next start.
 * So a project file's allow rules are never imported (its ask and deny rules are: they only tighten); the
 * user's own `~/.claude/settings.json` still is. (Claude Code reads project settings only in a folder the
 * person trusted; airlock has no trust step yet.)
 */
import { afterAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Config } from "../../src/config/schema.ts";
import { withEffectivePermissions } from "../../src/gate/rules/start.ts";

const root = realpathSync(mkdtempSync(path.join(tmpdir(), "airlock-proj-settings-")));
afterAll(() => rmSync(root, { recursive: true, force: true }));

test("a workspace .claude/settings.local.json the model wrote does not allow Bash at the next start", () => {
  const ws = path.join(root, "ws");
  const home = path.join(root, "home");
  mkdirSync(path.join(ws, ".claude"), { recursive: true });
  mkdirSync(path.join(home, ".claude"), { recursive: true });
  writeFileSync(path.join(ws, ".claude", "settings.local.json"), JSON.stringify({ permissions: { allow: ["Bash"], deny: ["Read(./.env)"] } }));
  writeFileSync(path.join(ws, ".claude", "settings.json"), JSON.stringify({ permissions: { allow: ["Edit(./**)"], ask: ["Bash(git push:*)"] } }));
  writeFileSync(path.join(home, ".claude", "settings.json"), JSON.stringify({ permissions: { allow: ["Bash(npm test)"] } }));
  const logs: string[] = [];
  const config = withEffectivePermissions(Config.parse({ mode: "smart", permissions: { import_claude_settings: true } }), { workspace: ws, home, log: (l) => logs.push(l) });
  expect(config.permissions.allow).toEqual(["Bash(npm test)"]);
  expect(config.permissions.deny).toEqual(["Read(./.env)"]);
  expect(config.permissions.ask).toEqual(["Bash(git push:*)"]);
  expect(logs.join("\n")).toContain('permissions.allow "Bash" (a project file\'s allow rules are not imported');
});
