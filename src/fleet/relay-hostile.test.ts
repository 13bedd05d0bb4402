/**
 * The event relay (SPEC §5.8) against rows and failures its authors did not write: rows of `fleet_relay` as
 * another version (or a broken writer) might leave them, and a node whose relay writes fail for a while (the
 * database refusing, as when it cannot be reached mid-turn). The bus here does not validate payloads, as in
 * production (validation is on only under `bun test` by default), so what the relay lets through reaches
 * subscribers. No expectation depends on timing: the poll is an hour, reads are triggered and awaited.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { openFleetPg, openFleetSqlite, type FleetDb as Db } from "../../test/fixtures/fleet-db.ts";
import { pgAvailable } from "../../test/pg-cluster.ts";
import { Bus, type AnyEvent } from "../bus/bus.ts";
import { EventRelay } from "./relay.ts";

const T = 120_000;
let nextId = 0;
const uid = (p: string) => `${p}_${process.pid}_${++nextId}`;

async function until(cond: () => boolean | Promise<boolean>, ms = 60_000, what = "condition"): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(20);
  }
}

function suite(name: string, open: () => Promise<Db>, skip: string | null) {
  describe.skipIf(skip !== null)(`the relay against hostile rows on ${name}`, () => {
    let db: Db;
    beforeAll(async () => {
      db = await open();
    }, 180_000);
    afterAll(async () => {
      await db?.close();
    }, 60_000);

    test("malformed rows and items are skipped with a log line; the good row after them is read in the same pass; nothing off-schema reaches the bus", async () => {
      const bus = new Bus(100, false);
      const cancels: unknown[] = [];
      const relay = new EventRelay({ sql: db.b, bus, workerId: "w-reader", pollMs: 3_600_000, onCancel: (sid) => cancels.push(sid), flushMs: 5 });
      await relay.start();
      const logged: string[] = [];
      const orig = console.error;
      console.error = (...a: unknown[]) => void logged.push(a.map(String).join(" "));
      try {
        const s = uid("sess");
        const got: AnyEvent[] = [];
        bus.subscribe(s, (ev) => got.push(ev));
        const good = { kind: "event", session_id: s, type: "delta", data: { session_id: s, turn_id: "t", text: "good" }, persisted: false };
        const rows = [
          "not json",
          "{}",
          "null",
          '"a string"',
          "42",
          JSON.stringify([
            null,
            5,
            "x",
            { kind: "event", session_id: s, type: "no_such_event", data: { session_id: s } },
            { kind: "event", session_id: s, type: "turn_finished", data: { nope: 1 } },
            { kind: "event", session_id: s, type: "constructor", data: {} },
            { kind: "event", session_id: 7, type: "delta", data: { session_id: s, turn_id: "t", text: "bad session" } },
            { kind: "cancel" },
            { kind: "cancel", session_id: { not: "a string" }, reason: "x" },
            { kind: "something_new", session_id: s },
          ]),
          JSON.stringify([good]),
        ];
        for (const items of rows) await db.a.run("INSERT INTO fleet_relay (worker_id, items, created_at) VALUES ('w-other-version', ?, ?)", [items, Date.now()]);
        relay.read();
        await relay.idle();
        // one pass: the good row after the broken ones is not left for the next poll (an hour away)
        expect(got.map((e) => [e.type, (e.data as { text?: string }).text])).toEqual([["delta", "good"]]);
        expect(cancels).toEqual([]);
        expect(logged.length).toBeGreaterThan(0);
        // and the relay still works for the next row
        await db.a.run("INSERT INTO fleet_relay (worker_id, items, created_at) VALUES ('w-other-version', ?, ?)", [
          JSON.stringify([{ ...good, data: { ...good.data, text: "after" } }]),
          Date.now(),
        ]);
        relay.read();
        await relay.idle();
        expect(got.map((e) => (e.data as { text?: string }).text)).toEqual(["good", "after"]);
      } finally {
        console.error = orig;
        await relay.close();
      }
    }, T);
  });
}

suite("SQLite", openFleetSqlite, null);
suite("PostgreSQL", openFleetPg, pgAvailable());

describe.skipIf(pgAvailable() !== null)("the relay's reads with a huge row in the lookback (PostgreSQL)", () => {
  let db: Db;
  beforeAll(async () => {
    db = await openFleetPg();
  }, 180_000);
  afterAll(async () => {
    await db?.close();
  }, 60_000);

  test("a row already read is not fetched again by every later read of the lookback window (a 5 MB event is transferred once, not once per notification)", async () => {
    // the reader's executor, counting the bytes of `items` its queries bring back
    let fetched = 0;
    const count = <T>(rows: T): T => {
      for (const r of (Array.isArray(rows) ? rows : [rows]) as ({ items?: unknown } | null)[]) if (r && typeof r.items === "string") fetched += r.items.length;
      return rows;
    };
    const sql = db.b;
    const counting = {
      dialect: sql.dialect,
      all: async (q: string, p?: readonly unknown[]) => count(await sql.all(q, p as never)),
      get: async (q: string, p?: readonly unknown[]) => count(await sql.get(q, p as never)),
      run: (q: string, p?: readonly unknown[]) => sql.run(q, p as never),
      transaction: (fn: never) => sql.transaction(fn),
      close: () => Promise.resolve(),
    } as unknown as typeof sql;
    const bus = new Bus();
    const relay = new EventRelay({ sql: counting, bus, workerId: "w-reader", pollMs: 3_600_000, onCancel: () => {} });
    await relay.start();
    try {
      const s = uid("sess");
      const got: string[] = [];
      bus.subscribe(s, (ev) => got.push((ev.data as { text: string }).text.slice(0, 5)));
      const big = "y".repeat(5_000_000);
      const row = (text: string) => JSON.stringify([{ kind: "event", session_id: s, type: "delta", data: { session_id: s, turn_id: "t", text }, persisted: false }]);
      await db.a.run("INSERT INTO fleet_relay (worker_id, items, created_at) VALUES ('w-writer', ?, ?)", [row(big), Date.now()]);
      relay.read();
      await relay.idle();
      expect(got).toEqual(["yyyyy"]);
      // twenty more small rows, each read as its notification would trigger it
      for (let i = 0; i < 20; i++) {
        await db.a.run("INSERT INTO fleet_relay (worker_id, items, created_at) VALUES ('w-writer', ?, ?)", [row(`s${i}`), Date.now()]);
        relay.read();
        await relay.idle();
      }
      expect(got.length).toBe(21);
      // the big row once, plus the small ones: far below twice the big row
      expect(fetched).toBeLessThan(2 * big.length);
    } finally {
      await relay.close();
    }
  }, T);
});

describe.skipIf(pgAvailable() !== null)("the relay when its writes fail for a while (PostgreSQL)", () => {
  let db: Db;
  beforeAll(async () => {
    db = await openFleetPg();
  }, 180_000);
  afterAll(async () => {
    await db?.close();
  }, 60_000);

  test("events whose row could not be written are written once the database takes them again, in order, none lost (turn_finished included)", async () => {
    // a writer-side failure the node cannot avoid: the database refuses its inserts while relay_block has a row
    await db.a.run("CREATE TABLE relay_block (one INT)");
    await db.a.run(`CREATE FUNCTION relay_refuse() RETURNS trigger AS $$ BEGIN
        IF EXISTS (SELECT 1 FROM relay_block) THEN RAISE EXCEPTION 'relay writes refused (test)'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql`);
    await db.a.run("CREATE TRIGGER relay_refuse BEFORE INSERT ON fleet_relay FOR EACH ROW EXECUTE FUNCTION relay_refuse()");
    const busA = new Bus();
    const busB = new Bus();
    const ra = new EventRelay({ sql: db.a, bus: busA, workerId: "w-a", pollMs: 3_600_000, onCancel: () => {}, flushMs: 5 });
    const rb = new EventRelay({ sql: db.b, bus: busB, workerId: "w-b", pollMs: 3_600_000, onCancel: () => {} });
    await ra.start();
    await rb.start();
    const orig = console.error;
    const logged: string[] = [];
    console.error = (...a: unknown[]) => void logged.push(a.map(String).join(" "));
    try {
      const s = uid("sess");
      const t = uid("turn");
      const onB: AnyEvent[] = [];
      busB.subscribe(s, (ev) => onB.push(ev));
      await db.a.run("INSERT INTO relay_block VALUES (1)");
      busA.publish(s, "turn_started", { session_id: s, turn_id: t });
      await ra.flush();
      busA.publish(s, "delta", { session_id: s, turn_id: t, text: "one" });
      await ra.flush();
      expect(logged.some((l) => l.includes("relay"))).toBe(true);
      // the database takes writes again: later events, then whatever retries
      await db.a.run("DELETE FROM relay_block");
      busA.publish(s, "delta", { session_id: s, turn_id: t, text: "two" });
      busA.publish(s, "turn_finished", { session_id: s, turn_id: t, status: "completed", answer: "done" });
      await ra.flush();
      await until(
        async () => {
          rb.read();
          await rb.idle();
          return onB.some((e) => e.type === "turn_finished");
        },
        60_000,
        "turn_finished on B",
      );
      await until(
        async () => {
          rb.read();
          await rb.idle();
          return onB.length >= 4;
        },
        60_000,
        "all four events on B",
      );
      expect(onB.map((e) => [e.type, (e.data as { text?: string }).text])).toEqual([
        ["turn_started", undefined],
        ["delta", "one"],
        ["delta", "two"],
        ["turn_finished", undefined],
      ]);
    } finally {
      console.error = orig;
      await db.a.run("DELETE FROM relay_block");
      await ra.close();
      await rb.close();
    }
  }, T);
});
