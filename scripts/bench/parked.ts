/**
 * @module scripts/bench/parked
 * Scripts per second while 50 other scripts are parked on cards at once (prints JSON): 50 scripts in a
 * session in `approve` mode each call a tool through the real gate and wait on its card; meanwhile
 * scripts of another (autonomous) session run on the same pool of 2 workers, each with one gated call.
 * Also: the RSS the 50 parked scripts add (each holds its own QuickJS instance while it waits).
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
import { defineTool, type ToolDef } from "../../src/tool/tool.ts";
import { ScriptPool, type RunOptions } from "../../src/script/pool.ts";

const PARKED = 50;
const RUNS = 2000;
const LIMITS: RunOptions = { cpuTimeoutMs: 30_000, wallTimeoutMs: 600_000, maxToolCalls: 1000, maxLogBytes: 1 << 16, maxResultBytes: 1 << 20 };
const round = (x: number, d = 1): number => Math.round(x * 10 ** d) / 10 ** d;

const store = await Store.open(":memory:");
const bus = new Bus();
const inflight = new Inflight();
const cards = new Cards({ store, bus, inflight, approverToken: "bench-approver-token-0123456789" });
const echo: ToolDef = defineTool({ name: "bench__echo", description: "echo", schema: z.unknown(), readOnly: true, async execute(a) { return a; } });
const registry = { resolve: async (n: string) => (n === echo.name ? echo : undefined), list: async () => [echo], listCached: () => [echo] };
const gate = new Gate({ store, bus, inflight, registry, cards, permits: new Permits(64), configFor: (s) => Config.parse({ mode: s.mode }) });

/** A session with a live turn; `run` provides its calling context, `call` goes through the gate. */
async function session(mode: "approve" | "autonomous") {
  const s = await store.createSession({ parent_session_id: null, workspace: process.cwd(), mode, sandbox: "workspace-write", privacy: "public", headless: false, provider: "scripted" });
  const turnId = newId("turn");
  inflight.register(s.id, turnId);
  const parentCallId = newId("call");
  return {
    id: s.id,
    run: <T>(fn: () => Promise<T>): Promise<T> => GateContext.provide({ sessionId: s.id, turnId, callId: parentCallId }, fn),
    call: (name: string, args: unknown) => gate.call({ name, args, callId: newId("call"), fromScript: true, parentCallId }),
  };
}

async function throughput(pool: ScriptPool, s: Awaited<ReturnType<typeof session>>): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < RUNS; i++) {
    const r = await s.run(() => pool.run(`return await tools.bench__echo({ i: ${i} })`, LIMITS, s.call));
    if (!r.ok) throw new Error(`bench script failed: ${JSON.stringify(r.error)}`);
  }
  return Math.round((RUNS / (performance.now() - t0)) * 1000);
}

const pool = new ScriptPool({ workers: 2, memoryMb: 64, stackKb: 512 });
const busy = await session("autonomous");
for (let i = 0; i < 200; i++) await busy.run(() => pool.run("return await tools.bench__echo(1)", LIMITS, busy.call)); // warm-up
const idleRate = await throughput(pool, busy);

Bun.gc(true);
const rssBefore = process.memoryUsage().rss;
const waiting = await session("approve");
let parkedNow = 0;
let allParked!: () => void;
const reached = new Promise<void>((r) => (allParked = r));
const off = bus.subscribe(waiting.id, (ev) => {
  if (ev.type === "action_required" && ++parkedNow === PARKED) allParked();
});
const parked = Array.from({ length: PARKED }, (_, i) => waiting.run(() => pool.run(`return await tools.bench__echo({ parked: ${i} })`, LIMITS, waiting.call)));
await reached;
Bun.gc(true);
const rssParked = process.memoryUsage().rss;
const parkedRate = await throughput(pool, busy);

for (const card of cards.listForSession(waiting.id)) await cards.resolve(card.request_id, "allow_once", { sessionId: waiting.id });
const ends = await Promise.all(parked);
off();
const released = ends.filter((r) => r.ok).length;
cards.close();
await pool.close();
store.close();

console.log(
  JSON.stringify(
    {
      bench: "parked",
      scripts_per_s: { no_parked: idleRate, with_50_parked_on_cards: parkedRate, runs: RUNS, note: "each script makes one call through the real gate (autonomous); pool of 2 workers" },
      parked_scripts: { parked: PARKED, released_ok: released, rss_added_mb: round((rssParked - rssBefore) / 2 ** 20), note: "each parked script holds its own QuickJS instance (own WASM memory) and no permit" },
    },
    null,
    2,
  ),
);
process.exit(0);
