/**
 * @module scripts/bench/fleet-cards
 * Cards across processes on PostgreSQL (SPEC §5.8), prints JSON: a worker process A parks a card row
 * under its lease and waits (LISTEN wake-up, poll every 2 s as the safety net); this process B decides
 * it (one transaction: conditional UPDATE + audit row; the wake-up comes from the `cards` trigger).
 * Measured per card: from B starting the decision to A's call resuming (`decide_to_resume`), B's
 * decision transaction alone (`decide_commit`), from B's commit acknowledged to A's call resuming
 * (`commit_to_resume`, every card: the "A wakes within p99 ≤ 5 ms"), and `stages` for cards woken by their notification: B's
 * commit → the notification arriving on A → A's re-read done → the call resuming. p50/p99/max in ms
 * over `--cards` (default 1,000, after 20 warm-up), one card at a time. Times are `performance.timeOrigin + performance.now()` on one machine. Starts a throwaway
 * PostgreSQL cluster (test/pg-cluster.ts); the worker A talks to it through its own connections.
 * Usage: `bun scripts/bench/fleet-cards.ts [--cards N]` (listed in all.ts).
 */
import { loadavg } from "node:os";
import { CardRows } from "../../src/fleet/card-rows.ts";
import { Leases } from "../../src/fleet/leases.ts";
import { pgListener, type Listener } from "../../src/fleet/notify.ts";
import { parkAndAwait } from "../../src/fleet/park.ts";
import { CardWaker } from "../../src/fleet/waker.ts";
import { migrateSql } from "../../src/store/migrate.ts";
import { PG_MIGRATIONS } from "../../src/store/migrations-pg.ts";
import { pgSql } from "../../src/store/sql-pg.ts";
import { pgAvailable, startPgCluster } from "../../test/pg-cluster.ts";

const WARMUP = 20;
const at = () => performance.timeOrigin + performance.now();
const round = (x: number, d = 2): number => Math.round(x * 10 ** d) / 10 ** d;
const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const pct = (p: number) => s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
  return { p50_ms: round(pct(50)), p99_ms: round(pct(99)), max_ms: round(s[s.length - 1]!), samples: s.length };
};

