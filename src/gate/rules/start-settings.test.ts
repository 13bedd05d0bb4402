import { afterAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { claudeSettingsFiles, importClaudeSettings } from "./start.ts";

const root = mkdtempSync(path.join(tmpdir(), "airlock-start-settings-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

test("a settings file's hooks are listed as not read by the permissions import only while hooks.import_claude_settings is off", () => {
  const home = path.join(root, "home");
  mkdirSync(path.join(home, ".claude"), { recursive: true });
  const file = path.join(home, ".claude", "settings.json");
  writeFileSync(file, JSON.stringify({ permissions: { deny: ["Read(./.env)"] }, hooks: { PreToolUse: [] }, model: "x" }));
  const files = claudeSettingsFiles(home, path.join(root, "ws"));
  expect(importClaudeSettings(files).ignored).toEqual([`${file}: hooks`, `${file}: model`]);
  expect(importClaudeSettings(files, { hooks: true }).ignored).toEqual([`${file}: model`]);
});
