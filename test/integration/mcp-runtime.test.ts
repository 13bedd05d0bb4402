/**
 * MCP tools through the whole runtime (issue 8): a scripted model runs scripts that call real MCP
 * servers (server-filesystem, server-everything) as `tools.server__tool`, every call judged by the
 * real gate (hooks included) and every server confined by bubblewrap.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { stringify } from "yaml";
import { createCodeExecutionTools } from "../../src/tool/code-execution.ts";
import { startHarness, type Harness } from "../harness.ts";

const ROOT = path.resolve(import.meta.dir, "../..");
const FS_SERVER = path.join(ROOT, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
const EVERYTHING = path.join(ROOT, "node_modules/@modelcontextprotocol/server-everything/dist/index.js");

let h: Harness | undefined;
let dataDir: string | undefined;
afterEach(async () => {
  await h?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  h = dataDir = undefined;
});

interface ToolEvent {
  event: string;
  data: any;
}

/**
 * Starts a harness whose workspace is known before start (MCP server args name it), with a scripted
 * model whose turns are built from the workspace path. Collects every tool_request/tool_result event.
 */
async function start(o: {
  turns: (ws: string) => unknown[];
  mcp: (ws: string) => Record<string, unknown>;
  hooks?: (dir: string) => Record<string, unknown>;
  workspaceFiles?: Record<string, string>;
}) {
  dataDir = mkdtempSync(path.join(tmpdir(), "airlock-mcp-it-"));
  const ws = path.join(dataDir, "workspace");
  mkdirSync(ws, { recursive: true });
  writeFileSync(path.join(dataDir, "turns.yaml"), stringify({ turns: o.turns(ws) }));
  h = await startHarness({
    dataDir,
    workspaceFiles: o.workspaceFiles,
    config: {
      provider: { name: "scripted", script: "turns.yaml" },
      mode: "autonomous",
      mcp_servers: o.mcp(ws),
      ...(o.hooks ? { hooks: o.hooks(dataDir) } : {}),
    },
  });
  // The real code-execution tools over the runtime's own script pool, in case this build's default
  // wiring does not register them yet (it is the same registry either way).
  if (!h.rt.registry.get("code_execution__execute")) for (const t of createCodeExecutionTools(h.rt.scripts)) h.rt.registry.register(t);
  const events: ToolEvent[] = [];
  h.rt.bus.subscribeAll((e: any) => {
    if (e.type === "tool_request" || e.type === "tool_result") events.push({ event: e.type, data: e.data });
  });
  const session = await h.rt.createSession({ workspace: ws });
  return { ws, session, events };
}

function results(events: ToolEvent[], tool: string): any[] {
  return events.filter((e) => e.event === "tool_result" && e.data.tool === tool).map((e) => e.data);
}

function scriptValue(events: ToolEvent[]): any {
  const r = results(events, "code_execution__execute");
  expect(r.length).toBe(1);
  expect(r[0].ok).toBe(true);
  return r[0].result.value;
}

const tryCall = (expr: string) => `await (async () => { try { return { ok: true, value: await ${expr} }; } catch (e) { return { ok: false, message: String(e && e.message || e), code: e && e.code }; } })()`;

