/**
 * A fleet node built from `fleet:` config (fleet/node.ts): on PostgreSQL its sweeper runs on its own timer,
 * its feed shows another worker's card on its bus, its waker wakes its own card, and closing it leaves no
 * `LISTEN` connection behind. On SQLite the same node works by the poll. Waits are conditions with
 * generous bounds.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { openFleetPg, openFleetSqlite, type FleetDb } from "../../test/fixtures/fleet-db.ts";
import { pgAvailable } from "../../test/pg-cluster.ts";
import { Bus, type AnyEvent } from "../bus/bus.ts";
import { FleetConfig } from "../config/schema.ts";
import { CardRows } from "./card-rows.ts";
import { FleetNode } from "./node.ts";
import { parkAndAwait } from "./park.ts";

async function until(cond: () => boolean | Promise<boolean>, what: string, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(25);
  }
}

function suite(name: string, open: () => Promise<FleetDb>, skip: string | null) {
  describe.skipIf(skip !== null)(`a fleet node on ${name}`, () => {
    let db: FleetDb;
    beforeAll(async () => {
      db = await open();
    }, 180_000);
    afterAll(async () => {
      await db?.close();
    }, 60_000);

    test("config sets the lease TTL; the sweeper runs on its timer; the feed and the waker serve cards of both nodes", async () => {
      const config = FleetConfig.parse({ lease_ttl_seconds: 600, sweep_seconds: 0.1, poll_seconds: 0.1 });
      const busA = new Bus();
      const busB = new Bus();
      const swept: string[] = [];
      const a = await FleetNode.start({ sql: db.a, bus: busA, config, workerId: "node-A", onSwept: (r) => swept.push(...r.turns), ...(db.url ? { listenUrl: db.url } : {}) });
      const b = await FleetNode.start({ sql: db.b, bus: busB, config, workerId: "node-B", onSwept: (r) => swept.push(...r.turns), ...(db.url ? { listenUrl: db.url } : {}) });
      try {
        const now = new Date().toISOString();
        await db.a.run("INSERT INTO sessions (id, workspace, mode, sandbox, provider, created_at, updated_at) VALUES ('ses_n1', '/w', 'smart', 'workspace-write', 'scripted', ?, ?), ('ses_n2', '/w', 'smart', 'workspace-write', 'scripted', ?, ?)", [now, now, now, now]);
        await db.a.run("INSERT INTO turns (id, session_id, status, started_at) VALUES ('turn_n1', 'ses_n1', 'running', ?), ('turn_n2', 'ses_n2', 'running', ?)", [now, now]);
        const lease = await a.leases.acquire("ses_n1", "turn_n1");
        expect(lease.expiresAt - Date.now()).toBeGreaterThan(500_000);
        // a lease already past its expiry (a dead worker's) is swept by a node's timer alone (whichever comes first)
        await db.a.run("INSERT INTO inflight (session_id, turn_id, worker_id, epoch, expires_at) VALUES ('ses_n2', 'turn_n2', 'dead', 1, 1)");
        await until(() => swept.includes("turn_n2"), "a sweeper to take the dead lease");
        expect(swept.filter((t) => t === "turn_n2").length).toBe(1);
        expect((await db.b.get<{ status: string }>("SELECT status FROM turns WHERE id = 'turn_n2'"))!.status).toBe("interrupted");
        const seenOnB: AnyEvent[] = [];
        busB.subscribe("ses_n1", (e) => seenOnB.push(e));
        const card = {
          request_id: "act_n1",
          home_session_id: "ses_n1",
          tool: "developer__shell",
          arguments: { command: "ls" },
          inspector: "hook",
          reason: "asks",
          requires_user_proof: false,
          expires_at: new Date(Date.now() + 600_000).toISOString(),
          user_only: true as const,
        };
        const verdict = parkAndAwait(a, lease, { id: "act_n1", sessionId: "ses_n1", rootSessionId: "ses_n1", callId: "c", surfaces: ["ses_n1"], requiresUserProof: false, card, expiresAt: Date.now() + 600_000 });
        await until(() => seenOnB.some((e) => e.type === "action_required"), "B's feed to show A's card");
        const d = await b.rows.decide("act_n1", { status: "allowed", outcome: { decision: "allow_once", decided_in: "ses_n1" }, audit: { sessionId: "ses_n1", decision: "allow_once", proof: false } });
        expect(d.ok).toBe(true);
        expect((await verdict).run).toBe(true);
        await until(() => seenOnB.some((e) => e.type === "action_resolved"), "B's feed to show the end");
        expect((await new CardRows(db.b).get("act_n1"))!.status).toBe("allowed");
        expect(swept).not.toContain("turn_n1");
      } finally {
        await a.close();
        await b.close();
      }
      if (db.url) {
        await until(
          async () => (await db.b.all("SELECT pid FROM pg_stat_activity WHERE query ILIKE 'LISTEN%' AND datname = current_database() AND pid <> pg_backend_pid()")).length === 0,
          "no LISTEN connection left",
        );
      }
    }, 180_000);
  });
}

suite("SQLite", openFleetSqlite, null);
suite("PostgreSQL", openFleetPg, pgAvailable());
