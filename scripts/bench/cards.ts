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
 * Usage: `bun scripts/bench/cards.ts [--cards 100000] [--floor-cards 1000] [--decisions 5000] [--pairs 3]`
 */
import { Inflight } from "../../src/session/inflight.ts";
import { Cards } from "../../src/card/pending.ts";
import { Bus } from "../../src/bus/bus.ts";
import { newId } from "../../src/ids.ts";
import { Store } from "../../src/store/store.ts";

const arg = (name: string, dflt: number): number => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
};
const CARDS = arg("--cards", 100_000);
const FLOOR_CARDS = arg("--floor-cards", 1_000);
/** Decisions on each side: the same count on both (at most the floor's parked cards), so both sides do the same work. */
const DECISIONS = Math.min(arg("--decisions", 5_000), FLOOR_CARDS, CARDS);
const PAIRS = arg("--pairs", 3);
/** Issue 20: 100,000 parked cards at ≤ 1.5 KB each. */
const TARGET_BYTES = 1536;

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const round = (x: number, d = 1): number => Math.round(x * 10 ** d) / 10 ** d;

interface Side {
  bytes_per_card: number;
  decisions_per_s: number;
  cpu_us_per_decision: number;
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
  cards.close();
  await Promise.allSettled(parks);
  await store.close();
  return { bytes_per_card: bytes, decisions_per_s: (some.length / ms) * 1000, cpu_us_per_decision: (cpu.user + cpu.system) / some.length };
}

async function pairs(audit: boolean): Promise<{ full: Side; floor: Side; ratio: number }> {
  const full: Side[] = [];
  const floor: Side[] = [];
  const ratios: number[] = [];
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
  }
  const med = (xs: Side[]): Side => ({
    bytes_per_card: Math.round(median(xs.map((x) => x.bytes_per_card))),
    decisions_per_s: Math.round(median(xs.map((x) => x.decisions_per_s))),
    cpu_us_per_decision: round(median(xs.map((x) => x.cpu_us_per_decision))),
  });
  return { full: med(full), floor: med(floor), ratio: round(median(ratios), 2) };
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
        [`with_${CARDS}_parked`]: { per_s: withAudit.full.decisions_per_s, cpu_us: withAudit.full.cpu_us_per_decision },
        [`floor_with_${FLOOR_CARDS}_parked`]: { per_s: withAudit.floor.decisions_per_s, cpu_us: withAudit.floor.cpu_us_per_decision },
        slowdown: withAudit.ratio,
        note: "slowdown = floor rate ÷ rate with the full table (1.0 = not slowed); each decision writes one audit row",
      },
      without_audit: {
        [`with_${CARDS}_parked`]: { per_s: withoutAudit.full.decisions_per_s, cpu_us: withoutAudit.full.cpu_us_per_decision },
        [`floor_with_${FLOOR_CARDS}_parked`]: { per_s: withoutAudit.floor.decisions_per_s, cpu_us: withoutAudit.floor.cpu_us_per_decision },
        slowdown: withoutAudit.ratio,
      },
      pairs: PAIRS,
      decisions_per_side: DECISIONS,
    },
    null,
    2,
  ),
);
process.exit(0);
