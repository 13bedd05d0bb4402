/**
 * The fleet tables (cards as rows, leases with a fencing epoch, the sweeper, the waker) on both engines:
 * the real SQLite store database (store/db.ts migrations 1–8 plus the fleet's) and a throwaway
 * PostgreSQL cluster (test/pg-cluster.ts) with two separate pools standing for two processes.
 * Lease expiry uses an injected clock, so no test waits for a TTL.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { AirlockError } from "../errors.ts";
import type { Sql } from "../store/sql.ts";
import { openFleetPg, openFleetSqlite, type FleetDb as Db } from "../../test/fixtures/fleet-db.ts";
import { pgAvailable } from "../../test/pg-cluster.ts";
import { CardRows, type CardRow, type RowDecision } from "./card-rows.ts";
import { Leases, type Lease } from "./leases.ts";
import { pgListener } from "./notify.ts";
import { parkAndAwait } from "./park.ts";
import { CardFeed } from "./feed.ts";
import { Bus, type AnyEvent } from "../bus/bus.ts";
import { Sweeper } from "./sweeper.ts";
import { CardWaker } from "./waker.ts";

const TTL = 15_000;
/** Per-test bound (two busy cores; a PostgreSQL listener reconnects with backoff). */
const T = 120_000;


/** Resolves when `cond()` holds, checking every 20 ms; rejects after `ms` (a generous bound, not a timing claim). */
async function until(cond: () => boolean | Promise<boolean>, ms = 30_000, what = "condition"): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(20);
  }
}

/** Resolves with `p`, or rejects after `ms` (generous bound). */
function within<T>(p: Promise<T>, ms = 30_000, what = "promise"): Promise<T> {
  return Promise.race([p, Bun.sleep(ms).then(() => Promise.reject(new Error(`timed out waiting for ${what}`)))]);
}

let nextId = 0;
const uid = (p: string) => `${p}_${process.pid}_${++nextId}`;

async function seedTurn(sql: Sql, sessionId: string, turnId: string): Promise<void> {
  const now = new Date().toISOString();
  await sql.run("INSERT INTO sessions (id, workspace, mode, sandbox, provider, created_at, updated_at) VALUES (?, '/w', 'smart', 'workspace-write', 'scripted', ?, ?) ON CONFLICT (id) DO NOTHING", [
    sessionId,
    now,
    now,
  ]);
  await sql.run("INSERT INTO turns (id, session_id, status, started_at) VALUES (?, ?, 'running', ?)", [turnId, sessionId, now]);
}

const allow = (from: string): RowDecision => ({
  status: "allowed",
  outcome: { decision: "allow_once", decided_in: from },
  audit: { sessionId: from, decision: "allow_once", proof: false },
});

