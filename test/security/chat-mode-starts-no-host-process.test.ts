/**
 * `chat` mode "refuses every tool call" (SPEC §3). Resolving a name under an MCP server's prefix lists that
 * server's tools, which starts its process, so the gate refuses what the name alone decides — every call in
 * chat mode, a per-tool `permission: deny` — before resolving it (`nameRefusal`, src/gate/inspectors/mode.ts).
 * Before that, a model in a chat session started any configured MCP server (a host process running the
 * user's command under its `sandbox`, `danger-full-access` included) by naming one of its tools.
 *
 * Still open (a design decision, see the closing note): in `approve` mode the server starts before the card
 * is parked (the gate needs the tool's definition to judge the call), and `code_execution__list_tools`,
 * which `approve` runs without a card because it is `inert`, starts every configured server.
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

test("a chat session's call to an MCP tool is refused without starting the MCP server", async () => {
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
