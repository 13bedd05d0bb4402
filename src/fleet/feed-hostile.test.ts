/**
 * The card feed (SPEC §5.8) against card rows its authors did not write: a pending row whose JSON columns
 * are not what this version reads (another version's, or damaged). It must be skipped with a log line, never
 * stopping the catch-up that publishes every other node's pending cards (and lists them for `GET /actions`).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { openFleetPg, openFleetSqlite, type FleetDb as Db } from "../../test/fixtures/fleet-db.ts";
import { pgAvailable } from "../../test/pg-cluster.ts";
import { Bus, type AnyEvent } from "../bus/bus.ts";
import { CardRows } from "./card-rows.ts";
import { CardFeed } from "./feed.ts";

let nextId = 0;
const uid = (p: string) => `${p}_${process.pid}_${++nextId}`;

function suite(name: string, open: () => Promise<Db>, skip: string | null) {
  describe.skipIf(skip !== null)(`the card feed against damaged rows on ${name}`, () => {
    let db: Db;
    beforeAll(async () => {
      db = await open();
    }, 180_000);
    afterAll(async () => {
      await db?.close();
    }, 60_000);

    test("a pending row with unreadable JSON is skipped with a log line; the good pending row is still published and listed", async () => {
      const s = uid("sess");
      const insert = (id: string, surfaces: string, card: string) =>
        db.a.run(
          `INSERT INTO cards (id, session_id, root_session_id, turn_id, call_id, worker_id, epoch, status, surfaces, requires_user_proof, card, created_at, expires_at)
           VALUES (?, ?, ?, 't', 'c', 'w-other', 1, 'pending', ?, 0, ?, ?, ?)`,
          [id, s, s, surfaces, card, new Date().toISOString(), Date.now() + 600_000],
        );
      const good = uid("act");
      const card = {
        request_id: good,
        home_session_id: s,
        tool: "developer__shell",
        arguments: {},
        inspector: "hook",
        reason: "r",
        requires_user_proof: false,
        expires_at: new Date(Date.now() + 600_000).toISOString(),
        user_only: true,
      };
      await insert(uid("act"), "not json", JSON.stringify(card));
      await insert(uid("act"), JSON.stringify([s]), "{broken");
      await insert(uid("act"), JSON.stringify({ not: "an array" }), JSON.stringify(card));
      await insert(uid("act"), JSON.stringify([s]), JSON.stringify({ request_id: "x", something: "else" }));
      await insert(good, JSON.stringify([s]), JSON.stringify(card));
      const bus = new Bus(100, false);
      const got: AnyEvent[] = [];
      bus.subscribe(s, (ev) => got.push(ev));
      const logged: string[] = [];
      const orig = console.error;
      console.error = (...a: unknown[]) => void logged.push(a.map(String).join(" "));
      const feed = new CardFeed({ rows: new CardRows(db.b), bus, pollMs: 3_600_000, skipWorker: "w-me" });
      try {
        await feed.start();
        await feed.idle();
        expect(got.map((e) => [e.type, (e.data as { request_id: string }).request_id])).toEqual([["action_required", good]]);
        expect(feed.pendingRows().map((r) => r.id)).toEqual([good]);
        expect(logged.length).toBeGreaterThan(0);
      } finally {
        console.error = orig;
        await feed.close();
      }
    }, 120_000);
  });
}

suite("SQLite", openFleetSqlite, null);
suite("PostgreSQL", openFleetPg, pgAvailable());