function suite(name: string, open: () => Promise<Db>, skip: string | null) {
  describe.skipIf(skip !== null)(`fleet on ${name}`, () => {
    let db: Db;
    let clock = Date.now();
    const now = () => clock;
    beforeAll(async () => {
      db = await open();
    }, 180_000);
    afterAll(async () => {
      await db?.close();
    }, 60_000);

    async function parked(opts: { ttlMs?: number; leases?: Leases } = {}) {
      const session = uid("ses");
      const root = uid("root");
      const turn = uid("turn");
      await seedTurn(db.a, session, turn);
      const leases = opts.leases ?? new Leases(db.a, { workerId: "A", ttlMs: TTL, now });
      const lease = await leases.acquire(session, turn);
      const rows = new CardRows(db.a, now);
      const id = uid("act");
      const row = await rows.park(lease, {
        id,
        sessionId: session,
        rootSessionId: root,
        callId: uid("call"),
        surfaces: [session, root],
        requiresUserProof: true,
        card: { request_id: id, tool: "shell", arguments: { cmd: "ls" } },
        expiresAt: clock + (opts.ttlMs ?? 3_600_000),
        auditDetail: { tool: "shell" },
      });
      return { session, root, turn, lease, leases, rows, id, row };
    }

    test("a parked card is a pending row listed at its home and its root, with its card_parked audit row", async () => {
      const { session, root, id, row, rows } = await parked();
      expect(row.status).toBe("pending");
      expect(row.surfaces).toEqual([session, root]);
      expect(row.requiresUserProof).toBe(true);
      expect(row.card).toEqual({ request_id: id, tool: "shell", arguments: { cmd: "ls" } });
      const other = new CardRows(db.b, now);
      expect((await other.listPending(session)).map((r) => r.id)).toEqual([id]);
      expect((await other.listPending(root)).map((r) => r.id)).toEqual([id]);
      expect((await rows.listAllPending()).map((r) => r.id)).toContain(id);
      const audit = await db.b.all<{ kind: string; outcome: string }>("SELECT kind, outcome FROM audit WHERE request_id = ?", [id]);
      expect(audit).toEqual([{ kind: "card_parked", outcome: "recorded" }]);
    }, T);

    test("the first decision wins under concurrency; every other gets already_decided (409) and an audit row", async () => {
      const { root, id } = await parked();
      const a = new CardRows(db.a, now);
      const b = new CardRows(db.b, now);
      const tries = Array.from({ length: 10 }, (_, i) =>
        (i % 2 ? a : b).decide(id, i % 3 ? allow(root) : { status: "denied", outcome: { decision: "deny", decided_in: root }, audit: { sessionId: root, decision: "deny", proof: false } }),
      );
      const results = await Promise.all(tries);
      const won = results.filter((r) => r.ok);
      expect(won.length).toBe(1);
      const lost = results.filter((r) => !r.ok);
      expect(lost.map((r) => (r.ok ? "" : r.error.code))).toEqual(Array(9).fill("already_decided"));
      const row = (await b.get(id))!;
      expect(row.status).toBe(won[0]!.ok ? won[0]!.row.status : "pending");
      const audit = await db.a.all<{ outcome: string }>("SELECT outcome FROM audit WHERE request_id = ? AND kind = 'card_decision' ORDER BY id", [id]);
      expect(audit.filter((r) => r.outcome === "accepted").length).toBe(1);
      expect(audit.filter((r) => r.outcome === "refused").length).toBe(9);
    }, T);

    test("a decision past the card's expiry is refused expired and marks the row expired; an unknown card is not_found", async () => {
      const { root, id, rows } = await parked({ ttlMs: 1000 });
      clock += 2000;
      const r = await new CardRows(db.b, now).decide(id, allow(root));
      expect(r.ok ? "" : r.error.code).toBe("expired");
      expect((await rows.get(id))!.status).toBe("expired");
      const n = await rows.decide(uid("nope"), allow(root));
      expect(n.ok ? "" : n.error.code).toBe("not_found");
    }, T);

    test("a stale epoch is refused: after a takeover the old holder can neither renew, park, nor pass check", async () => {
      const { session, turn, lease, leases, id } = await parked();
      const b = new Leases(db.b, { workerId: "B", ttlMs: TTL, now });
      // live: the session is busy for another worker
      const turn2 = uid("turn");
      await seedTurn(db.b, session, turn2);
      await expect(b.acquire(session, turn2)).rejects.toMatchObject({ code: "session_busy" });
      expect(await leases.check(turn, lease.epoch)).toBe(true);
      // A stops renewing; past its expiry B takes the session over with the next epoch
      clock += TTL + 1;
      expect(await leases.check(turn, lease.epoch)).toBe(false);
      const taken = await b.acquire(session, turn2);
      expect(taken.epoch).toBe(lease.epoch + 1);
      expect(await b.check(turn2, taken.epoch)).toBe(true);
      expect(await b.check(turn2, lease.epoch)).toBe(false);
      // the old turn was lost in the takeover's transaction
      expect((await db.b.get<{ status: string }>("SELECT status FROM turns WHERE id = ?", [turn]))!.status).toBe("interrupted");
      expect((await new CardRows(db.b, now).get(id))!.status).toBe("worker_lost");
      // A comes back: every act is refused
      clock -= TTL; // even with A's clock behind, its epoch is stale
      await expect(leases.renew(lease)).rejects.toMatchObject({ code: "lease_lost" });
      expect(await leases.check(turn, lease.epoch)).toBe(false);
      const rows = new CardRows(db.a, now);
      await expect(
        rows.park(lease, { id: uid("act"), sessionId: session, rootSessionId: session, callId: "c", surfaces: [session], requiresUserProof: false, card: {}, expiresAt: clock + 1000 }),
      ).rejects.toMatchObject({ code: "lease_lost" });
      expect(await leases.release(lease)).toBe(false);
      expect(await b.release(taken)).toBe(true);
      clock += TTL;
    }, T);

    test("concurrent acquires of one session from both processes: exactly one wins, the others get session_busy", async () => {
      const session = uid("ses");
      const turns = Array.from({ length: 8 }, () => uid("turn"));
      for (const t of turns) await seedTurn(db.a, session, t);
      const la = new Leases(db.a, { workerId: "A", ttlMs: TTL, now });
      const lb = new Leases(db.b, { workerId: "B", ttlMs: TTL, now });
      const results = await Promise.allSettled(turns.map((t, i) => (i % 2 ? la : lb).acquire(session, t)));
      const won = results.filter((r) => r.status === "fulfilled");
      expect(won.length).toBe(1);
      expect(results.filter((r) => r.status === "rejected").map((r) => (r as PromiseRejectedResult).reason.code)).toEqual(Array(7).fill("session_busy"));
      const lease = (won[0] as PromiseFulfilledResult<Lease>).value;
      expect(lease.epoch).toBe(1);
      expect(await la.check(lease.turnId, 1)).toBe(true);
    }, T);

    test("concurrent takeovers of one expired lease: exactly one wins with the next epoch; the old turn is lost once", async () => {
      const { session, turn, id } = await parked();
      clock += TTL + 1;
      const turns = Array.from({ length: 6 }, () => uid("turn"));
      for (const t of turns) await seedTurn(db.a, session, t);
      const la = new Leases(db.a, { workerId: "A2", ttlMs: TTL, now });
      const lb = new Leases(db.b, { workerId: "B2", ttlMs: TTL, now });
      const results = await Promise.allSettled(turns.map((t, i) => (i % 2 ? la : lb).acquire(session, t)));
      const won = results.filter((r) => r.status === "fulfilled") as PromiseFulfilledResult<Lease>[];
      expect(won.map((r) => r.value.epoch)).toEqual([2]);
      expect(results.filter((r) => r.status === "rejected").map((r) => (r as PromiseRejectedResult).reason.code)).toEqual(Array(5).fill("session_busy"));
      expect((await db.a.get<{ status: string }>("SELECT status FROM turns WHERE id = ?", [turn]))!.status).toBe("interrupted");
      const lostAudit = await db.a.all("SELECT id FROM audit WHERE request_id = ? AND decision = 'worker_lost'", [id]);
      expect(lostAudit.length).toBe(1);
    }, T);

    test("renew extends a live lease; release frees the session; a released lease cannot renew", async () => {
      const { session, lease, leases } = await parked();
      clock += TTL - 1;
      const renewed = await leases.renew(lease);
      expect(renewed.expiresAt).toBe(clock + TTL);
      clock += TTL - 1; // past the first expiry, within the renewed one
      expect(await leases.check(lease.turnId, lease.epoch)).toBe(true);
      expect((await leases.live(session))?.turnId).toBe(lease.turnId);
      expect(await leases.release(renewed)).toBe(true);
      expect(await leases.live(session)).toBeNull();
      await expect(leases.renew(renewed)).rejects.toMatchObject({ code: "lease_lost" });
    }, T);

    test("the heartbeat renews until stopped, and reports a lost lease once", async () => {
      // a clock that moves 1 ms per reading: the lease (300 ms) outlives any stall of a busy machine between beats
      let t = clock;
      const real = new Leases(db.a, { workerId: "A", ttlMs: 300, now: () => ++t });
      const session = uid("ses");
      const turn = uid("turn");
      await seedTurn(db.a, session, turn);
      const lease = await real.acquire(session, turn);
      let lostCount = 0;
      const hb = real.heartbeat(lease, () => lostCount++);
      await until(() => hb.current().expiresAt > lease.expiresAt, 30_000, "a renewal");
      // take the lease away behind the holder's back (as a sweeper would)
      await db.b.run("DELETE FROM inflight WHERE session_id = ?", [session]);
      await until(() => lostCount === 1, 30_000, "the lost lease to be reported");
      hb.stop();
      expect(lostCount).toBe(1);
    }, T);

    test("the sweeper interrupts a turn whose lease expired and ends its pending cards worker_lost (audited); a late answer gets already_decided", async () => {
      const { turn, lease, leases, id, root } = await parked();
      const decided = await parked(); // a decided card of another turn stays as it is
      await new CardRows(db.b, now).decide(decided.id, allow(decided.root));
      const sweeper = new Sweeper(db.b, { now });
      // not yet expired: nothing happens
      expect((await sweeper.sweep()).turns).not.toContain(turn);
      clock += TTL + 1;
      const swept = await sweeper.sweep();
      expect(swept.turns).toContain(turn);
      expect(swept.cards).toContain(id);
      expect(swept.cards).not.toContain(decided.id);
      expect((await db.a.get<{ status: string; error: string }>("SELECT status, error FROM turns WHERE id = ?", [turn]))!).toMatchObject({ status: "interrupted" });
      const row = (await new CardRows(db.a, now).get(id))!;
      expect(row.status).toBe("worker_lost");
      expect(row.decision).toMatchObject({ decision: "worker_lost" });
      expect((await new CardRows(db.a, now).get(decided.id))!.status).toBe("allowed");
      const audit = await db.a.get<{ decision: string; code: string }>("SELECT decision, code FROM audit WHERE request_id = ? AND outcome = 'recorded' AND kind = 'card_decision'", [id]);
      expect(audit).toEqual({ decision: "worker_lost", code: "worker_lost" });
      // sweeping again does nothing; the old holder cannot renew; a late answer is refused
      expect((await sweeper.sweep()).turns).not.toContain(turn);
      await expect(leases.renew(lease)).rejects.toBeInstanceOf(AirlockError);
      const late = await new CardRows(db.b, now).decide(id, allow(root));
      expect(late.ok ? "" : late.error.code).toBe("already_decided");
    }, T);

    test("the sweeper also ends a pending card whose lease is gone (parked as its lease was swept): worker_lost", async () => {
      const { turn, id, session } = await parked();
      // the lease vanishes under the card (the race the sweep closes); the turn is still marked running
      await db.b.run("DELETE FROM inflight WHERE session_id = ?", [session]);
      const swept = await new Sweeper(db.b, { now }).sweep();
      expect(swept.cards).toContain(id);
      expect(swept.turns).toContain(turn);
      expect((await new CardRows(db.a, now).get(id))!.status).toBe("worker_lost");
      expect((await db.a.get<{ status: string }>("SELECT status FROM turns WHERE id = ?", [turn]))!.status).toBe("interrupted");
    }, T);

    test("a waiter with no listener is woken by the poll, with the decided row", async () => {
      const { id, root, rows } = await parked();
      const waker = new CardWaker(rows, { pollMs: 50 });
      await waker.start();
      try {
        const woke = waker.wait(id);
        await waker.idle();
        expect(waker.size).toBe(1);
        await new CardRows(db.b, now).decide(id, allow(root));
        const row = await within(woke, 30_000, "the poll to wake the card");
        expect(row.status).toBe("allowed");
        expect(row.decision).toMatchObject({ decision: "allow_once", decided_in: root });
        expect(waker.woken.poll).toBe(1);
      } finally {
        await waker.close();
      }
    }, T);

    test("a waiter on a card whose worker was lost wakes with worker_lost (fail closed)", async () => {
      const { id, rows } = await parked();
      const waker = new CardWaker(rows, { pollMs: 50 });
      await waker.start();
      try {
        const woke = waker.wait(id);
        clock += TTL + 1;
        await new Sweeper(db.b, { now }).sweep();
        expect((await within(woke, 30_000, "the lost card to wake")).status).toBe("worker_lost");
      } finally {
        await waker.close();
      }
    }, T);

    test("a waiter on a card past its expiry wakes with expired", async () => {
      const { id, rows } = await parked({ ttlMs: 500 });
      const waker = new CardWaker(rows, { pollMs: 50 });
      await waker.start();
      try {
        const woke = waker.wait(id);
        await waker.idle();
        clock += 1000;
        expect((await within(woke, 30_000, "the expired card to wake")).status).toBe("expired");
      } finally {
        await waker.close();
      }
    }, T);

    async function freshTurn(workerId = "A") {
      const session = uid("ses");
      const turn = uid("turn");
      await seedTurn(db.a, session, turn);
      const leases = new Leases(db.a, { workerId, ttlMs: TTL, now });
      const lease = await leases.acquire(session, turn);
      const rows = new CardRows(db.a, now);
      const waker = new CardWaker(rows, { pollMs: 50 });
      await waker.start();
      const input = (id = uid("act")) => ({
        id,
        sessionId: session,
        rootSessionId: session,
        callId: uid("call"),
        surfaces: [session],
        requiresUserProof: false,
        card: { request_id: id },
        expiresAt: clock + 3_600_000,
      });
      return { session, turn, leases, lease, rows, waker, input };
    }

    test("parkAndAwait: an allow from the other process lets the call run once; a deny refuses it denied", async () => {
      const t = await freshTurn();
      try {
        const first = t.input();
        const v = parkAndAwait(t, t.lease, first);
        await until(async () => (await new CardRows(db.b, now).get(first.id)) !== null, 30_000, "the card row");
        await new CardRows(db.b, now).decide(first.id, allow(t.session));
        expect(await within(v, 30_000, "the allow")).toMatchObject({ run: true });
        const second = t.input();
        const w = parkAndAwait(t, t.lease, second);
        await until(async () => (await new CardRows(db.b, now).get(second.id)) !== null, 30_000, "the card row");
        await new CardRows(db.b, now).decide(second.id, {
          status: "denied",
          outcome: { decision: "deny", reason: "not now" },
          audit: { sessionId: t.session, decision: "deny", proof: false },
        });
        const denied = await within(w, 30_000, "the deny");
        expect(denied.run ? "" : `${denied.error.code}: ${denied.error.message}`).toMatch(/^denied: .*not now/);
      } finally {
        await t.waker.close();
      }
    }, T);

    test("parkAndAwait fails closed: an allow arriving after the worker lost its lease does not run (lease_lost)", async () => {
      const t = await freshTurn();
      try {
        const card = t.input();
        const v = parkAndAwait(t, t.lease, card);
        await until(async () => (await new CardRows(db.b, now).get(card.id)) !== null, 30_000, "the card row");
        // the worker is paused past its lease; someone answers before any sweeper ran
        clock += TTL + 1;
        const d = await new CardRows(db.b, now).decide(card.id, allow(t.session));
        expect(d.ok).toBe(true);
        const verdict = await within(v, 30_000, "the late allow");
        expect(verdict.run ? "ran" : verdict.error.code).toBe("lease_lost");
        // and nothing more can be parked under the stale lease
        await expect(parkAndAwait(t, t.lease, t.input())).rejects.toMatchObject({ code: "lease_lost" });
      } finally {
        await t.waker.close();
      }
    }, T);

    test("parkAndAwait: aborting the turn withdraws the card (cancelled), and a later answer gets already_decided", async () => {
      const t = await freshTurn();
      try {
        const card = t.input();
        const ac = new AbortController();
        const v = parkAndAwait(t, t.lease, card, ac.signal);
        await until(async () => (await new CardRows(db.b, now).get(card.id)) !== null, 30_000, "the card row");
        ac.abort();
        const verdict = await within(v, 30_000, "the withdrawal");
        expect(verdict.run ? "ran" : verdict.error.code).toBe("cancelled");
        const late = await new CardRows(db.b, now).decide(card.id, allow(t.session));
        expect(late.ok ? "" : late.error.code).toBe("already_decided");
      } finally {
        await t.waker.close();
      }
    }, T);

    /** A feed on a fresh bus ("node B"), recording what each of `sessions` sees. */
    async function feedOn(sessions: string[], opts: { listen: boolean }) {
      // earlier tests' cards carry short payloads, not full cards: end them so the feed sees only this test's
      await db.b.run("UPDATE cards SET status = 'cancelled' WHERE status = 'pending' AND card NOT LIKE ?", ['%"user_only":true%']);
      const bus = new Bus();
      const seen: AnyEvent[] = [];
      for (const s of sessions) bus.subscribe(s, (e) => seen.push(e));
      const listener = opts.listen ? pgListener(db.url!) : undefined;
      const feed = new CardFeed({ rows: new CardRows(db.b, now), bus, pollMs: opts.listen ? 3_600_000 : 50, skipWorker: "B", ...(listener ? { listener } : {}) });
      await feed.start();
      await feed.idle();
      return {
        seen,
        feed,
        async close() {
          await feed.close();
          await listener?.close();
        },
      };
    }

    /** Parks a card whose payload is a valid `action_required` card, under worker A's lease. */
    async function parkedCard(workerId = "A") {
      const session = uid("ses");
      const root = uid("root");
      const turn = uid("turn");
      await seedTurn(db.a, session, turn);
      const leases = new Leases(workerId === "A" ? db.a : db.b, { workerId, ttlMs: TTL, now });
      const lease = await leases.acquire(session, turn);
      const id = uid("act");
      const card = {
        request_id: id,
        home_session_id: session,
        tool: "developer__shell",
        arguments: { command: "rm -rf build" },
        inspector: "hook",
        reason: "asks",
        requires_user_proof: false,
        expires_at: new Date(clock + 3_600_000).toISOString(),
        user_only: true as const,
      };
      return { session, root, turn, lease, id, card };
    }

    for (const listen of name === "PostgreSQL" ? [false, true] : [false]) {
      test(`the feed publishes a card parked by another worker to its home and root, then its end, once each (${listen ? "NOTIFY, poll off" : "poll"})`, async () => {
        const p = await parkedCard();
        const f = await feedOn([p.session, p.root], { listen });
        try {
          await new CardRows(db.a, now).park(p.lease, { id: p.id, sessionId: p.session, rootSessionId: p.root, callId: "c1", surfaces: [p.session, p.root], requiresUserProof: false, card: p.card, expiresAt: clock + 3_600_000 });
          await until(() => f.seen.filter((e) => e.type === "action_required").length === 2, 30_000, "action_required on both surfaces");
          const req = f.seen.filter((e) => e.type === "action_required");
          expect(req.map((e) => [e.session_id, (e.data as { surfaced_in: string }).surfaced_in])).toEqual([
            [p.session, p.session],
            [p.root, p.root],
          ]);
          expect(req[0]!.data).toMatchObject({ request_id: p.id, tool: "developer__shell" });
          await new CardRows(db.b, now).decide(p.id, allow(p.root));
          await until(() => f.seen.filter((e) => e.type === "action_resolved").length === 2, 30_000, "action_resolved on both surfaces");
          expect(f.seen.find((e) => e.type === "action_resolved")!.data).toEqual({ request_id: p.id, decision: "allow_once", decided_in: p.root });
          await f.feed.idle();
          expect(f.seen.length).toBe(4);
        } finally {
          await f.close();
        }
      }, T);
    }

    test("the feed shows a card already pending when it starts, and its worker_lost end as cancelled; it skips its own worker's cards", async () => {
      const p = await parkedCard();
      await new CardRows(db.a, now).park(p.lease, { id: p.id, sessionId: p.session, rootSessionId: p.root, callId: "c1", surfaces: [p.session, p.root], requiresUserProof: false, card: p.card, expiresAt: clock + 3_600_000 });
      // B's own card, parked on a session of its own
      const mine = await parkedCard("B");
      await new CardRows(db.b, now).park(mine.lease, { id: mine.id, sessionId: mine.session, rootSessionId: mine.session, callId: "c2", surfaces: [mine.session], requiresUserProof: false, card: mine.card, expiresAt: clock + 3_600_000 });
      const f = await feedOn([p.session, p.root, mine.session], { listen: false });
      try {
        await until(() => f.seen.filter((e) => e.type === "action_required").length === 2, 30_000, "the snapshot's card");
        clock += TTL + 1;
        await new Sweeper(db.b, { now }).sweep();
        await until(() => f.seen.filter((e) => e.type === "action_resolved").length === 2, 30_000, "the lost card's end");
        expect(f.seen.find((e) => e.type === "action_resolved")!.data).toEqual({ request_id: p.id, decision: "cancelled" });
        expect(f.seen.filter((e) => e.session_id === mine.session)).toEqual([]);
      } finally {
        await f.close();
      }
    }, T);

    if (name === "PostgreSQL") {
      test("a NOTIFY from process B's decision wakes process A's waiter (the poll is off)", async () => {
        const { id, root, rows } = await parked();
        const listener = pgListener(db.url!);
        const waker = new CardWaker(rows, { listener, pollMs: 3_600_000 });
        await waker.start();
        try {
          const woke = waker.wait(id);
          await waker.idle(); // the first read saw it pending
          expect(waker.size).toBe(1);
          await new CardRows(db.b, now).decide(id, allow(root));
          const row = await within(woke, 30_000, "the notification");
          expect(row.status).toBe("allowed");
          expect(waker.woken).toEqual({ notify: 1, catchup: 0, poll: 0 });
        } finally {
          await waker.close();
          await listener.close();
        }
      }, T);

      test("after pg_terminate_backend of the listener's backend, a decision made meanwhile still wakes the waiter (catch-up or poll) and the listener resubscribes", async () => {
        const { id, root, rows } = await parked();
        const listener = pgListener(db.url!);
        const waker = new CardWaker(rows, { listener, pollMs: 500 });
        await waker.start();
        try {
          const woke = waker.wait(id);
          await waker.idle();
          const killed = await db.b.all<{ ok: boolean }>(
            "SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE query ILIKE 'LISTEN%' AND pid <> pg_backend_pid() AND datname = current_database()",
          );
          expect(killed.length).toBeGreaterThanOrEqual(1);
          await new CardRows(db.b, now).decide(id, allow(root));
          const row = await within(woke, 30_000, "the waiter to wake after the listener was killed");
          expect(row.status).toBe("allowed");
          expect(waker.woken.notify + waker.woken.catchup + waker.woken.poll).toBe(1);
          await until(() => waker.listens >= 2, 60_000, "the listener to resubscribe");
        } finally {
          await waker.close();
          await listener.close();
        }
      }, T);
    }
  });
}

suite("SQLite", openFleetSqlite, null);
suite("PostgreSQL", openFleetPg, pgAvailable());
