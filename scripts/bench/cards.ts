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
 * The first decisions are timed only once the process's other threads are quiet (`quiet_ms`: how long that took,
 * at most 5 s): the forced full collection that measures the heap frees the parks' garbage (~300 MB after 100,000
 * parks), and returning it to the OS (`madvise`, with TLB shootdowns) or a collection the parks started ran on the
 * allocator's and collector's threads for up to ~0.5 s after it; before 2026-12-02 (ninth session) that work fell in
 * the 1,000 timed decisions and made `cpu_us` and `slowdown` 2-13× at 100,000 parked (docs/performance.md).
 * `cycle_cpu_us`: process CPU (all threads: collector and allocator included) per steady-state cycle (one decision and
 * the park that replaces it), over the rounds from the third on: what a server pays per decided card, amortised.
 * `--file`: the store is a database file (WAL, its checkpoint thread) in a fresh temporary directory, as `airlock
 * serve` runs, instead of `:memory:`.
 * `thread_cpu_us`: the main thread's own CPU per decision (`clock_gettime(CLOCK_THREAD_CPUTIME_ID)` through
 * `bun:ffi`, ns resolution; the JIT and collector threads excluded), in a steady state: `--rounds` rounds
 * (default 10) of "decide the oldest `--decisions` cards (timed), park as many new ones (untimed)", so the
 * parked count stays constant; the median of the rounds from the third on. `wall_us` is the same rounds' wall time.
 * Usage: `bun scripts/bench/cards.ts [--cards 100000] [--floor-cards 1000] [--decisions 5000] [--pairs 3] [--rounds 10] [--file]`
 */
import { threadCpuNs } from "./thread-cpu.ts";
import { Inflight } from "../../src/session/inflight.ts";
import { Cards } from "../../src/card/pending.ts";
import { Bus } from "../../src/bus/bus.ts";
import { newId } from "../../src/ids.ts";
import { Store } from "../../src/store/store.ts";
import { arg } from "./args.ts";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const CARDS = arg("--cards", 100_000);
const FLOOR_CARDS = arg("--floor-cards", 1_000);
/** Decisions on each side: the same count on both (at most the floor's parked cards), so both sides do the same work. */
const DECISIONS = Math.min(arg("--decisions", 5_000), FLOOR_CARDS, CARDS);
const PAIRS = arg("--pairs", 3);
const ROUNDS = Math.max(3, arg("--rounds", 10));
const FILE = process.argv.includes("--file");

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
  /** Steady state: process CPU µs (all threads) per cycle (a decision and the park replacing it), rounds 3.. together. */
  cycle_cpu_us: number;
  /** ms waited after the heap's measure until the other threads were quiet. */
  quiet_ms: number;
}

/** Parks `n` cards in a fresh store, measures the heap they hold, then decides `DECISIONS` of them (the same count on both sides). */
/** Resolves once `done()` holds, checking between macrotasks. */
async function until(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((r) => setTimeout(r, 1));
}

/**
 * Waits until the process's threads other than this one use less than 2 ms of CPU in 100 ms (this thread sleeps
 * meanwhile), at most 5 s; resolves with the ms waited. What it waits out: the allocator returning the memory a
 * full collection freed, and collections still running (see the module's docstring).
 */
async function quiet(): Promise<number> {
  const t0 = performance.now();
  while (performance.now() - t0 < 5000) {
    const c0 = process.cpuUsage();
    const m0 = threadCpuNs();
    await Bun.sleep(100);
    const c = process.cpuUsage(c0);
    if (c.user + c.system - (threadCpuNs() - m0) / 1000 < 2000) break;
  }
  return performance.now() - t0;
}

