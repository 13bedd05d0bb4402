/**
 * The terminal card of an attended `airlock run` restates the call right above its question: the tool and a
 * one-line summary (cli/call-summary.ts). The summary was the first of `command`, `path`, `instructions`,
 * `code` present in the arguments, whatever the tool — but an MCP tool runs its own keys, and its server
 * drops keys it does not take. A model calling the filesystem server's `move_file` with an added
 * `path: "notes.txt"` got the line `fs__move_file notes.txt` above `allow?` while the call moves `source`
 * (a private key) to `destination`. The summary names a key only for the built-in tool that runs it; any other
 * tool's call is summed up by all its arguments. A real PTY (util-linux `script`), the real MCP server.
 */
import { expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { airlockRun, runAnswering, scriptedDataDir, tempDirs } from "../run-in-pty.ts";

const FS_SERVER = join(import.meta.dir, "..", "..", "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
const tempDir = tempDirs();

test("a card for an MCP tool never restates a key the tool does not run as what the call is about", async () => {
  const dir = tempDir("airlock-card-summary-");
  const ws = join(dir, "ws");
  const args = { path: "notes.txt", source: join(ws, "id_ed25519"), destination: join(ws, "public", "key.txt") };
  scriptedDataDir(
    dir,
    { turns: [{ tool_calls: [{ name: "fs__move_file", arguments: args }] }, { text: "done" }] },
    { mode: "approve", mcp_servers: { fs: { command: "node", args: [FS_SERVER, ws], sandbox: "read-only" } } },
  );
  writeFileSync(join(ws, "notes.txt"), "notes\n");
  writeFileSync(join(ws, "id_ed25519"), "secret\n");
  const { screen } = await runAnswering({ cmd: airlockRun(dir, "go", ws), cwd: ws, env: { NO_COLOR: "1" } }, () => "n\n");
  expect(screen).toContain("fs__move_file needs your approval");
  // the line right above the question (and its reason): the tool and what the call is about
  const restated = /\n {2}(fs__move_file[^\r\n]*)\r?\n {2}[^\r\n]*\r?\n[^\n]*allow\? \[y\]once/.exec(screen)?.[1];
  expect(restated).toBeDefined();
  expect(restated).not.toBe("fs__move_file notes.txt");
  expect(restated).toContain("id_ed25519");
  // the call lines on stderr name it the same way
  expect(screen).not.toContain("→ fs__move_file notes.txt");
});
