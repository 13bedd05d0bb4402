/**
 * `airlock run` with an MCP server (issue 8): the server's stderr and airlock's MCP notes go to
 * stderr, stdout carries only the result (SPEC §2); the server is gone when the run ends.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { stringify } from "yaml";
import { processesWith } from "../processes.ts";

const ROOT = path.resolve(import.meta.dir, "../..");
const MAIN = path.join(ROOT, "src", "main.ts");
const FS_SERVER = path.join(ROOT, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});


describe("airlock run with an MCP server", () => {
  test("stdout holds only the NDJSON events; the server's stderr is logged on stderr; no server process outlives the run", async () => {
    dir = mkdtempSync(path.join(tmpdir(), "airlock-mcp-cli-"));
    const ws = path.join(dir, "workspace");
    mkdirSync(ws);
    writeFileSync(path.join(ws, "a.txt"), "alpha\n");
    writeFileSync(
      path.join(dir, "turns.yaml"),
      stringify({
        turns: [{ tool_calls: [{ name: "fs__read_text_file", arguments: { path: path.join(ws, "a.txt") } }] }, { text: "read it" }],
      }),
    );
    writeFileSync(
      path.join(dir, "airlock.yaml"),
      stringify({
        provider: { name: "scripted", script: "turns.yaml" },
        mode: "autonomous",
        // A unique root path, so this test finds exactly its own server processes.
        mcp_servers: { fs: { command: "node", args: [FS_SERVER, ws], sandbox: "read-only" } },
      }),
    );
    const proc = Bun.spawn([process.execPath, MAIN, "run", "go", "--headless", "--output-format", "stream-json", "--data-dir", dir, "--workspace", ws], {
      cwd: ws,
      env: { PATH: process.env.PATH, HOME: process.env.HOME },
      stdout: "pipe",
      stderr: "pipe",
    });
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    expect({ code, stderr: code === 0 ? "" : stderr }).toEqual({ code: 0, stderr: "" });
    // Every stdout line is one NDJSON event (nothing else was printed there), ending with the result.
    const lines = stdout.trim().split("\n").map((l) => JSON.parse(l));
    expect(lines.at(-1)).toMatchObject({ type: "result", status: "completed", result: "read it" });
    expect(lines.find((e) => e.type === "tool_result")).toMatchObject({ tool: "fs__read_text_file", ok: true, result: { content: "alpha\n" } });
    expect(stdout).not.toContain("[mcp:fs]");
    expect(stdout).not.toContain("Secure MCP Filesystem Server");
    expect(stderr).toContain("[mcp:fs] Secure MCP Filesystem Server running on stdio");
    expect(processesWith(ws)).toEqual([]);
  });
});
