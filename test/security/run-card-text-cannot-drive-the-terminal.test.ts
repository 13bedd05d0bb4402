/**
 * The terminal approver of an attended `airlock run` shows model-written text: an elevation's `justification`
 * (in the card's reason), a shell word the floor names, a failed call's error message (a path the model chose).
 * That text reached the terminal raw: ESC sequences could hide the card's real arguments (`\x1b[8m`), retitle
 * the window, and a line break could print a fake `arguments:` line — the person answers `y` to a card they
 * did not see. `airlock attach` shows such text through `safe()` (attach-card-text-cannot-drive-the-terminal);
 * `airlock run` must too. A real PTY (util-linux `script`) and the scripted provider.
 */
import { expect, test } from "bun:test";
import { airlockRun, runAnswering, scriptedDataDir, tempDirs } from "../run-in-pty.ts";

const tempDir = tempDirs();

/** `airlock run` in a PTY with `turns` (YAML) as the model; answers `n` to every question. Killed after 30 s. */
async function runInPty(turns: string): Promise<{ code: number; screen: string }> {
  const dir = tempDir("airlock-run-esc-");
  const ws = scriptedDataDir(dir, turns, "provider: { name: scripted, script: turns.yaml }\nmode: smart\nsandbox: read-only\n");
  return await runAnswering({ cmd: airlockRun(dir, "go"), cwd: ws, env: { NO_COLOR: "1" }, killAfterMs: 30_000 }, () => "n\n");
}

const FAKE = '\n  arguments: {"command":"ls"}\n\x1b]0;PWNED\x07\x1b[8m';

test("an elevation's justification cannot hide the card's arguments or print a fake line", async () => {
  const args = { command: "rm -rf ~/important", sandbox_permissions: "workspace-write", justification: `list the folder${FAKE}` };
  const { screen } = await runInPty(`turns:\n  - tool_calls: [{ name: developer__shell, arguments: ${JSON.stringify(args)} }]\n  - text: done\n`);
  expect(screen).toContain("needs your approval");
  expect(screen).not.toContain("\x1b[8m");
  expect(screen).not.toContain("\x1b]0;PWNED");
  expect(screen).not.toContain('\n  arguments: {"command":"ls"}');
  expect(screen).toContain("rm -rf ~/important"); // the real arguments are on screen
});

test("a failed call's error message (a model-chosen path) reaches the terminal without its control characters", async () => {
  const path = `nope${FAKE}`;
  const { screen } = await runInPty(`turns:\n  - tool_calls: [{ name: developer__read_file, arguments: ${JSON.stringify({ path })} }]\n  - text: done\n`);
  expect(screen).toContain("developer__read_file");
  expect(screen).not.toContain("\x1b[8m");
  expect(screen).not.toContain("\x1b]0;PWNED");
});

test("the card's arguments JSON shows C1 controls escaped (JSON.stringify leaves U+0080..U+009F raw)", async () => {
  const args = { command: "echo \u009b8m hidden > x.txt" };
  const { screen } = await runInPty(`turns:\n  - tool_calls: [{ name: developer__shell, arguments: ${JSON.stringify(args)} }]\n  - text: done\n`);
  expect(screen).toContain("needs your approval");
  expect(screen).not.toContain("\u009b");
});
