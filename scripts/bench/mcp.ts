/**
 * @module scripts/bench/mcp
 * MCP figures (issue 8), with server-everything's `echo`: median latency of one warm call from a
 * script (QuickJS → main thread → airlock's MCP client → confined server) against the same call
 * from the SDK's own client alone, and server start time. Prints one JSON object.
 * Usage: `bun scripts/bench/mcp.ts [calls] [starts]` (default 300 calls, 7 starts per variant).
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ScriptPool } from "../../src/script/pool.ts";
import { Config, type SandboxPolicyName } from "../../src/config/schema.ts";
import { toAirlockError } from "../../src/errors.ts";
import { McpManager } from "../../src/tool/mcp/index.ts";
import type { ToolContext, ToolDef, ToolOutcome } from "../../src/tool/tool.ts";

const calls = Number(process.argv[2] ?? 300);
const starts = Number(process.argv[3] ?? 7);
const EVERYTHING = path.resolve(import.meta.dir, "../../node_modules/@modelcontextprotocol/server-everything/dist/index.js");
const ws = mkdtempSync(path.join(os.tmpdir(), "airlock-bench-mcp-"));
const ctx = { signal: new AbortController().signal } as unknown as ToolContext;

function stats(xs: number[]) {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
  return { n: s.length, median_ms: +q(0.5).toFixed(3), p90_ms: +q(0.9).toFixed(3), min_ms: +s[0]!.toFixed(3), max_ms: +s[s.length - 1]!.toFixed(3) };
}

function manager(policy: SandboxPolicyName): McpManager {
  const config = Config.parse({ mcp_servers: { ev: { command: "node", args: [EVERYTHING, "stdio"], sandbox: policy } } });
  return new McpManager({ config, defaultWorkspace: ws, log: () => {} });
}

async function echoDef(m: McpManager): Promise<ToolDef> {
  const defs = await m.sources()[0]!.list();
  const d = defs.find((x) => x.name === "ev__echo");
  if (!d) throw new Error("server-everything did not list echo");
  return d;
}

/** SDK client alone: connect + tools/list (start), then warm echo calls. */
async function sdkAlone(): Promise<{ start: number[]; call: number[] }> {
  const start: number[] = [];
  for (let i = 0; i < starts; i++) {
    const t0 = performance.now();
    const c = new Client({ name: "bench", version: "0" });
    await c.connect(new StdioClientTransport({ command: "node", args: [EVERYTHING, "stdio"], stderr: "ignore" }));
    await c.listTools();
    start.push(performance.now() - t0);
    await c.close();
  }
  const c = new Client({ name: "bench", version: "0" });
  await c.connect(new StdioClientTransport({ command: "node", args: [EVERYTHING, "stdio"], stderr: "ignore" }));
  await c.listTools();
  for (let i = 0; i < 20; i++) await c.callTool({ name: "echo", arguments: { message: "warm" } });
  const call: number[] = [];
  for (let i = 0; i < calls; i++) {
    const t0 = performance.now();
    await c.callTool({ name: "echo", arguments: { message: "hi" } });
    call.push(performance.now() - t0);
  }
  await c.close();
  return { start, call };
}

/** airlock's manager: start (spawn under the policy + initialize + tools/list), then warm direct calls. */
async function airlockDirect(policy: SandboxPolicyName): Promise<{ start: number[]; call: number[] }> {
  const start: number[] = [];
  for (let i = 0; i < starts; i++) {
    const m = manager(policy);
    const t0 = performance.now();
    await echoDef(m);
    start.push(performance.now() - t0);
    await m.close();
  }
  const m = manager(policy);
  const d = await echoDef(m);
  for (let i = 0; i < 20; i++) await d.execute({ message: "warm" }, ctx);
  const call: number[] = [];
  for (let i = 0; i < calls; i++) {
    const t0 = performance.now();
    await d.execute({ message: "hi" }, ctx);
    call.push(performance.now() - t0);
  }
  await m.close();
  return { start, call };
}

/**
 * From a script: batches of `k` sequential `tools.ev__echo` calls in one QuickJS script; per-call
 * latency = (batch time − the same script with no calls) / k. The tool call here goes straight to the
 * ToolDef (argument parse + execute), i.e. without the gate's inspectors.
 */
async function fromScript(policy: SandboxPolicyName): Promise<number[]> {
  const m = manager(policy);
  const d = await echoDef(m);
  const pool = new ScriptPool({ workers: 1, memoryMb: 64, stackKb: 512 });
  const limits = { cpuTimeoutMs: 30_000, wallTimeoutMs: 120_000, maxToolCalls: 100_000, maxLogBytes: 65536, maxResultBytes: 65536 };
  const callTool = async (name: string, args: unknown): Promise<ToolOutcome> => {
    if (name !== d.name) return { ok: false, error: { code: "unknown_tool", message: name } };
    try {
      return { ok: true, result: await d.execute(d.schema.parse(args), ctx) };
    } catch (e) {
      return { ok: false, error: toAirlockError(e, "tool_failed").toJSON() };
    }
  };
  const k = 20;
  const script = (n: number) => `for (let i = 0; i < ${n}; i++) await tools.ev__echo({ message: "hi" }); return ${n};`;
  const time = async (n: number) => {
    const t0 = performance.now();
    const r = await pool.run(script(n), limits, callTool);
    if (!r.ok) throw new Error(`script failed: ${r.error.message}`);
    return performance.now() - t0;
  };
  for (let i = 0; i < 5; i++) (await time(k), await time(0));
  const per: number[] = [];
  for (let b = 0; b < Math.max(5, Math.round(calls / k)); b++) {
    const empty = await time(0);
    const full = await time(k);
    per.push(Math.max(0, full - empty) / k);
  }
  await pool.close();
  await m.close();
  return per;
}

try {
  const sdk = await sdkAlone();
  const ro = await airlockDirect("read-only");
  const full = await airlockDirect("danger-full-access");
  const script = await fromScript("read-only");
  const s = stats(script);
  const sd = stats(sdk.call);
  console.log(
    JSON.stringify(
      {
        bench: "mcp",
        server: "@modelcontextprotocol/server-everything (node), tool echo",
        calls,
        starts,
        call_latency: {
          from_script_read_only: { ...s, method: "batches of 20 calls in one script, minus an empty script, / 20 (no gate inspectors)" },
          airlock_client_read_only: stats(ro.call),
          airlock_client_unconfined: stats(full.call),
          sdk_client_alone_unconfined: sd,
          script_overhead_vs_sdk_median_ms: +(s.median_ms - sd.median_ms).toFixed(3),
        },
        start_time: {
          airlock_read_only_bwrap: stats(ro.start),
          airlock_unconfined: stats(full.start),
          sdk_client_alone: stats(sdk.start),
          what: "spawn + initialize + tools/list, until the tool list is in hand",
        },
      },
      null,
      2,
    ),
  );
} finally {
  rmSync(ws, { recursive: true, force: true });
}
