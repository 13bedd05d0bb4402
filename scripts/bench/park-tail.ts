/**
 * @module scripts/bench/park-tail
 * Where the slow parks' time goes: the park → root SSE loop of `floors.ts` (a child's card, the root's SSE client over
 * loopback HTTP, each card denied before the next), with each park cut into stages — before the `card_parked` audit
 * write, the write itself, up to the publish, the publish, up to the client's read, the parse — and the main thread's
 * CPU time, run-queue wait and time slices over the park (`/proc/thread-self/schedstat`), and the checkpoint thread's
 * state (`ckpt`: 1 running at the start, 2 at the end, 4 × checkpoints finished during; `rs`: WAL start-overs during).
 * The WAL is first taken past the checkpoint thread's start (100 audit rows of 8 KB). Prints p50/p99/max and the TOP
 * slowest parks, and how many slow ones met a WAL start-over by the serving connection or a wait for a core. Usage:
 * `[GAP_MS=150] [JUDGED=1] bun scripts/bench/park-tail.ts [N=500] [TOP=10]` (GAP_MS: a pause before each park; JUDGED=1:
 * a `call_judged` row buffered just before each park, as when a call of the same batch ended just before).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir, loadavg } from "node:os";
import { openSync, readFileSync, readSync, writeSync } from "node:fs";
const sched = () => readFileSync("/proc/thread-self/schedstat", "utf8").split(" ").map(Number);
const MARK = process.env.MARK === "1";
const JUDGED = process.env.JUDGED === "1";
import { join } from "node:path";
import { createParser } from "eventsource-parser";
import type { Cards } from "../../src/card/pending.ts";
import { Config } from "../../src/config/schema.ts";
import { newId } from "../../src/ids.ts";
import { createRuntime } from "../../src/runtime.ts";
import { startServer } from "../../src/server/serve.ts";

const N = Number(process.argv[2] ?? 500);
const dataDir = mkdtempSync(join(tmpdir(), "airlock-park-tail-"));
const rt = await createRuntime({ config: Config.parse({ limits: { script_workers: 1 } }), configDir: dataDir, dataDir, env: {} });
const server = startServer(rt, { host: "127.0.0.1", port: 0 });
const abort = new AbortController();
const root = await rt.store.createSession({ workspace: dataDir, mode: "smart", sandbox: "workspace-write", privacy: "public", headless: false, provider: "scripted" });
const child = await rt.store.createSession({ parent_session_id: root.id, workspace: dataDir, mode: "smart", sandbox: "workspace-write", privacy: "public", headless: false, provider: "scripted" });
const turnId = newId("turn");
rt.inflight.register(child.id, turnId);
const cards = rt.cards as Cards;
let cur: Record<string, number> = {};
const store = rt.store as unknown as { audit: (...a: unknown[]) => Promise<void> };
const origAudit = store.audit.bind(store);
store.audit = async (...a: unknown[]) => {
  const k = (a[0] as { kind: string }).kind;
  if (k === "card_parked") cur.a0 = performance.now();
  await origAudit(...a);
  if (k === "card_parked") cur.a1 = performance.now();
};
const bus = rt.bus as unknown as { publish: (...a: unknown[]) => unknown };
const origPub = bus.publish.bind(bus);
bus.publish = (...a: unknown[]) => {
  if (a[1] === "action_required" && a[0] === root.id) cur.p0 = performance.now();
  const r = origPub(...a);
  if (a[1] === "action_required" && a[0] === root.id) cur.p1 = performance.now();
  return r;
};
let wake: ((ev: { event: string; data: string }) => void) | undefined;
let ready!: () => void;
const snapshot = new Promise<void>((r) => (ready = r));
const parser = createParser({
  onEvent(m) {
    if (m.event === "snapshot") ready();
    if (m.event === "action_required") wake?.({ event: m.event, data: m.data });
  },
});
const res = await fetch(`${server.url}/sessions/${root.id}/events`, { headers: { authorization: `Bearer ${rt.tokens.apiToken}` }, signal: abort.signal });
void (async () => {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    cur.r = performance.now();
    parser.feed(value);
  }
})().catch(() => {});
await snapshot;
const rows: Record<string, number>[] = [];
// the WAL header's checkpoint sequence (big-endian u32 at byte 12): it moves each time the WAL starts over, whoever starts it
const walFd = openSync(`${(rt.store.sql as unknown as { db: { filename: string } }).db.filename}-wal`, "r");
const walHead = Buffer.alloc(16);
const walSeq = () => (readSync(walFd, walHead, 0, 16, 0) === 16 ? walHead.readUInt32BE(12) : -1);
const GAP = Number(process.env.GAP_MS ?? 0);
// fill the WAL past the checkpoint thread's start (1 MB) first
for (let k = 0; k < 100; k++) await rt.store.audit({ kind: "card_parked", outcome: "recorded", detail: { pad: "x".repeat(8000) } } as never);
for (let i = 0; i < N + 20; i++) {
  if (GAP) await Bun.sleep(GAP);
  cur = {};
  const arrived = new Promise<string>((r) => (wake = (ev) => r(JSON.parse(ev.data).request_id)));
  if (MARK) writeSync(2, `MARK ${i}\n`);
  // JUDGED=1: a call of the same turn ended just before (its call_judged row is buffered, as in a batch of calls)
  if (JUDGED) (rt.store as unknown as { auditSoon: (e: unknown) => void }).auditSoon({ kind: "call_judged", outcome: "recorded", decision: "allow", session_id: child.id, home_session_id: child.id, detail: { tool: "developer__shell" } });
  const ck = (rt.store.sql as unknown as { checkpointer: { running: unknown; checkpoints: number; restarts?: number } | null }).checkpointer;
  const rs0 = ck?.restarts ?? 0;
  const k0 = ck?.checkpoints ?? 0;
  const running0 = ck?.running ? 1 : 0;
  const w0 = walSeq();
  const s0 = sched();
  const c0 = process.threadCpuUsage();
  const t0 = performance.now();
  void cards.park({ homeSessionId: child.id, turnId, callId: newId("call"), tool: "developer__shell", arguments: { command: `touch f${i}` }, inspector: "mode", reason: "bench", requiresUserProof: false, ttlSeconds: 3600 });
  const id = await arrived;
  const t1 = performance.now();
  const c1 = process.threadCpuUsage(c0);
  const s1 = sched();
  const w1 = walSeq();
  await cards.resolve(id, "deny", { sessionId: root.id });
  if (i >= 20) rows.push({ i, total: t1 - t0, toAudit: cur.a0! - t0, audit: cur.a1! - cur.a0!, toPub: cur.p0! - cur.a1!, pub: cur.p1! - cur.p0!, toRead: cur.r! - cur.p1!, toParse: t1 - cur.r!, cpu: (c1.user + c1.system) / 1000, oncpu: (s1[0]! - s0[0]!) / 1e6, runq: (s1[1]! - s0[1]!) / 1e6, slices: s1[2]! - s0[2]!, rs: (ck?.restarts ?? 0) - rs0, wal: w1 - w0, ckpt: running0 + (ck?.running ? 2 : 0) + 4 * ((ck?.checkpoints ?? 0) - k0) });
}
rows.sort((a, b) => b.total! - a.total!);
const r3 = (x: number) => Math.round(x * 1000) / 1000;
const totals = rows.map((r) => r.total!).sort((a, b) => a - b);
console.log(`load ${loadavg()[0]} N ${N} p50 ${r3(totals[Math.floor(N * 0.5)]!)} p99 ${r3(totals[Math.floor(N * 0.99)]!)} max ${r3(totals[N - 1]!)}`);
const med = (k: string) => r3(rows.map((r) => r[k]!).sort((a, b) => a - b)[Math.floor(rows.length / 2)]!);
console.log(`medians: ${["toAudit", "audit", "toPub", "pub", "toRead", "toParse", "cpu", "runq"].map((k) => `${k}=${med(k)}`).join(" ")}`);
// the slow parks (over 2 ms) by what they met: a WAL start-over by the serving connection (its header's fsync, and at the
// bound the checkpoint in the commit: \`wal\` moved, \`rs\` did not), a wait for a core (run queue over half the park), or neither
const slow = rows.filter((r) => r.total! > 2);
const byServing = slow.filter((r) => r.wal! > r.rs!).length;
const byRunq = slow.filter((r) => !(r.wal! > r.rs!) && r.runq! > r.total! / 2).length;
console.log(`over 2 ms: ${slow.length} of ${rows.length}; with a start-over by the serving connection ${byServing}; else run queue > half ${byRunq}; other ${slow.length - byServing - byRunq}; serving start-overs in all parks ${rows.filter((r) => r.wal! > r.rs!).length}, by the thread ${rows.reduce((a, r) => a + r.rs!, 0)}`);
for (const r of rows.slice(0, Number(process.argv[3] ?? 10))) console.log(Object.entries(r).map(([k, v]) => `${k}=${k === "i" ? v : r3(v)}`).join(" "));
abort.abort();
server.stop?.();
await rt.close();
rmSync(dataDir, { recursive: true, force: true });
process.exit(0);
