/**
 * @module scripts/bench/notify
 * `notify:`, measured (prints JSON): latency from parking a subagent's card to a local HTTP receiver
 * getting its `card_parked` webhook (p50/p99, ms), one card at a time; and what the notifier costs the
 * parking itself: the synchronous `park` call with and without a notifier (p50, µs), the second one with a
 * notifier whose receiver never answers next to it.
 * Usage: `bun scripts/bench/notify.ts [--cards 200]`
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Config } from "../../src/config/schema.ts";
import { newId } from "../../src/ids.ts";
import { createRuntime, type Runtime } from "../../src/runtime.ts";
import { startReceiver, type Receiver } from "../../test/fixtures/webhook-receiver.ts";
import { arg } from "./args.ts";

const CARDS = Math.max(50, arg("--cards", 200));
const WARMUP = 10;

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}
const round = (x: number, d = 3) => Math.round(x * 10 ** d) / 10 ** d;

/** A runtime with `notify` config, and a root with a child whose turn is registered (cards can park). */
async function setUp(notify: unknown): Promise<{ rt: Runtime; root: string; child: string; turnId: string; dataDir: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), "airlock-bench-notify-"));
  const rt = await createRuntime({ config: Config.parse({ notify }), configDir: dataDir, dataDir, env: {}, log: () => {} });
  const base = { workspace: dataDir, mode: "smart", sandbox: "workspace-write", privacy: "public", headless: false, provider: "scripted" } as const;
  const root = await rt.store.createSession(base);
  const child = await rt.store.createSession({ ...base, parent_session_id: root.id });
  const turnId = newId("turn");
  rt.inflight.register(child.id, turnId);
  return { rt, root: root.id, child: child.id, turnId, dataDir };
}

function park(s: Awaited<ReturnType<typeof setUp>>, i: number): { t0: number; parkUs: number; id: string } {
  let id = "";
  const off = s.rt.bus.subscribe(s.child, (ev) => {
    if (ev.type === "action_required") id = ev.data.request_id;
  });
  const t0 = performance.now();
  void s.rt.cards.park({ homeSessionId: s.child, turnId: s.turnId, callId: newId("call"), tool: "developer__shell", arguments: { command: `touch f${i}` }, inspector: "mode", reason: "bench", requiresUserProof: false, ttlSeconds: 3600 });
  const parkUs = (performance.now() - t0) * 1000;
  off();
  return { t0, parkUs, id };
}

/** Park → the receiver has the webhook's body, one card at a time. */
async function parkToWebhook(): Promise<Record<string, number>> {
  const r: Receiver = startReceiver(() => 200);
  const s = await setUp({ notifiers: [{ name: "bench", on: ["card_parked"], webhook: { url: `${r.url}/hook` } }] });
  try {
    const lat: number[] = [];
    for (let i = 0; i < CARDS + WARMUP; i++) {
      const { t0, id } = await park(s, i);
      const got = await r.waitFor(i + 1);
      const last = got[i]!;
      if (last.body.request_id !== id) throw new Error(`webhook ${i} carried ${last.body.request_id}, parked ${id}`);
      if (i >= WARMUP) lat.push(last.at - t0);
      s.rt.cards.resolve(id, "deny", { sessionId: s.root });
    }
    lat.sort((a, b) => a - b);
    return { p50_ms: round(pct(lat, 50)), p99_ms: round(pct(lat, 99)), max_ms: round(lat[lat.length - 1]!), samples: lat.length };
  } finally {
    await s.rt.close();
    await r.close();
    rmSync(s.dataDir, { recursive: true, force: true });
  }
}

/** The synchronous `park` call (record, publish, the notifier's listener), with no notifier and with a hanging one. */
async function parkCost(): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  const hang: Receiver = startReceiver(() => "hang");
  for (const [name, notify] of [
    ["park_us_p50_without_notify", {}],
    ["park_us_p50_with_hanging_webhook", { notifiers: [{ on: ["card_parked"], webhook: { url: hang.url, retries: 0 }, timeout_s: 600 }] }],
  ] as const) {
    const s = await setUp(notify);
    try {
      const us: number[] = [];
      for (let i = 0; i < CARDS + WARMUP; i++) {
        const { parkUs, id } = await park(s, i);
        if (i >= WARMUP) us.push(parkUs);
        s.rt.cards.resolve(id, "deny", { sessionId: s.root });
        await new Promise((r) => setImmediate(r));
      }
      us.sort((a, b) => a - b);
      out[name] = round(pct(us, 50), 1);
    } finally {
      // the hanging deliveries are stopped at close (after the notifier's grace); do not wait 600 s for them
      const closing = s.rt.close();
      await hang.close();
      await closing;
      rmSync(s.dataDir, { recursive: true, force: true });
    }
  }
  return out;
}

const latency = await parkToWebhook();
const cost = await parkCost();
console.log(JSON.stringify({ park_to_webhook: latency, ...cost }, null, 2));
