/**
 * @module scripts/bench/fleet-dispatch
 * Turn dispatch and the event relay on PostgreSQL (SPEC §5.8, `serve --role`), prints JSON. Two pools on one
 * throwaway database stand for an `api` node and a `worker` node, each with its own `LISTEN` connection:
 * - `enqueue_to_claim`: from the api side starting `TurnQueue.enqueue` (insert + pg_notify, one transaction)
 *   to the worker's `TurnDispatcher` running the claimed request (notification → `UPDATE … RETURNING`);
 * - `relay_publish_to_republish`: from a `bus.publish` on the worker's bus to the same event republished on
 *   the api node's bus (flush tick 25 ms + insert + notification + read), one event at a time;
 * - `relay_burst`: 2,000 deltas published at once on the worker's bus, until the last is on the api bus
 *   (rows written, ms, events per second).
 * p50/p99/max in ms over `--samples` (default 300, after 20 warm-up). Load average printed with them.
 * Usage: `bun scripts/bench/fleet-dispatch.ts [--samples N]` (listed in all.ts).
 */
import { loadavg } from "node:os";
import { Bus } from "../../src/bus/bus.ts";
import { TurnDispatcher, TurnQueue, type TurnRequest } from "../../src/fleet/dispatch.ts";
import { pgListener } from "../../src/fleet/notify.ts";
import { EventRelay } from "../../src/fleet/relay.ts";
import { migrateSql } from "../../src/store/migrate.ts";
import { PG_MIGRATIONS } from "../../src/store/migrations-pg.ts";
import { pgSql } from "../../src/store/sql-pg.ts";
import { pgAvailable, startPgCluster } from "../../test/pg-cluster.ts";
import { arg } from "./args.ts";

const SAMPLES = arg("--samples", 300);
const WARMUP = 20;
const at = () => performance.timeOrigin + performance.now();
const round = (x: number, d = 2): number => Math.round(x * 10 ** d) / 10 ** d;
const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const pct = (p: number) => s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
  return { p50_ms: round(pct(50)), p99_ms: round(pct(99)), max_ms: round(s[s.length - 1]!), samples: s.length };
};

const why = pgAvailable();
if (why) {
  console.log(JSON.stringify({ bench: "fleet-dispatch", skipped: why }));
  process.exit(0);
}
const cluster = await startPgCluster();
try {
  const url = await cluster.createDatabase("bench_dispatch");
  const apiSql = pgSql(url, { max: 4 });
  const workerSql = pgSql(url, { max: 4 });
  await migrateSql(apiSql, PG_MIGRATIONS);
  const apiListener = pgListener(url);
  const workerListener = pgListener(url);
  const now = new Date().toISOString();

  // enqueue → claim
  const queue = new TurnQueue(apiSql, { workerId: "bench-api", leaseTtlMs: 15_000 });
  const waiting = new Map<string, (t: number) => void>();
  const dispatcher = new TurnDispatcher({
    queue: new TurnQueue(workerSql, { workerId: "bench-worker", leaseTtlMs: 15_000 }),
    listener: workerListener,
    pollMs: 2000,
    run: async (req: TurnRequest) => {
      const t = at();
      await workerSql.run("UPDATE turn_requests SET state = 'done' WHERE id = ?", [req.id]);
      waiting.get(req.id)?.(t);
    },
  });
  await dispatcher.start();
  const claims: number[] = [];
  for (let i = 0; i < WARMUP + SAMPLES; i++) {
    const sid = `ses_bench_${i}`;
    await apiSql.run("INSERT INTO sessions (id, workspace, mode, sandbox, provider, created_at, updated_at) VALUES (?, '/w', 'smart', 'workspace-write', 'scripted', ?, ?)", [sid, now, now]);
    const id = `turn_bench_${i}`;
    const ran = new Promise<number>((r) => waiting.set(id, r));
    const t0 = at();
    await queue.enqueue(sid, id, "m", 60_000);
    const t1 = await ran;
    if (i >= WARMUP) claims.push(t1 - t0);
  }
  await dispatcher.close();

  // relay, one event at a time
  const workerBus = new Bus(1024, false);
  const apiBus = new Bus(1024, false);
  const wr = new EventRelay({ sql: workerSql, bus: workerBus, workerId: "bench-worker", listener: workerListener, pollMs: 2000, onCancel: () => {} });
  const ar = new EventRelay({ sql: apiSql, bus: apiBus, workerId: "bench-api", listener: apiListener, pollMs: 2000, onCancel: () => {} });
  await wr.start();
  await ar.start();
  let arrived: ((text: string) => void) | null = null;
  apiBus.subscribeAll((ev) => {
    if (ev.type === "delta") arrived?.(ev.data.text);
  });
  const relay: number[] = [];
  for (let i = 0; i < WARMUP + SAMPLES; i++) {
    const got = new Promise<void>((r) => (arrived = (text) => text === `d${i}` && r()));
    const t0 = at();
    workerBus.publish("ses_relay", "delta", { session_id: "ses_relay", turn_id: "turn_relay", text: `d${i}` });
    await got;
    if (i >= WARMUP) relay.push(at() - t0);
  }

  // relay, a burst
  const N = 2000;
  const rowsBefore = wr.counts.written;
  const last = new Promise<void>((r) => (arrived = (text) => text === `b${N - 1}` && r()));
  const b0 = at();
  for (let i = 0; i < N; i++) workerBus.publish("ses_burst", "delta", { session_id: "ses_burst", turn_id: "turn_burst", text: `b${i}` });
  await last;
  const burstMs = at() - b0;
  await wr.close();
  await ar.close();
  await apiListener.close();
  await workerListener.close();
  await apiSql.close();
  await workerSql.close();

  console.log(
    JSON.stringify(
      {
        bench: "fleet-dispatch",
        enqueue_to_claim: stats(claims),
        relay_publish_to_republish: stats(relay),
        relay_burst: { events: N, rows: wr.counts.written - rowsBefore, ms: round(burstMs), events_per_s: Math.round((N / burstMs) * 1000) },
        loadavg: loadavg().map((x) => round(x)),
      },
      null,
      2,
    ),
  );
} finally {
  cluster.stop();
}