describe("MCP tools from scripts through the runtime", () => {
  test("server-filesystem under read-only: list_tools shows its schema; a script lists and reads; the write fails inside the sandbox", async () => {
    const { ws, session, events } = await start({
      workspaceFiles: { "hello.txt": "hello through MCP\n" },
      // `cwd`: the server's workspace (it lives under /tmp, which the sandbox otherwise hides).
      mcp: (ws) => ({ fs: { command: "node", args: [FS_SERVER, ws], sandbox: "read-only", cwd: ws } }),
      turns: (ws) => [
        { tool_calls: [{ name: "code_execution__list_tools", arguments: {} }] },
        {
          tool_calls: [
            {
              name: "code_execution__execute",
              arguments: {
                code: [
                  `const listing = await tools.fs__list_directory({ path: ${JSON.stringify(ws)} });`,
                  `const file = await tools.fs__read_text_file({ path: ${JSON.stringify(ws + "/hello.txt")} });`,
                  `const write = ${tryCall(`tools.fs__write_file({ path: ${JSON.stringify(ws + "/new.txt")}, content: "x" })`)};`,
                  `return { listing, file, write };`,
                ].join("\n"),
              },
            },
          ],
        },
        { text: "done" },
      ],
    });
    const res = await h!.rt.runTurn(session.id, "go");
    expect(res.status).toBe("completed");

    const listed = results(events, "code_execution__list_tools")[0];
    expect(listed.ok).toBe(true);
    const specs = JSON.stringify(listed.result);
    expect(specs).toContain("fs__read_text_file");
    expect(specs).toContain("fs__write_file");

    const value = scriptValue(events);
    expect(value.listing).toEqual({ content: "[FILE] hello.txt" });
    expect(value.file).toEqual({ content: "hello through MCP\n" });
    expect(value.write.ok).toBe(false);
    expect(value.write.message).toContain("EROFS");
    expect(existsSync(path.join(ws, "new.txt"))).toBe(false);
    // Each script call went through the gate under the MCP name.
    const writes = results(events, "fs__write_file");
    expect(writes.length).toBe(1);
    expect(writes[0].error.code).toBe("mcp_tool_error");
    const reqs = events.filter((e) => e.event === "tool_request" && e.data.tool.startsWith("fs__"));
    expect(reqs.map((e) => [e.data.tool, e.data.from_script])).toEqual([
      ["fs__list_directory", true],
      ["fs__read_text_file", true],
      ["fs__write_file", true],
    ]);
  });

  test("server-everything: structured arguments round-trip; an isError result reaches the script as an error", async () => {
    const { session, events } = await start({
      mcp: () => ({ ev: { command: "node", args: [EVERYTHING, "stdio"], sandbox: "read-only" } }),
      turns: () => [
        {
          tool_calls: [
            {
              name: "code_execution__execute",
              arguments: {
                code: [
                  `const weather = await tools["ev__get-structured-content"]({ location: "Los Angeles" });`,
                  `const sum = await tools["ev__get-sum"]({ a: 19, b: 23 });`,
                  `const bad = ${tryCall(`tools["ev__get-sum"]({ a: "nineteen", b: 23 })`)};`,
                  `return { weather, sum, bad };`,
                ].join("\n"),
              },
            },
          ],
        },
        { text: "done" },
      ],
    });
    expect((await h!.rt.runTurn(session.id, "go")).status).toBe("completed");
    const value = scriptValue(events);
    expect(value.weather).toEqual({ temperature: 73, conditions: "Sunny / Clear", humidity: 48 });
    expect(value.sum).toBe("The sum of 19 and 23 is 42.");
    expect(value.bad.ok).toBe(false);
    expect(value.bad.message).toContain("expected number");
    expect(results(events, "ev__get-sum").map((r) => r.ok)).toEqual([true, false]);
    expect(results(events, "ev__get-sum")[1].error.code).toBe("mcp_tool_error");
  });

  for (const via of ["script", "model"] as const) {
    test(`a PreToolUse hook denying mcp__fs__write_file stops the call before the server sees it (called by the ${via})`, async () => {
      const { ws, session, events } = await start({
        // Unconfined on purpose: the server itself would write, so only the hook can stop it.
        mcp: (ws) => ({ fs: { command: "node", args: [FS_SERVER, ws], sandbox: "danger-full-access" } }),
        hooks: (dir) => {
          const hook = path.join(dir, "deny-mcp-write.sh");
          writeFileSync(hook, `#!/bin/sh\ncat >> "${dir}/hook-input.jsonl"\necho >> "${dir}/hook-input.jsonl"\necho "no MCP writes here" >&2\nexit 2\n`);
          chmodSync(hook, 0o755);
          return { PreToolUse: [{ matcher: "^mcp__fs__write_file$", hooks: [{ type: "command", command: hook }] }] };
        },
        turns: (ws) =>
          via === "script"
            ? [
                {
                  tool_calls: [
                    {
                      name: "code_execution__execute",
                      arguments: {
                        code: [
                          `const write = ${tryCall(`tools.fs__write_file({ path: ${JSON.stringify(ws + "/blocked.txt")}, content: "x" })`)};`,
                          `const mkdir = await tools.fs__create_directory({ path: ${JSON.stringify(ws + "/allowed-dir")} });`,
                          `return { write, mkdir };`,
                        ].join("\n"),
                      },
                    },
                  ],
                },
                { text: "done" },
              ]
            : [
                {
                  tool_calls: [
                    { name: "fs__write_file", arguments: { path: ws + "/blocked.txt", content: "x" } },
                    { name: "fs__create_directory", arguments: { path: ws + "/allowed-dir" } },
                  ],
                },
                { text: "done" },
              ],
      });
      expect((await h!.rt.runTurn(session.id, "go")).status).toBe("completed");
      if (via === "script") {
        const value = scriptValue(events);
        expect(value.write.ok).toBe(false);
        expect(value.write.message).toContain("no MCP writes here");
      }
      expect(existsSync(path.join(ws, "blocked.txt"))).toBe(false);
      // The same server did change state for a call the hook let through.
      expect(existsSync(path.join(ws, "allowed-dir"))).toBe(true);
      const write = results(events, "fs__write_file")[0];
      expect(write.ok).toBe(false);
      expect(write.error.code).not.toBe("mcp_tool_error");
      expect(write.error.message).toContain("no MCP writes here");
      expect(results(events, "fs__create_directory")[0].ok).toBe(true);
      // The hook saw Claude Code's name in tool_name and airlock's in airlock_tool_name, once.
      const inputs = readFileSync(path.join(dataDir!, "hook-input.jsonl"), "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
      expect(inputs.length).toBe(1);
      expect(inputs[0]).toMatchObject({
        hook_event_name: "PreToolUse",
        tool_name: "mcp__fs__write_file",
        airlock_tool_name: "fs__write_file",
        tool_input: { path: path.join(ws, "blocked.txt"), content: "x" },
      });
    });
  }

  test("killing the server mid-call: that call is mcp_server_unavailable, the next call restarts it and works", async () => {
    const { session, events } = await start({
      mcp: () => ({ ev: { command: "node", args: [EVERYTHING, "stdio"], sandbox: "read-only" } }),
      turns: () => [
        {
          tool_calls: [
            {
              name: "code_execution__execute",
              arguments: {
                code: [
                  `const before = await tools.ev__echo({ message: "before" });`,
                  `const during = ${tryCall(`tools["ev__trigger-long-running-operation"]({ duration: 60, steps: 60 })`)};`,
                  `const after = await tools.ev__echo({ message: "after" });`,
                  `return { before, during, after };`,
                ].join("\n"),
              },
            },
          ],
        },
        { text: "done" },
      ],
    });
    // When the long call reaches the gate, kill the server's sandbox (bwrap and its PID namespace).
    let killed: number[] = [];
    h!.rt.bus.subscribeAll((e: any) => {
      if (e.type === "tool_request" && e.data.tool === "ev__trigger-long-running-operation") {
        // Let the gate forward it first: kill on the next macrotask.
        setTimeout(() => (killed = killServers("server-everything")), 0);
      }
    });
    expect((await h!.rt.runTurn(session.id, "go")).status).toBe("completed");
    expect(killed.length).toBe(1);
    const value = scriptValue(events);
    expect(value.before).toBe("Echo: before");
    expect(value.during.ok).toBe(false);
    expect(value.during.message).toContain('MCP server "ev"');
    expect(results(events, "ev__trigger-long-running-operation")[0].error.code).toBe("mcp_server_unavailable");
    expect(value.after).toBe("Echo: after");
    // A new server process runs now.
    const now = serverPids("server-everything");
    expect(now.length).toBe(1);
    expect(now[0]).not.toBe(killed[0]);
  });
});

/** Our child processes (bwrap) whose command line mentions `needle`. */
function serverPids(needle: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync("/proc")) {
    const pid = Number(name);
    if (!Number.isInteger(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(f[1]) !== process.pid || f[0] === "Z") continue;
      if (readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(needle)) out.push(pid);
    } catch {
      // exited
    }
  }
  return out;
}

function killServers(needle: string): number[] {
  const pids = serverPids(needle);
  for (const p of pids) process.kill(p, "SIGKILL");
  return pids;
}
