/**
 * @module test/integration/trust-serve
 * `airlock serve` and trusted folders: creating a session in a workspace whose `.claude/settings.json`
 * has hooks, not trusted, answers 201 with `warnings` naming the file and the `airlock trust DIR` that
 * would run them; `airlock trust` run as a separate process beside the running server (same data dir)
 * counts for the next session, whose reply has no warning and whose tool calls run the project's hook.
 */
import { afterAll, afterEach, beforeAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startHarness, type Harness } from "../harness.ts";

const MAIN = join(import.meta.dir, "..", "..", "src", "main.ts");
const base = realpathSync(mkdtempSync(join(tmpdir(), "airlock-trust-serve-")));
const home = join(base, "home");
const ws = join(base, "proj");
const savedHome = process.env.HOME;
let h: Harness | undefined;

beforeAll(() => {
  mkdirSync(join(home, ".claude"), { recursive: true });
  mkdirSync(join(ws, ".claude"), { recursive: true });
  writeFileSync(
    join(ws, ".claude", "settings.local.json"),
    JSON.stringify({ hooks: { PreToolUse: [{ hooks: [{ type: "command", command: 'touch "$AIRLOCK_PROJECT_DIR/project-hook-ran"' }] }] } }),
  );
  // ~/.claude/settings.json is read from $HOME, as Claude Code reads it
  process.env.HOME = home;
});
afterEach(async () => {
  await h?.close();
  h = undefined;
});
afterAll(() => {
  process.env.HOME = savedHome;
  rmSync(base, { recursive: true, force: true });
});

test("a new session in an untrusted folder is told its hooks do not run; `airlock trust` beside the running server makes the next session run them", async () => {
  h = await startHarness({
    config: { mode: "autonomous", hooks: { import_claude_settings: true }, provider: { name: "scripted", script: "turns.yaml" } },
    files: { "turns.yaml": 'turns:\n  - tool_calls: [{ name: developer__shell, arguments: { command: "true" } }]\n  - text: "done"\n  - text: "again"\n' },
  });
  const untrusted = await h.createSession({ workspace: ws });
  expect(untrusted.warnings).toEqual([
    `${join(ws, ".claude", "settings.local.json")}: its hooks are NOT run: ${ws} is not a trusted folder (a repository's hooks are code from that repository). If you trust it, run: airlock trust ${ws}`,
  ]);
  expect(await h.rt.runTurn(untrusted.id, "go")).toMatchObject({ status: "completed" });
  expect(existsSync(join(ws, "project-hook-ran"))).toBe(false);

  const cli = Bun.spawn([process.execPath, MAIN, "trust", ws, "--data-dir", h.dataDir], { stdin: "ignore", stdout: "pipe", stderr: "pipe", env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home } });
  const [code, err] = await Promise.all([cli.exited, new Response(cli.stderr).text()]);
  expect({ code, err }).toEqual({ code: 0, err: "" });

  const trusted = await h.createSession({ workspace: ws });
  expect(trusted.warnings).toBeUndefined();
  expect(await h.rt.runTurn(trusted.id, "go")).toMatchObject({ status: "completed" });
  expect(existsSync(join(ws, "project-hook-ran"))).toBe(true);
}, 120_000);
