/**
 * The terminal card of an attended `airlock run` bounds its arguments (20 lines / 2,000 characters) so the
 * tool and the reason it asks stay in sight of the question (SPEC §2). The reason was not bounded, and part of it
 * is model-written: an elevation's `justification` ("asks to run this one call under sandbox
 * "danger-full-access" …: JUSTIFICATION"). A 100 KB justification of one line made the card hundreds of
 * screens long: the sandbox asked for scrolled out of sight, the person saw the justification's last words
 * (model text), a cut argument list and `developer__shell ls -la` right above `allow?`. A real PTY (`script`).
 */
import { expect, test } from "bun:test";
import { airlockRun, QUESTION, runAnswering, scriptedDataDir, tempDirs } from "../run-in-pty.ts";

const tempDir = tempDirs();

test("an elevation's 100 KB justification cannot push the sandbox it asks for out of sight of the question", async () => {
  const dir = tempDir("airlock-card-reason-");
  const justification = `${"the listing is needed to find the build output, ".repeat(2100)}so this only lists the folder, read-only`;
  const args = { justification, sandbox_permissions: "danger-full-access", command: "ls -la" };
  const ws = scriptedDataDir(dir, { turns: [{ tool_calls: [{ name: "developer__shell", arguments: args }] }, { text: "done" }] }, { mode: "smart", sandbox: "read-only" });
  const { screen } = await runAnswering({ cmd: airlockRun(dir, "go", ws), cwd: ws, env: { NO_COLOR: "1" } }, (i) => (i === 0 ? "v\n" : "n\n"));
  const card = screen.indexOf("needs your approval");
  const first = screen.indexOf(QUESTION, card);
  expect(card).toBeGreaterThan(-1);
  expect(first).toBeGreaterThan(card);
  // the card up to its question fits a screen (as its bounded arguments do), and says which sandbox is asked for
  expect(first - card).toBeLessThan(4000);
  expect(screen.slice(card, first)).toContain('sandbox "danger-full-access"');
  // v shows the whole reason
  const second = screen.indexOf(QUESTION, first + 1);
  expect(second).toBeGreaterThan(first);
  expect(screen.slice(first, second)).toContain("so this only lists the folder, read-only");
});

test("a 100 KB path cannot make the card's will_fail line push the card out of sight of its question", async () => {
  const dir = tempDir("airlock-card-willfail-");
  const args = { path: `${"d/".repeat(50_000)}f.txt`, content: "x" };
  const ws = scriptedDataDir(dir, { turns: [{ tool_calls: [{ name: "developer__write_file", arguments: args }] }, { text: "done" }] }, { mode: "approve", sandbox: "read-only" });
  const { screen } = await runAnswering({ cmd: airlockRun(dir, "go", ws), cwd: ws, env: { NO_COLOR: "1" } }, () => "n\n");
  const card = screen.indexOf("needs your approval");
  const first = screen.indexOf(QUESTION, card);
  expect(card).toBeGreaterThan(-1);
  expect(first).toBeGreaterThan(card);
  expect(screen.slice(card, first)).toContain("allowing this will not help");
  expect(first - card).toBeLessThan(4000);
});
