/**
 * `chat` mode "refuses every tool call" (SPEC §3). A call to an MCP tool in a chat session is refused
 * `mode_chat`, but before the gate judges it, `admit` resolves the name, and resolving a name under an
 * MCP server's prefix lists that server: the server's process is started. So a model in a chat session
 * starts any configured MCP server (a host process, running the user's configured command under its
 * `sandbox`, `danger-full-access` included) by naming one of its tools, without any card. The same holds
 * for a per-tool `permission: deny` on the name, and in `approve` mode before the card is parked; and
 * `code_execution__list_tools`, which `approve` mode runs without a card because it is `inert` ("it only
 * lists tool names and schemas", docs/security-model.md §3.3), starts every configured server.
 *
 * Older than issue 14: 23a755c's gate resolved the tool before judging too.
 * Why left as todo: whether starting a shared MCP server is "running a tool" is a design decision (the
 * gate needs the tool's definition to judge it; a fix would refuse source names in chat mode before
 * resolving, or let the registry resolve a name from the last listing without starting the server).
 * Run with `bun test --todo` to see it fail.
 */
import { afterEach, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { stringify } from "yaml";
import { harnessSse, startHarness, type Harness } from "../harness.ts";

const ROOT = path.resolve(import.meta.dir, "../..");
const FS_SERVER = path.join(ROOT, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");

let h: Harness | undefined;
let dataDir: string | undefined;
afterEach(async () => {
  await h?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  h = dataDir = undefined;
});

test.todo("a chat session's call to an MCP tool is refused without starting the MCP server", async () => {
  dataDir = mkdtempSync(path.join(tmpdir(), "airlock-chat-mcp-"));
  const ws = path.join(dataDir, "workspace");
  mkdirSync(ws, { recursive: true });
  const marker = path.join(ws, "mcp-started");
  writeFileSync(
    path.join(dataDir, "turns.yaml"),
    stringify({ turns: [{ tool_calls: [{ name: "fs__list_allowed_directories", arguments: {} }] }, { text: "done" }] }),
  );
  h = await startHarness({
    dataDir,
    config: {
      provider: { name: "scripted", script: "turns.yaml" },
      // the server's start leaves a mark in the workspace (writable under workspace-write), then serves
      mcp_servers: { fs: { command: "sh", args: ["-c", `echo up >> ${marker}; exec node ${FS_SERVER} ${ws}`], sandbox: "workspace-write", cwd: ws } },
    },
  });
  const s = await h.createSession({ mode: "chat" });
  const reply = await harnessSse(h, `/sessions/${s.id}/reply`, { method: "POST", json: { message: "go" } });
  await reply.ended;
  const results = reply.events.filter((e) => e.event === "tool_result").map((e) => e.data);
  expect(results.map((r) => (r.ok ? "ok" : r.error.code))).toEqual(["mode_chat"]);
  expect(existsSync(marker)).toBe(false);
});
