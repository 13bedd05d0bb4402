/**
 * The terminal approver of an attended `airlock run` shows model-written text: an elevation's `justification`
 * (in the card's reason), a shell word the floor names, a failed call's error message (a path the model chose).
 * That text reached the terminal raw: ESC sequences could hide the card's real arguments (`\x1b[8m`), retitle
 * the window, and a line break could print a fake `arguments:` line — the person answers `y` to a card they
 * did not see. `airlock attach` shows such text through `safe()` (attach-card-text-cannot-drive-the-terminal);
 * `airlock run` must too. A real PTY (util-linux `script`) and the scripted provider.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const MAIN = join(import.meta.dir, "..", "..", "src", "main.ts");
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** `airlock run` in a PTY with `turns` (YAML) as the model; answers `n` to every question. Killed after 30 s. */
async function runInPty(turns: string): Promise<{ code: number; screen: string }> {
  const dir = mkdtempSync(join(tmpdir(), "airlock-run-esc-"));
  dirs.push(dir);
  const ws = join(dir, "ws");
  mkdirSync(ws);
  writeFileSync(join(dir, "turns.yaml"), turns);
  writeFileSync(join(dir, "airlock.yaml"), "provider: { name: scripted, script: turns.yaml }\nmode: smart\nsandbox: read-only\n");
  const cmd = `${process.execPath} ${MAIN} run --data-dir ${dir} 'go'`;
  const p = Bun.spawn(["script", "-qec", cmd, "/dev/null"], { cwd: ws, stdin: "pipe", stdout: "pipe", stderr: "pipe", env: { ...process.env, AIRLOCK_HOME: "", NO_COLOR: "1" } });
  const timer = setTimeout(() => p.kill("SIGKILL"), 30_000);
  let screen = "";
  const reader = p.stdout.getReader();
  const dec = new TextDecoder();
  let answered = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    screen += dec.decode(value);
    while (answered < screen.split("allow? [y]once").length - 1) {
      answered++;
      p.stdin.write("n\n");
      await p.stdin.flush();
    }
  }
  clearTimeout(timer);
  return { code: await p.exited, screen };
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
