/**
 * `a` (allow for this session) on a card stores the card's `suggested_rule` for the session tree. A folder
 * listing (`developer__list_dir`) was offered `Read(//abs/folder)` — and a Read rule on a folder covers every
 * file below it, at any depth (gitignore-style paths), so `a` on "list /etc" (or the home folder) let every
 * later `read_file` under it, by any agent of the tree, run without a card. No rule form covers a listing
 * alone: a listing is offered none (y and n still answer it). A real PTY (`script`), the scripted provider.
 */
import { expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { airlockRun, runAnswering, scriptedDataDir, tempDirs } from "../run-in-pty.ts";

const tempDir = tempDirs();

test("a on a read_file card pointed at a folder never lets a read of a file below it run without asking", async () => {
  const { screen } = await run("developer__read_file");
  expect(screen).toContain("developer__read_file needs your approval");
  expect(screen.split("developer__read_file needs your approval").length).toBe(3); // the folder's card, then the file's
  expect(screen).not.toContain("s3cret");
});

/** `airlock run` in a PTY: the model calls `first` on a private folder, then reads a file below it; `a` to the first question, `n` to the rest. */
async function run(first: string): Promise<{ screen: string }> {
  const dir = tempDir("airlock-folder-rule-");
  const data = join(dir, "data");
  const ws = join(dir, "ws");
  const notes = join(dir, "private");
  mkdirSync(data);
  mkdirSync(ws);
  mkdirSync(join(notes, "deep"), { recursive: true });
  writeFileSync(join(notes, "deep", "secret.txt"), "s3cret\n");
  const turns = [{ tool_calls: [{ name: first, arguments: { path: notes } }] }, { tool_calls: [{ name: "developer__read_file", arguments: { path: join(notes, "deep", "secret.txt") } }] }, { text: "done" }];
  scriptedDataDir(data, { turns }, { mode: "approve", sandbox: "read-only" });
  const { screen } = await runAnswering({ cmd: airlockRun(data, "go", ws), cwd: ws, env: { NO_COLOR: "1" } }, (i) => (i === 0 ? "a\n" : "n\n"));
  return { screen };
}

test("a on a folder listing's card never lets a read of a file in that folder run without asking", async () => {
  const { screen } = await run("developer__list_dir");
  expect(screen).toContain("developer__list_dir needs your approval");
  // the read of a file below the listed folder is asked, not run on the listing's answer
  expect(screen).toContain("developer__read_file needs your approval");
  expect(screen).not.toContain("s3cret");
});
