/**
 * The terminal card of an attended `airlock run` restates the call right above its question: the tool and a
 * one-line summary (cli/call-summary.ts). The summary was the first of `command`, `path`, `instructions`,
 * `code` present in the arguments, whatever the tool — but an MCP tool runs its own keys, and its server
 * drops keys it does not take. A model calling the filesystem server's `move_file` with an added
 * `path: "notes.txt"` got the line `fs__move_file notes.txt` above `allow?` while the call moves `source`
 * (a private key) to `destination`. The summary names a key only for the built-in tool that runs it; any other
 * tool's call is summed up by all its arguments. A real PTY (util-linux `script`), the real MCP server.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";

const ROOT = join(import.meta.dir, "..", "..");
const MAIN = join(ROOT, "src", "main.ts");
const FS_SERVER = join(ROOT, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

test("a card for an MCP tool never restates a key the tool does not run as what the call is about", async () => {
  const dir = mkdtempSync(join(tmpdir(), "airlock-card-summary-"));
  dirs.push(dir);
  const ws = join(dir, "ws");
  mkdirSync(ws);
  writeFileSync(join(ws, "notes.txt"), "notes\n");
  writeFileSync(join(ws, "id_ed25519"), "secret\n");
  const args = { path: "notes.txt", source: join(ws, "id_ed25519"), destination: join(ws, "public", "key.txt") };
  writeFileSync(join(dir, "turns.yaml"), stringify({ turns: [{ tool_calls: [{ name: "fs__move_file", arguments: args }] }, { text: "done" }] }));
  writeFileSync(
    join(dir, "airlock.yaml"),
    stringify({ provider: { name: "scripted", script: "turns.yaml" }, mode: "approve", mcp_servers: { fs: { command: "node", args: [FS_SERVER, ws], sandbox: "read-only" } } }),
  );
  const cmd = `${process.execPath} ${MAIN} run --data-dir ${dir} --workspace ${ws} 'go'`;
  const p = Bun.spawn(["script", "-qec", cmd, "/dev/null"], { cwd: ws, stdin: "pipe", stdout: "pipe", stderr: "pipe", env: { ...process.env, AIRLOCK_HOME: "", NO_COLOR: "1" } });
  const timer = setTimeout(() => p.kill("SIGKILL"), 40_000);
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
  await p.exited;
  expect(screen).toContain("fs__move_file needs your approval");
  // the line right above the question (and its reason): the tool and what the call is about
  const restated = /\n {2}(fs__move_file[^\r\n]*)\r?\n {2}[^\r\n]*\r?\n[^\n]*allow\? \[y\]once/.exec(screen)?.[1];
  expect(restated).toBeDefined();
  expect(restated).not.toBe("fs__move_file notes.txt");
  expect(restated).toContain("id_ed25519");
  // the call lines on stderr name it the same way
  expect(screen).not.toContain("→ fs__move_file notes.txt");
});