/** Worker A: parks `n` cards one after another, printing `parked <id>` and, when the call may run, `resumed <id> <time>`. */
async function worker(url: string, n: number): Promise<void> {
  const sql = pgSql(url, { max: 4 });
  const raw = pgListener(url);
  // stage times per card: the notification's arrival and the end of the waker's re-read
  const notified = new Map<string, number>();
  const reread = new Map<string, number>();
  const listener: Listener = {
    listen: (channel, onPayload, onListen) =>
      raw.listen(
        channel,
        (id) => {
          // the last one: the park sends one too, before the decision's
          if (id.startsWith("act_bench_")) notified.set(id, at());
          onPayload(id);
        },
        onListen,
      ),
    close: () => raw.close(),
  };
  const rows = new CardRows(sql);
  const getMany = rows.getMany.bind(rows);
  rows.getMany = async (ids) => {
    const out = await getMany(ids);
    const t = at();
    for (const r of out) if (r.status !== "pending" && !reread.has(r.id)) reread.set(r.id, t);
    return out;
  };
  const leases = new Leases(sql, { workerId: `bench-A-${process.pid}`, ttlMs: 15_000 });
  const waker = new CardWaker(rows, { listener, pollMs: 2000 });
  await waker.start();
  const session = "ses_bench";
  const turn = `turn_bench_${process.pid}`;
  await sql.run("INSERT INTO turns (id, session_id, status, started_at) VALUES (?, ?, 'running', ?)", [turn, session, new Date().toISOString()]);
  const lease = await leases.acquire(session, turn);
  const hb = leases.heartbeat(lease, () => {
    console.error("bench worker: lease lost");
    process.exit(1);
  });
  for (let i = 0; i < n; i++) {
    const id = `act_bench_${i}`;
    const v = parkAndAwait({ rows, waker, leases }, hb.current(), {
      id,
      sessionId: session,
      rootSessionId: session,
      callId: `call_${i}`,
      surfaces: [session],
      requiresUserProof: false,
      card: { request_id: id, tool: "bench__echo" },
      expiresAt: Date.now() + 600_000,
    });
    // parkAndAwait inserts the row first; tell B once it is there
    while (!(await rows.get(id))) await Bun.sleep(0);
    process.stdout.write(`parked ${id}\n`);
    const verdict = await v;
    const t = at();
    if (!verdict.run) throw new Error(`card ${id} refused: ${verdict.error.code}`);
    process.stdout.write(`resumed ${id} ${t} ${notified.get(id) ?? NaN} ${reread.get(id) ?? NaN}\n`);
  }
  hb.stop();
  await leases.release(hb.current());
  await waker.close();
  await listener.close();
  await sql.close();
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  if (argv[0] === "--worker") return await worker(argv[1]!, Number(argv[2]));
  const i = argv.indexOf("--cards");
  const cards = i >= 0 ? Number(argv[i + 1]) : 1000;
  if (!(cards > 0)) throw new Error("--cards wants a positive integer");
  const why = pgAvailable();
  if (why) {
    console.log(JSON.stringify({ skipped: why }));
    return;
  }
  const cluster = await startPgCluster();
  try {
    const url = await cluster.createDatabase();
    const sql = pgSql(url, { max: 4 });
    await migrateSql(sql, PG_MIGRATIONS);
    const now = new Date().toISOString();
    await sql.run("INSERT INTO sessions (id, workspace, mode, sandbox, provider, created_at, updated_at) VALUES ('ses_bench', '/w', 'smart', 'workspace-write', 'scripted', ?, ?)", [now, now]);
    const rows = new CardRows(sql);
    const total = cards + WARMUP;
    const proc = Bun.spawn([process.execPath, import.meta.path, "--worker", url, String(total)], { stdout: "pipe", stderr: "inherit" });
    const started = new Map<string, number>();
    const committed = new Map<string, number>();
    const resume: number[] = [];
    const commit: number[] = [];
    /** B's commit acknowledged → A's call resuming, every card (also those woken by the poll or catch-up). */
    const wake: number[] = [];
    const stage = { delivery: [] as number[], reread: [] as number[], verdict: [] as number[] };
    let seen = 0;
    let buf = "";
    const dec = new TextDecoder();
    for await (const chunk of proc.stdout) {
      buf += dec.decode(chunk, { stream: true });
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        const [what, id, t, tn, tr] = line.split(" ");
        if (what === "parked") {
          const t0 = at();
          started.set(id!, t0);
          const r = await rows.decide(id!, { status: "allowed", outcome: { decision: "allow_once", decided_in: "ses_bench" }, audit: { sessionId: "ses_bench", decision: "allow_once", proof: false } });
          if (!r.ok) throw new Error(`decision refused: ${r.error.code}`);
          const t1 = at();
          committed.set(id!, t1);
          if (seen >= WARMUP) commit.push(t1 - t0);
        } else if (what === "resumed") {
          if (seen >= WARMUP) {
            resume.push(Number(t) - started.get(id!)!);
            wake.push(Number(t) - committed.get(id!)!);
            // a card woken by the poll or catch-up has no notification time: left out of the stages
            if (Number.isFinite(Number(tn)) && Number.isFinite(Number(tr))) {
              stage.delivery.push(Number(tn) - committed.get(id!)!);
              stage.reread.push(Number(tr) - Number(tn));
              stage.verdict.push(Number(t) - Number(tr));
            }
          }
          seen++;
        }
      }
    }
    const code = await proc.exited;
    if (code !== 0) throw new Error(`the worker process exited ${code}`);
    await sql.close();
    console.log(
      JSON.stringify(
        {
          decide_to_resume: stats(resume),
          decide_commit: stats(commit),
          commit_to_resume: stats(wake),
          stages: {
            commit_to_notification: stats(stage.delivery),
            notification_to_reread: stats(stage.reread),
            reread_to_resume: stats(stage.verdict),
          },
          note: "two processes, one PostgreSQL 15 on loopback; A wakes by LISTEN/NOTIFY (poll 2 s as safety net); one card at a time",
          load_average: loadavg().map((x) => round(x)),
        },
        null,
        2,
      ),
    );
  } finally {
    cluster.stop();
  }
}

await main();
