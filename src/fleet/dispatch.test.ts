/**
 * Turn dispatch and the event relay (SPEC §5.8, `serve --role`) on both engines: the real SQLite store
 * database and a throwaway PostgreSQL cluster with two pools standing for two processes. Claims race for
 * real (concurrent statements from both pools); no expectation depends on timing.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { AirlockError } from "../errors.ts";
import type { Sql } from "../store/sql.ts";
import { openFleetPg, openFleetSqlite, type FleetDb as Db } from "../../test/fixtures/fleet-db.ts";
import { pgAvailable } from "../../test/pg-cluster.ts";
import { Bus, type AnyEvent } from "../bus/bus.ts";
import { TurnDispatcher, TurnQueue, type TurnRequest } from "./dispatch.ts";
import { Leases } from "./leases.ts";
import { pgListener, type Listener } from "./notify.ts";
import { EventRelay } from "./relay.ts";

const T = 120_000;
const TTL = 15_000;

async function until(cond: () => boolean | Promise<boolean>, ms = 60_000, what = "condition"): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(20);
  }
}

let nextId = 0;
const uid = (p: string) => `${p}_${process.pid}_${++nextId}`;

async function seedSession(sql: Sql, id: string): Promise<void> {
  const now = new Date().toISOString();
  await sql.run("INSERT INTO sessions (id, workspace, mode, sandbox, provider, created_at, updated_at) VALUES (?, '/w', 'smart', 'workspace-write', 'scripted', ?, ?)", [id, now, now]);
}

function suite(name: string, open: () => Promise<Db>, skip: string | null) {
  describe.skipIf(skip !== null)(`turn dispatch and relay on ${name}`, () => {
    let db: Db;
    beforeAll(async () => {
      db = await open();
    }, 180_000);
    afterAll(async () => {
      await db?.close();
    }, 60_000);

    const queues = () => [new TurnQueue(db.a, { workerId: "w-a", leaseTtlMs: TTL }), new TurnQueue(db.b, { workerId: "w-b", leaseTtlMs: TTL })] as const;

    test("a claim whose turn never started is swept after a lease TTL unless renewed; a swept claim cannot start; a started one is never swept", async () => {
      let clock = Date.now();
      const qa = new TurnQueue(db.a, { workerId: "w-a", leaseTtlMs: TTL, now: () => clock });
      const qb = new TurnQueue(db.b, { workerId: "w-b", leaseTtlMs: TTL, now: () => clock });
      const enqueueAndClaim = async () => {
        const s = uid("sess");
        await seedSession(db.a, s);
        const r = await qb.enqueue(s, uid("turn"), "m", 600_000);
        expect(await qa.claim(r.id)).not.toBeNull();
        return r;
      };
      const renewed = await enqueueAndClaim();
      const dead = await enqueueAndClaim();
      const started = await enqueueAndClaim();
      expect(await qa.markStarted(started.id)).toBe(true);
      // another worker cannot renew or start a claim that is not its own
      expect(await qb.renewClaim(renewed.id)).toBe(false);
      expect(await qb.markStarted(renewed.id)).toBe(false);
      clock += TTL - 1_000;
      expect(await qa.renewClaim(renewed.id)).toBe(true);
      expect(await qb.sweepUnstarted()).toEqual([]);
      clock += 2_000; // dead's claim is now older than a TTL; renewed's is not
      const swept = await qb.sweepUnstarted();
      expect(swept.map((r) => r.id)).toEqual([dead.id]);
      expect(swept[0]!.sessionId).toBe(dead.sessionId);
      expect((await qa.get(dead.id))!.state).toBe("done");
      // the claimer comes back: its turn must not start, and it cannot renew
      expect(await qa.markStarted(dead.id)).toBe(false);
      expect(await qa.renewClaim(dead.id)).toBe(false);
      // the started request stays running however old its claim
      clock += 10 * TTL;
      expect((await qb.sweepUnstarted()).map((r) => r.id)).toEqual([renewed.id]);
      expect((await qa.get(started.id))!.state).toBe("running");
      expect(await qa.finish(started.id)).toBe(true);
    }, T);

    test("two claimers racing over 40 queued requests: every request is claimed exactly once", async () => {
      const [qa, qb] = queues();
      const ids: string[] = [];
      for (let i = 0; i < 40; i++) {
        const s = uid("sess");
        await seedSession(db.a, s);
        ids.push((await qa.enqueue(s, uid("turn"), `m${i}`, 60_000)).id);
      }
      const got: TurnRequest[] = [];
      const claimer = async (q: TurnQueue) => {
        for (;;) {
          const r = await q.claimNext();
          if (!r) return;
          got.push(r);
        }
      };
      await Promise.all([claimer(qa), claimer(qb), claimer(qa), claimer(qb), claimer(qa), claimer(qb)]);
      const mine = got.filter((r) => ids.includes(r.id));
      expect(mine.map((r) => r.id).sort()).toEqual([...ids].sort());
      expect(new Set(mine.map((r) => r.id)).size).toBe(ids.length);
      for (const r of mine) expect(r.state).toBe("running");
      // nothing is left to claim, and a claimed request cannot be claimed again by id
      expect(await qa.claim(ids[0]!)).toBeNull();
      expect(await qb.claim(ids[0]!)).toBeNull();
    }, T);

    test("claim by id against expiry, racing: exactly one wins", async () => {
      const [qa, qb] = queues();
      for (let i = 0; i < 10; i++) {
        const s = uid("sess");
        await seedSession(db.a, s);
        const r = await qa.enqueue(s, uid("turn"), "m", 60_000);
        const [claimed, expired] = await Promise.all([qb.claim(r.id), qa.expire(r.id)]);
        expect((claimed !== null ? 1 : 0) + (expired ? 1 : 0)).toBe(1);
        expect((await qa.get(r.id))!.state).toBe(claimed ? "running" : "expired");
      }
    }, T);

    test("a session with a queued request, a fresh claim or a live lease refuses another (session_busy); stored rows are untouched", async () => {
      const [qa, qb] = queues();
      const s = uid("sess");
      await seedSession(db.a, s);
      const first = await qa.enqueue(s, uid("turn"), "one", 60_000);
      const again = await qb.enqueue(s, uid("turn"), "two", 60_000).catch((e: unknown) => e);
      expect(again).toBeInstanceOf(AirlockError);
      expect((again as AirlockError).code).toBe("session_busy");
      // it says the turn is queued, not running (nothing has claimed it)
      expect((again as AirlockError).message).toContain("already has a turn queued");
      expect((await qa.get(first.id))!.message).toBe("one");
      // claimed: still busy until its lease shows and ends
      expect((await qb.claim(first.id))?.id).toBe(first.id);
      expect(((await qa.enqueue(s, uid("turn"), "three", 60_000).catch((e: unknown) => e)) as AirlockError).code).toBe("session_busy");
      expect(await qb.finish(first.id)).toBe(true);
      expect(await qb.finish(first.id)).toBe(false);
      // a live lease (a turn started on an `all` node) refuses too
      const leases = new Leases(db.b, { workerId: "w-b", ttlMs: TTL });
      const lease = await leases.acquire(s, uid("turn"));
      expect(((await qa.enqueue(s, uid("turn"), "four", 60_000).catch((e: unknown) => e)) as AirlockError).code).toBe("session_busy");
      await leases.release(lease);
      const next = await qa.enqueue(s, uid("turn"), "five", 60_000);
      expect(next.state).toBe("queued");
      // withdrawn as cancelled: not claimable afterwards
      expect(await qb.withdraw(s)).toEqual([next.id]);
      expect(await qb.claim(next.id)).toBeNull();
      expect((await qa.get(next.id))!.state).toBe("cancelled");
    }, T);

    test("withdrawTree withdraws the queued requests of a session and of its descendants, no other session's", async () => {
      const [qa, qb] = queues();
      const root = uid("sess");
      const child = uid("sess");
      const grandchild = uid("sess");
      const other = uid("sess");
      for (const s of [root, other]) await seedSession(db.a, s);
      const now = new Date().toISOString();
      await db.a.run("INSERT INTO sessions (id, workspace, mode, sandbox, provider, parent_session_id, created_at, updated_at) VALUES (?, '/w', 'smart', 'workspace-write', 'scripted', ?, ?, ?)", [child, root, now, now]);
      await db.a.run("INSERT INTO sessions (id, workspace, mode, sandbox, provider, parent_session_id, created_at, updated_at) VALUES (?, '/w', 'smart', 'workspace-write', 'scripted', ?, ?, ?)", [grandchild, child, now, now]);
      const c = await qa.enqueue(child, uid("turn"), "c", 60_000);
      const g = await qa.enqueue(grandchild, uid("turn"), "g", 60_000);
      const o = await qa.enqueue(other, uid("turn"), "o", 60_000);
      const got = await qb.withdrawTree(root);
      expect(got.sort((x, y) => x.id.localeCompare(y.id))).toEqual([{ id: c.id, sessionId: child }, { id: g.id, sessionId: grandchild }].sort((x, y) => x.id.localeCompare(y.id)));
      expect((await qa.get(c.id))!.state).toBe("cancelled");
      expect((await qa.get(g.id))!.state).toBe("cancelled");
      expect((await qa.get(o.id))!.state).toBe("queued");
      expect(await qb.withdraw(other)).toEqual([o.id]);
    }, T);

    test("a queued request past its expiry is never claimed, and no longer blocks its session", async () => {
      let clock = Date.now();
      const qa = new TurnQueue(db.a, { workerId: "w-a", leaseTtlMs: TTL, now: () => clock });
      const s = uid("sess");
      await seedSession(db.a, s);
      const old = await qa.enqueue(s, uid("turn"), "old", 1_000);
      clock += 5_000;
      expect(await qa.claim(old.id)).toBeNull();
      const fresh = await qa.enqueue(s, uid("turn"), "fresh", 60_000);
      expect((await qa.get(old.id))!.state).toBe("expired");
      expect((await qa.claim(fresh.id))?.message).toBe("fresh");
      // pruning deletes ended rows only: the expired one goes, the running one stays
      await qa.prune(clock + 1);
      expect(await qa.get(old.id)).toBeNull();
      expect((await qa.get(fresh.id))?.state).toBe("running");
    }, T);

    test("two dispatchers (one per pool) run each of 20 queued requests exactly once", async () => {
      const [qa, qb] = queues();
      const listeners: Listener[] = db.url ? [pgListener(db.url), pgListener(db.url)] : [];
      const ran = new Map<string, string[]>();
      const run = (who: string) => async (r: TurnRequest) => {
        ran.set(r.id, [...(ran.get(r.id) ?? []), who]);
        await Bun.sleep(5);
      };
      const da = new TurnDispatcher({ queue: qa, pollMs: 200, run: run("a"), ...(listeners[0] ? { listener: listeners[0] } : {}) });
      const dbb = new TurnDispatcher({ queue: qb, pollMs: 200, run: run("b"), ...(listeners[1] ? { listener: listeners[1] } : {}) });
      await da.start();
      await dbb.start();
      try {
        const ids: string[] = [];
        for (let i = 0; i < 20; i++) {
          const s = uid("sess");
          await seedSession(db.a, s);
          ids.push((await (i % 2 ? qa : qb).enqueue(s, uid("turn"), "m", 60_000)).id);
        }
        await until(() => ids.every((id) => ran.has(id)), 60_000, "every request to run");
        await Bun.sleep(300); // a second run would show within a few polls
        for (const id of ids) expect(ran.get(id)!.length).toBe(1);
      } finally {
        await da.close();
        await dbb.close();
        for (const l of listeners) await l.close();
      }
    }, T);

    test("a dispatcher runs at most maxRunning claimed requests at once, leaves the rest queued, and claims them as runs end", async () => {
      const [qa] = queues();
      const gates: (() => void)[] = [];
      let running = 0;
      let most = 0;
      const done: string[] = [];
      const d = new TurnDispatcher({
        queue: qa,
        pollMs: 100,
        maxRunning: 2,
        run: async (r) => {
          running++;
          most = Math.max(most, running);
          await new Promise<void>((release) => gates.push(release));
          running--;
          done.push(r.id);
        },
      });
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        const s = uid("sess");
        await seedSession(db.a, s);
        ids.push((await qa.enqueue(s, uid("turn"), "m", 60_000)).id);
      }
      await d.start();
      try {
        await until(() => gates.length === 2, 60_000, "two runs");
        await Bun.sleep(500); // several polls: still two
        expect(d.running).toBe(2);
        const states = await Promise.all(ids.map(async (id) => (await qa.get(id))!.state));
        expect(states.filter((x) => x === "queued").length).toBe(3);
        // release runs one by one: the next is claimed each time, never more than two at once
        for (let released = 0; released < 5; released++) {
          await until(() => gates.length > 0, 60_000, "a run to release");
          gates.shift()!();
          await until(() => done.length === released + 1, 60_000, "the run to end");
        }
        expect(done.sort()).toEqual([...ids].sort());
        expect(most).toBe(2);
      } finally {
        for (const g of gates) g();
        await d.close();
      }
    }, T);

    test("the relay: events (one over 8000 bytes) reach the other node's bus in order with the same shape; cards are left to the feed; its own rows are not read back; a cancel arrives", async () => {
      const busA = new Bus();
      const busB = new Bus();
      const listeners: Listener[] = db.url ? [pgListener(db.url), pgListener(db.url)] : [];
      const cancels: string[] = [];
      const ra = new EventRelay({ sql: db.a, bus: busA, workerId: "w-a", pollMs: 300, onCancel: () => {}, ...(listeners[0] ? { listener: listeners[0] } : {}) });
      const rb = new EventRelay({ sql: db.b, bus: busB, workerId: "w-b", pollMs: 300, onCancel: (sid, why) => cancels.push(`${sid}:${why}`), ...(listeners[1] ? { listener: listeners[1] } : {}) });
      await ra.start();
      await rb.start();
      try {
        const s = uid("sess");
        const t = uid("turn");
        const onB: AnyEvent[] = [];
        busB.subscribe(s, (ev) => onB.push(ev));
        const onA: AnyEvent[] = [];
        busA.subscribe(s, (ev) => onA.push(ev));
        const big = "x".repeat(20_000);
        busA.publish(s, "turn_started", { session_id: s, turn_id: t });
        busA.publish(s, "delta", { session_id: s, turn_id: t, text: "hel" });
        busA.publish(
          s,
          "message",
          { id: uid("msg"), session_id: s, turn_id: t, role: "assistant", content: big, created_at: new Date().toISOString() } as never,
          { persisted: true },
        );
        busA.publish(s, "action_resolved", { request_id: uid("act"), decision: "deny" });
        busA.publish(s, "turn_finished", { session_id: s, turn_id: t, status: "completed", answer: "done" });
        await until(() => onB.some((e) => e.type === "turn_finished"), 60_000, "turn_finished on B");
        expect(onB.map((e) => e.type)).toEqual(["turn_started", "delta", "message", "turn_finished"]);
        const sent = onA.filter((e) => e.type !== "action_resolved");
        for (let i = 0; i < sent.length; i++) {
          expect(onB[i]!.data).toEqual(sent[i]!.data);
          expect(onB[i]!.persisted).toBe(sent[i]!.persisted);
        }
        expect((onB[2]!.data as { content: string }).content.length).toBe(20_000);
        // B republished them, but neither echoes back to A
        await rb.idle();
        await ra.idle();
        await Bun.sleep(700);
        await ra.idle();
        expect(onA.length).toBe(5);
        await ra.sendCancel(s, "stop it");
        await until(() => cancels.length > 0, 60_000, "the cancel on B");
        expect(cancels).toEqual([`${s}:stop it`]);
      } finally {
        await ra.close();
        await rb.close();
        for (const l of listeners) await l.close();
      }
    }, T);

    test("the relay reads a row that committed after a higher id (another node's), once", async () => {
      const bus = new Bus();
      const listener = db.url ? pgListener(db.url) : undefined;
      const relay = new EventRelay({ sql: db.b, bus, workerId: "w-reader", pollMs: 200, onCancel: () => {}, ...(listener ? { listener } : {}) });
      await relay.start();
      try {
        const s = uid("sess");
        const got: string[] = [];
        bus.subscribe(s, (ev) => got.push((ev.data as { text: string }).text));
        const row = (text: string) => JSON.stringify([{ kind: "event", session_id: s, type: "delta", data: { session_id: s, turn_id: "t", text }, persisted: false }]);
        const top = Number((await db.a.get<{ m: number | null }>("SELECT MAX(id) AS m FROM fleet_relay"))?.m ?? 0);
        // node X's row with the higher id commits first and is read ...
        await db.a.run("INSERT INTO fleet_relay (id, worker_id, items, created_at) VALUES (?, 'w-x', ?, ?)", [top + 2_000_000, row("high"), Date.now()]);
        await until(() => got.includes("high"), 60_000, "the higher row");
        // ... then node Y's row with a lower id (taken before, committed later): still read, within the lookback
        await db.a.run("INSERT INTO fleet_relay (id, worker_id, items, created_at) VALUES (?, 'w-y', ?, ?)", [top + 1_000_000, row("late"), Date.now()]);
        await until(() => got.includes("late"), 60_000, "the late lower row");
        await Bun.sleep(600); // a few more polls: neither is published twice
        await relay.idle();
        expect(got).toEqual(["high", "late"]);
      } finally {
        await relay.close();
        await listener?.close();
      }
    }, T);
  });
}

suite("SQLite", openFleetSqlite, null);
suite("PostgreSQL", openFleetPg, pgAvailable());
