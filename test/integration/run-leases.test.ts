/**
 * Runs held under a lease (SPEC §5.8, src/fleet/run-leases.ts) on SQLite and a real PostgreSQL cluster:
 * a claimed run holds a lease; the sweeper ends it `interrupted` only once its lease lapsed (injected
 * clock), and then the schedule's overlap policy lets the next fire run; a swept run's late renewal is
 * `lease_lost` and its late result changes nothing; a queued (unheld) run is never swept and is taken by
 * one worker only.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { AirlockError } from "../../src/errors.ts";
import { RUN_LOST_REASON, RunLeases, sweepRuns } from "../../src/fleet/run-leases.ts";
import { Sweeper } from "../../src/fleet/sweeper.ts";
import { claimFire, finishClaimedRun, insertScheduleSql, loadRun } from "../../src/scheduler/claim.ts";
import { openFleetPg, openFleetSqlite, type FleetDb } from "../fixtures/fleet-db.ts";
import { pgAvailable } from "../pg-cluster.ts";

const TTL = 10_000;

function suite(name: string, open: () => Promise<FleetDb>, skip: string | null) {
  describe.skipIf(skip !== null)(`run leases on ${name}`, () => {
    let db: FleetDb;
    let clock = Date.now();
    const now = () => clock;
    beforeAll(async () => {
      db = await open();
    }, 180_000);
    afterAll(async () => {
      await db?.close();
    }, 60_000);

    const schedule = () => insertScheduleSql(db.a, { name: "s", cron: "0 0 1 1 *", recipe_path: "/r.yaml", recipe_text: "name: r\ninstructions: x\n", params: {} });

    test("a held run is swept only after its lease lapsed; then the next fire of its schedule runs", async () => {
      const s = await schedule();
      const a = new RunLeases(db.a, { workerId: "A", ttlMs: TTL, now });
      const claim = await claimFire(db.a, { scheduleId: s.id, trigger: "cron", at: new Date(clock).toISOString(), lease: { workerId: "A", expiresAt: a.expiry() } });
      expect(claim?.status).toBe("started");
      const runId = claim!.run.id;
      // busy: a second fire is skipped
      expect((await claimFire(db.b, { scheduleId: s.id, trigger: "manual", at: new Date(clock).toISOString() }))?.status).toBe("skipped");
      // renewed while A lives; a sweep before expiry leaves it
      clock += TTL / 2;
      await a.renew(runId);
      clock += TTL - 1;
      expect((await new Sweeper(db.b, { now }).sweep()).runs).not.toContain(runId);
      expect((await loadRun(db.b, runId))!.status).toBe("running");
      // A stops renewing: past its lease, B's sweeper ends it interrupted, once
      clock += 2;
      const swept = await new Sweeper(db.b, { now }).sweep();
      expect(swept.runs).toEqual([runId]);
      expect(await sweepRuns(db.a, clock, 100)).toEqual([]);
      const run = (await loadRun(db.b, runId))!;
      expect(run).toMatchObject({ status: "interrupted", reason: RUN_LOST_REASON });
      expect(run.finished_at).not.toBeNull();
      // A, late: its renewal is refused and its result changes nothing
      const late = await a.renew(runId).catch((e: unknown) => e);
      expect(late).toBeInstanceOf(AirlockError);
      expect((late as AirlockError).code).toBe("lease_lost");
      await finishClaimedRun(db.a, runId, { status: "completed", result: { status: "completed" } });
      expect((await loadRun(db.b, runId))!.status).toBe("interrupted");
      // the overlap policy lets the next fire run
      expect((await claimFire(db.b, { scheduleId: s.id, trigger: "manual", at: new Date(clock).toISOString() }))?.status).toBe("started");
    });

    test("a queued run (no lease) is never swept; one worker takes it (also the claimer's own); its claimer may be overtaken, a stranger may not", async () => {
      const s = await schedule();
      const a = new RunLeases(db.a, { workerId: "A", ttlMs: TTL, now });
      const b = new RunLeases(db.b, { workerId: "B", ttlMs: TTL, now });
      const c = new RunLeases(db.b, { workerId: "C", ttlMs: TTL, now });
      // claimed by A (held), picked up by B before A handed it off: B takes it from A; A's hand-off is then a no-op
      const claim = await claimFire(db.a, { scheduleId: s.id, trigger: "manual", at: new Date(clock).toISOString(), lease: { workerId: a.claimerId, expiresAt: a.expiry() } });
      const runId = claim!.run.id;
      expect(await c.take(runId, null)).toBe(false);
      expect(await b.take(runId, a.claimerId)).toBe(true);
      expect(await a.handOff(runId)).toBe(false);
      expect(await c.take(runId, a.claimerId)).toBe(false);
      await finishClaimedRun(db.b, runId, { status: "completed", result: null });
      expect(await b.take(runId, a.claimerId)).toBe(false);

      // the claimer's own worker takes the job before the claimer hands it off: the late hand-off clears nothing
      const s0 = await schedule();
      const own = await claimFire(db.a, { scheduleId: s0.id, trigger: "manual", at: new Date(clock).toISOString(), lease: { workerId: a.claimerId, expiresAt: a.expiry() } });
      expect(await a.take(own!.run.id, a.claimerId)).toBe(true);
      expect(await a.handOff(own!.run.id)).toBe(false);
      await a.renew(own!.run.id);
      expect(await db.b.get("SELECT worker_id FROM runs WHERE id = ?", [own!.run.id])).toEqual({ worker_id: "A" });

      // claimed by A and handed off: unheld, never swept however late; taken once
      const s2 = await schedule();
      const claim2 = await claimFire(db.a, { scheduleId: s2.id, trigger: "manual", at: new Date(clock).toISOString(), lease: { workerId: a.claimerId, expiresAt: a.expiry() } });
      const run2 = claim2!.run.id;
      expect(await a.handOff(run2)).toBe(true);
      clock += 10 * TTL;
      expect((await new Sweeper(db.b, { now }).sweep()).runs).not.toContain(run2);
      expect((await loadRun(db.b, run2))!.status).toBe("running");
      expect(await b.take(run2, a.claimerId)).toBe(true);
      expect(await c.take(run2, a.claimerId)).toBe(false);
      // B dies: its lease lapses and the run is swept
      clock += TTL + 1;
      expect((await new Sweeper(db.a, { now }).sweep()).runs).toContain(run2);
      expect((await loadRun(db.a, run2))!.status).toBe("interrupted");

      // a claimer killed before its hand-off: the lease lapses, the run is swept, a worker picking the job up later does not run it
      const s3 = await schedule();
      const claim3 = await claimFire(db.a, { scheduleId: s3.id, trigger: "manual", at: new Date(clock).toISOString(), lease: { workerId: a.claimerId, expiresAt: a.expiry() } });
      clock += TTL + 1;
      expect((await new Sweeper(db.b, { now }).sweep()).runs).toContain(claim3!.run.id);
      expect(await b.take(claim3!.run.id, a.claimerId)).toBe(false);
    });

    test("the heartbeat renews until stopped; a lost lease calls onLost once", async () => {
      const s = await schedule();
      const real = new RunLeases(db.a, { workerId: "H", ttlMs: 300 });
      const claim = await claimFire(db.a, { scheduleId: s.id, trigger: "cron", at: new Date().toISOString(), lease: { workerId: "H", expiresAt: real.expiry() } });
      const runId = claim!.run.id;
      const lost: AirlockError[] = [];
      const beat = real.heartbeat(runId, (e) => lost.push(e));
      try {
        // someone else ends the run (as a sweep would): the next beat finds the lease lost
        await db.b.run("UPDATE runs SET status = 'interrupted' WHERE id = ?", [runId]);
        const end = Date.now() + 30_000;
        while (lost.length === 0 && Date.now() < end) await Bun.sleep(50);
        expect(lost.map((e) => e.code)).toEqual(["lease_lost"]);
      } finally {
        beat.stop();
      }
    });
  });
}

suite("SQLite", openFleetSqlite, null);
suite("PostgreSQL", openFleetPg, pgAvailable());
