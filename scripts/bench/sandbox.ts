/**
 * @module scripts/bench/sandbox
 * Script sandbox figures, printed as JSON: trivial script end to end on a warm pool (median, p99),
 * guest→host→guest tool calls per second (sequential and concurrent) through the real gate and over
 * the raw bridge, and the resident memory of an idle pool of 2 workers. Targets: p50 ≤ 1 ms, ≥ 10k calls/s.
 */
import { z } from "zod";
import { Inflight } from "../../src/session/inflight.ts";
import { Cards } from "../../src/card/pending.ts";
import { Bus } from "../../src/bus/bus.ts";
import { Config } from "../../src/config/schema.ts";
import { GateContext } from "../../src/gate/context.ts";
import { Gate } from "../../src/gate/gate.ts";
import { Permits } from "../../src/gate/permits.ts";
import { newId } from "../../src/ids.ts";
import { Store } from "../../src/store/store.ts";
import { defineTool, type ToolDef, type ToolOutcome } from "../../src/tool/tool.ts";
import { ScriptPool, type RunOptions } from "../../src/script/pool.ts";

const LIMITS: RunOptions = { cpuTimeoutMs: 30_000, wallTimeoutMs: 60_000, maxToolCalls: 1_000_000, maxLogBytes: 1 << 20, maxResultBytes: 1 << 20 };
const N_CALLS = 10_000;

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}
const round = (x: number, d = 3): number => Math.round(x * 10 ** d) / 10 ** d;

/** A real gate (autonomous mode, one read-only echo tool) with a live turn; returns a callTool running through it. */
async function gatedCaller(): Promise<{ run<T>(fn: () => Promise<T>): Promise<T>; callTool(name: string, args: unknown): Promise<ToolOutcome>; close(): void }> {
  const store = await Store.open(":memory:");
  const bus = new Bus();
  const inflight = new Inflight();
  const cards = new Cards({ store, bus, inflight, approverToken: "bench-approver-token-0123456789" });
  const echo: ToolDef = defineTool({ name: "bench__echo", description: "echo", schema: z.unknown(), readOnly: true, async execute(a) { return a; } });
  const registry = { resolve: async (n: string) => (n === echo.name ? echo : undefined), list: async () => [echo], listCached: () => [echo] };
  const config = Config.parse({ mode: "autonomous" });
  const gate = new Gate({ store, bus, inflight, registry, cards, permits: new Permits(64), configFor: () => config });
  const s = await store.createSession({ parent_session_id: null, workspace: process.cwd(), mode: "autonomous", sandbox: "workspace-write", privacy: "public", headless: false, provider: "scripted" });
  const turnId = newId("turn");
  inflight.register(s.id, turnId);
  const parentCallId = newId("call");
  return {
    run: (fn) => GateContext.provide({ sessionId: s.id, turnId, callId: parentCallId }, fn),
    callTool: (name, args) => gate.call({ name, args, callId: newId("call"), fromScript: true, parentCallId }),
    close: () => {
      inflight.unregister(s.id, turnId);
      cards.close();
      store.close();
    },
  };
}

async function callsPerSecond(pool: ScriptPool, callTool: (n: string, a: unknown) => Promise<ToolOutcome>, name: string, concurrent: boolean, wrap: <T>(f: () => Promise<T>) => Promise<T>): Promise<number> {
  const code = concurrent
    ? `const ps = []; for (let i = 0; i < ${N_CALLS}; i++) ps.push(tools.${name}({ i })); await Promise.all(ps); return ${N_CALLS};`
    : `for (let i = 0; i < ${N_CALLS}; i++) await tools.${name}({ i }); return ${N_CALLS};`;
  const rates: number[] = [];
  for (let k = 0; k < 3; k++) {
    const t0 = performance.now();
    const r = await wrap(() => pool.run(code, LIMITS, callTool));
    const ms = performance.now() - t0;
    if (!r.ok) throw new Error(`bench script failed: ${JSON.stringify(r.error)}`);
    rates.push((N_CALLS / ms) * 1000);
  }
  return Math.round(rates.sort((a, b) => a - b)[1]!);
}

const rawEcho = async (_n: string, args: unknown): Promise<ToolOutcome> => ({ ok: true, result: args });
const direct = <T>(f: () => Promise<T>): Promise<T> => f();

const pool = new ScriptPool({ workers: 2, memoryMb: 64, stackKb: 512 });
for (let i = 0; i < 200; i++) await pool.run("return 1", LIMITS, rawEcho); // warm both workers and the JIT
const times: number[] = [];
for (let i = 0; i < 2000; i++) {
  const t0 = performance.now();
  await pool.run("return 1 + 1", LIMITS, rawEcho);
  times.push(performance.now() - t0);
}
times.sort((a, b) => a - b);

const gated = await gatedCaller();
const out = {
  trivial_script_ms: { p50: round(pct(times, 50)), p99: round(pct(times, 99)), runs: times.length },
  tool_calls_per_s_gate: {
    sequential: await callsPerSecond(pool, gated.callTool, "bench__echo", false, gated.run),
    concurrent: await callsPerSecond(pool, gated.callTool, "bench__echo", true, gated.run),
  },
  tool_calls_per_s_raw_bridge: {
    sequential: await callsPerSecond(pool, rawEcho, "echo", false, direct),
    concurrent: await callsPerSecond(pool, rawEcho, "echo", true, direct),
  },
  calls_per_script: N_CALLS,
  targets: { trivial_p50_ms: 1, sequential_calls_per_s: 10_000 },
};
gated.close();
await pool.close();

// Resident memory of an idle pool of 2 workers, measured in a fresh process (this one has run benchmarks).
const child = Bun.spawn([process.execPath, "-e", `
  const { ScriptPool } = await import(${JSON.stringify(new URL("../../src/script/pool.ts", import.meta.url).pathname)});
  const base = process.memoryUsage().rss;
  const pool = new ScriptPool({ workers: 2, memoryMb: 64, stackKb: 512 });
  await Promise.all([0, 1, 2, 3].map(() => pool.run("return 1", { cpuTimeoutMs: 1000, wallTimeoutMs: 1000, maxToolCalls: 1, maxLogBytes: 1, maxResultBytes: 100 }, async () => ({ ok: true, result: 1 }))));
  Bun.gc(true);
  await new Promise((r) => setTimeout(r, 200));
  console.log(JSON.stringify({ base: base, idle: process.memoryUsage().rss }));
  await pool.close();
`], { stdout: "pipe" });
const mem = JSON.parse(await new Response(child.stdout).text()) as { base: number; idle: number };
await child.exited;
console.log(JSON.stringify({ ...out, idle_pool_2_workers_rss_mb: { process_before_pool: round(mem.base / 2 ** 20, 1), with_idle_pool: round(mem.idle / 2 ** 20, 1), pool_share: round((mem.idle - mem.base) / 2 ** 20, 1) } }, null, 2));
