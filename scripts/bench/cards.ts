/**
 * @module scripts/bench/cards
 * Parked cards at scale (issue 20), printed as JSON with the floor beside each figure:
 * - heap bytes per parked card with `--cards` (default 100,000) parked, after GC (target ≤ 1,536 B);
 * - decisions per second with that many parked, against the same decisions with `--floor-cards`
 *   (default 1,000) parked (the floor): the ratio is how much a full table of cards slows a decision
 *   (target: 100,000 parked cards "without slowing decisions"). Each decision writes one audit row
 *   (in-memory SQLite), as in the runtime; `without_audit` gives the same two rates with the store's
 *   audit write replaced by a no-op, to show what the cards code itself costs.
 * The two sides run in interleaved pairs (`--pairs`, default 3; which side goes first alternates); the
 * medians are kept. CPU µs per decision (process CPU, all threads) are beside the rates: they move less
 * with the machine's load than wall time.
 * Both sides decide the same number of cards: `--decisions`, at most `--floor-cards` (before 2026-12-02 the
 * full side decided 5,000 and the floor 1,000: the two rates covered different work).
 * `thread_cpu_us`: the main thread's own CPU per decision (`clock_gettime(CLOCK_THREAD_CPUTIME_ID)` through
 * `bun:ffi`, ns resolution; the JIT and collector threads excluded), in a steady state: `--rounds` rounds
 * (default 10) of "decide the oldest `--decisions` cards (timed), park as many new ones (untimed)", so the
 * parked count stays constant; the median of the rounds from the third on. `wall_us` is the same rounds' wall time.
 * Usage: `bun scripts/bench/cards.ts [--cards 100000] [--floor-cards 1000] [--decisions 5000] [--pairs 3] [--rounds 10]`
 */
import { threadCpuNs } from "./thread-cpu.ts";
import { Inflight } from "../../src/session/inflight.ts";
import { Cards } from "../../src/card/pending.ts";
import { Bus } from "../../src/bus/bus.ts";
import { newId } from "../../src/ids.ts";
import { Store } from "../../src/store/store.ts";
import { arg } from "./args.ts";

const CARDS = arg("--cards", 100_000);
const FLOOR_CARDS = arg("--floor-cards", 1_000);
/** Decisions on each side: the same count on both (at most the floor's parked cards), so both sides do the same work. */
const DECISIONS = Math.min(arg("--decisions", 5_000), FLOOR_CARDS, CARDS);
const PAIRS = arg("--pairs", 3);
const ROUNDS = Math.max(3, arg("--rounds", 10));

/** Issue 20: 100,000 parked cards at ≤ 1.5 KB each. */
const TARGET_BYTES = 1536;

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const round = (x: number, d = 1): number => Math.round(x * 10 ** d) / 10 ** d;

interface Side {
  bytes_per_card: number;
  decisions_per_s: number;
  cpu_us_per_decision: number;
  /** Steady state: main-thread CPU µs per decision, median of rounds 3.. */
  thread_cpu_us: number;
  /** Steady state: wall µs per decision, median of rounds 3.. */
  wall_us: number;
}

/** Parks `n` cards in a fresh store, measures the heap they hold, then decides `DECISIONS` of them (the same count on both sides). */
/** Resolves once `done()` holds, checking between macrotasks. */
async function until(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((r) => setTimeout(r, 1));
}

async function side(n: number, audit: boolean): Promise<Side> {
  const store = await Store.open(":memory:");
  const bus = new Bus();
  const inflight = new Inflight();
  const cards = new Cards({ store, bus, inflight, approverToken: "bench-approver-token" });
  const root = await store.createSession({ workspace: "/tmp", mode: "smart", sandbox: "workspace-write", privacy: "public", headless: false, provider: "scripted" });
  const child = await store.createSession({ parent_session_id: root.id, workspace: "/tmp", mode: "smart", sandbox: "workspace-write", privacy: "public", headless: false, provider: "scripted" });
  const turnId = newId("turn");
  inflight.register(child.id, turnId);
  const ids: string[] = [];
  const parks: Promise<unknown>[] = [];
  const off = bus.subscribe(child.id, (ev) => {
    if (ev.type === "action_required") ids.push(String(ev.data.request_id));
  });
  Bun.gc(true);
  const before = process.memoryUsage().heapUsed;
  for (let i = 0; i < n; i++) {
    parks.push(cards.park({ homeSessionId: child.id, turnId, callId: newId("call"), tool: "developer__shell", arguments: { command: `touch file-${i}.txt` }, inspector: "mode", reason: "smart mode asks before calls that change state", requiresUserProof: false, ttlSeconds: 3600 }));
  }
  // every card is parked (its row of the audit written, its event published) before the heap is read
  await until(() => ids.length === n);
  Bun.gc(true);
  const bytes = (process.memoryUsage().heapUsed - before) / n;
  off();
  if (!audit) (store as unknown as { audit: () => Promise<void> }).audit = async () => {};
  const some = ids.slice(0, DECISIONS);
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  for (const id of some) {
    const r = await cards.resolve(id, "allow_once", { sessionId: root.id });
    if (!r.ok) throw new Error(`decision refused: ${r.error.code}`);
  }
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(c0);
  // steady state: decide the oldest DECISIONS (timed), park as many (untimed), n stays parked
  let next = DECISIONS;
  const threadUs: number[] = [];
  const wallUs: number[] = [];
  const park = (i: number) =>
    parks.push(cards.park({ homeSessionId: child.id, turnId, callId: newId("call"), tool: "developer__shell", arguments: { command: `touch file-${i}.txt` }, inspector: "mode", reason: "smart mode asks before calls that change state", requiresUserProof: false, ttlSeconds: 3600 }));
  const on = bus.subscribe(child.id, (ev) => {
    if (ev.type === "action_required") ids.push(String(ev.data.request_id));
  });
  for (let k = 0; k < DECISIONS; k++) park(n + k);
  await until(() => ids.length === n + DECISIONS);
  for (let round = 0; round < ROUNDS; round++) {
    const batch = ids.slice(next, next + DECISIONS);
    next += DECISIONS;
    const c1 = threadCpuNs();
    const w1 = performance.now();
    for (const id of batch) {
      const r = await cards.resolve(id, "allow_once", { sessionId: root.id });
      if (!r.ok) throw new Error(`decision refused: ${r.error.code}`);
    }
    threadUs.push((threadCpuNs() - c1) / 1000 / batch.length);
    wallUs.push(((performance.now() - w1) * 1000) / batch.length);
    const want = ids.length + DECISIONS;
    for (let k = 0; k < DECISIONS; k++) park(n + (round + 2) * DECISIONS + k);
    await until(() => ids.length === want);
  }
  on();
  cards.close();
  await Promise.allSettled(parks);
  await store.close();
  return {
    bytes_per_card: bytes,
    decisions_per_s: (some.length / ms) * 1000,
    cpu_us_per_decision: (cpu.user + cpu.system) / some.length,
    thread_cpu_us: median(threadUs.slice(2)),
    wall_us: median(wallUs.slice(2)),
  };
}