async function side(n: number, audit: boolean): Promise<Side> {
  const dir = FILE ? mkdtempSync(join(tmpdir(), "airlock-cards-bench-")) : null;
  const store = await Store.open(dir ? join(dir, "airlock.db") : ":memory:");
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
  const quietMs = await quiet();
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
  let cycle0: NodeJS.CpuUsage | undefined;
  for (let round = 0; round < ROUNDS; round++) {
    if (round === 2) cycle0 = process.cpuUsage();
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
  const cycle = process.cpuUsage(cycle0);
  on();
  cards.close();
  await Promise.allSettled(parks);
  await store.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  return {
    bytes_per_card: bytes,
    decisions_per_s: (some.length / ms) * 1000,
    cpu_us_per_decision: (cpu.user + cpu.system) / some.length,
    thread_cpu_us: median(threadUs.slice(2)),
    wall_us: median(wallUs.slice(2)),
    cycle_cpu_us: (cycle.user + cycle.system) / ((ROUNDS - 2) * DECISIONS),
    quiet_ms: quietMs,
  };
}

async function pairs(audit: boolean): Promise<{ full: Side; floor: Side; ratio: number; steadyRatio: number; cycleRatio: number }> {
  const full: Side[] = [];
  const floor: Side[] = [];
  const ratios: number[] = [];
  const steady: number[] = [];
  const cycles: number[] = [];
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
    cycles.push(f.cycle_cpu_us / s.cycle_cpu_us);
  }
  const med = (xs: Side[]): Side => ({
    bytes_per_card: Math.round(median(xs.map((x) => x.bytes_per_card))),
    decisions_per_s: Math.round(median(xs.map((x) => x.decisions_per_s))),
    cpu_us_per_decision: round(median(xs.map((x) => x.cpu_us_per_decision))),
    thread_cpu_us: round(median(xs.map((x) => x.thread_cpu_us))),
    wall_us: round(median(xs.map((x) => x.wall_us))),
    cycle_cpu_us: round(median(xs.map((x) => x.cycle_cpu_us))),
    quiet_ms: Math.round(median(xs.map((x) => x.quiet_ms))),
  });
  return { full: med(full), floor: med(floor), ratio: round(median(ratios), 2), steadyRatio: round(median(steady), 2), cycleRatio: round(median(cycles), 2) };
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
        [`with_${CARDS}_parked`]: { per_s: withAudit.full.decisions_per_s, cpu_us: withAudit.full.cpu_us_per_decision, thread_cpu_us: withAudit.full.thread_cpu_us, wall_us: withAudit.full.wall_us, cycle_cpu_us: withAudit.full.cycle_cpu_us, quiet_ms: withAudit.full.quiet_ms },
        [`floor_with_${FLOOR_CARDS}_parked`]: { per_s: withAudit.floor.decisions_per_s, cpu_us: withAudit.floor.cpu_us_per_decision, thread_cpu_us: withAudit.floor.thread_cpu_us, wall_us: withAudit.floor.wall_us, cycle_cpu_us: withAudit.floor.cycle_cpu_us, quiet_ms: withAudit.floor.quiet_ms },
        slowdown: withAudit.ratio,
        thread_cpu_slowdown: withAudit.steadyRatio,
        cycle_cpu_slowdown: withAudit.cycleRatio,
        note: "slowdown = floor rate ÷ rate with the full table (1.0 = not slowed), first decisions once the other threads are quiet; thread_cpu_slowdown = steady-state main-thread CPU per decision, full ÷ floor; cycle_cpu_slowdown = steady-state process CPU (all threads) per decision and its replacing park, full ÷ floor; medians of pairs; each decision writes one audit row",
      },
      without_audit: {
        [`with_${CARDS}_parked`]: { per_s: withoutAudit.full.decisions_per_s, cpu_us: withoutAudit.full.cpu_us_per_decision, thread_cpu_us: withoutAudit.full.thread_cpu_us, wall_us: withoutAudit.full.wall_us, cycle_cpu_us: withoutAudit.full.cycle_cpu_us, quiet_ms: withoutAudit.full.quiet_ms },
        [`floor_with_${FLOOR_CARDS}_parked`]: { per_s: withoutAudit.floor.decisions_per_s, cpu_us: withoutAudit.floor.cpu_us_per_decision, thread_cpu_us: withoutAudit.floor.thread_cpu_us, wall_us: withoutAudit.floor.wall_us, cycle_cpu_us: withoutAudit.floor.cycle_cpu_us, quiet_ms: withoutAudit.floor.quiet_ms },
        slowdown: withoutAudit.ratio,
        thread_cpu_slowdown: withoutAudit.steadyRatio,
        cycle_cpu_slowdown: withoutAudit.cycleRatio,
      },
      store: FILE ? "file" : "memory",
      load_average: (await Bun.file("/proc/loadavg").text().catch(() => "")).split(" ").slice(0, 3).join(" "),
      pairs: PAIRS,
      decisions_per_side: DECISIONS,
    },
    null,
    2,
  ),
);
process.exit(0);