async function pairs(audit: boolean): Promise<{ full: Side; floor: Side; ratio: number; steadyRatio: number }> {
  const full: Side[] = [];
  const floor: Side[] = [];
  const ratios: number[] = [];
  const steady: number[] = [];
  for (let k = 0; k < PAIRS; k++) {
    let f: Side, s: Side;
    if (k % 2 === 0) {
      s = await side(FLOOR_CARDS, audit);
      f = await side(CARDS, audit);
    } else {
      f = await side(CARDS, audit);
      s = await side(FLOOR_CARDS, audit);
    }
    full.push(f);
    floor.push(s);
    ratios.push(s.decisions_per_s / f.decisions_per_s);
    steady.push(f.thread_cpu_us / s.thread_cpu_us);
  }
  const med = (xs: Side[]): Side => ({
    bytes_per_card: Math.round(median(xs.map((x) => x.bytes_per_card))),
    decisions_per_s: Math.round(median(xs.map((x) => x.decisions_per_s))),
    cpu_us_per_decision: round(median(xs.map((x) => x.cpu_us_per_decision))),
    thread_cpu_us: round(median(xs.map((x) => x.thread_cpu_us))),
    wall_us: round(median(xs.map((x) => x.wall_us))),
  });
  return { full: med(full), floor: med(floor), ratio: round(median(ratios), 2), steadyRatio: round(median(steady), 2) };
}

const withAudit = await pairs(true);
const withoutAudit = await pairs(false);
console.log(
  JSON.stringify(
    {
      bench: "cards",
      parked: CARDS,
      bytes_per_card: { value: withAudit.full.bytes_per_card, target: TARGET_BYTES, met: withAudit.full.bytes_per_card <= TARGET_BYTES, note: "heap growth after GC: the card, its pending promise, TTL timer and index entries" },
      decisions: {
        [`with_${CARDS}_parked`]: { per_s: withAudit.full.decisions_per_s, cpu_us: withAudit.full.cpu_us_per_decision, thread_cpu_us: withAudit.full.thread_cpu_us, wall_us: withAudit.full.wall_us },
        [`floor_with_${FLOOR_CARDS}_parked`]: { per_s: withAudit.floor.decisions_per_s, cpu_us: withAudit.floor.cpu_us_per_decision, thread_cpu_us: withAudit.floor.thread_cpu_us, wall_us: withAudit.floor.wall_us },
        slowdown: withAudit.ratio,
        thread_cpu_slowdown: withAudit.steadyRatio,
        note: "slowdown = floor rate ÷ rate with the full table (1.0 = not slowed); thread_cpu_slowdown = steady-state main-thread CPU per decision, full ÷ floor, median of pairs; each decision writes one audit row",
      },
      without_audit: {
        [`with_${CARDS}_parked`]: { per_s: withoutAudit.full.decisions_per_s, cpu_us: withoutAudit.full.cpu_us_per_decision, thread_cpu_us: withoutAudit.full.thread_cpu_us, wall_us: withoutAudit.full.wall_us },
        [`floor_with_${FLOOR_CARDS}_parked`]: { per_s: withoutAudit.floor.decisions_per_s, cpu_us: withoutAudit.floor.cpu_us_per_decision, thread_cpu_us: withoutAudit.floor.thread_cpu_us, wall_us: withoutAudit.floor.wall_us },
        slowdown: withoutAudit.ratio,
        thread_cpu_slowdown: withoutAudit.steadyRatio,
      },
      pairs: PAIRS,
      decisions_per_side: DECISIONS,
    },
    null,
    2,
  ),
);
process.exit(0);
