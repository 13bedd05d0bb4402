/**
 * @module test/contract/executor.test
 * The storage interface (src/store/sql.ts) behaves the same on SQLite and PostgreSQL: `?` placeholders
 * (and a `?` inside quotes or comments left alone), value types (integers as numbers, booleans as 0/1,
 * null, text, counts and sums as numbers), `changes`, `RETURNING` and `ON CONFLICT`, transactions that
 * commit or roll back whole, nested savepoints, and concurrent transactions from two executors.
 * PostgreSQL only: a bigint past 2^53 is refused rather than rounded.
 */
import { expect, test } from "bun:test";
import { pgSql } from "../../src/store/sql-pg.ts";
import { contract } from "./backends.ts";

const TABLE = "CREATE TABLE t (k TEXT PRIMARY KEY, n INTEGER, big BIGINT, flag INTEGER, note TEXT, x REAL)";

contract("executor", (backend) => {
  test("? placeholders bind in order; a ? inside a string, an identifier or a comment is left alone", async () => {
    const sql = (await backend.fresh()).open();
    const row = await sql.get<Record<string, unknown>>(
      `SELECT '?' AS q, 'it''s ?' AS r, ? AS a, /* ? */ ? AS b -- ? here too
       , ? AS "c?"`,
      ["one", "two", "three"],
    );
    expect(row).toEqual({ q: "?", r: "it's ?", a: "one", b: "two", "c?": "three" });
  });

  test("types: integers, booleans as 0/1, null, text, real; counts and sums are numbers", async () => {
    const sql = (await backend.fresh()).open();
    await sql.run(TABLE);
    const big = 2 ** 40 + 7;
    await sql.run("INSERT INTO t (k, n, big, flag, note, x) VALUES (?, ?, ?, ?, ?, ?)", ["a", 42, big, true, null, 1.5]);
    await sql.run("INSERT INTO t (k, n, big, flag, note, x) VALUES (?, ?, ?, ?, ?, ?)", ["b", -3, 1, false, "ünïcode ✓", 0.25]);
    expect(await sql.all("SELECT k, n, big, flag, note, x FROM t ORDER BY k")).toEqual([
      { k: "a", n: 42, big, flag: 1, note: null, x: 1.5 },
      { k: "b", n: -3, big: 1, flag: 0, note: "ünïcode ✓", x: 0.25 },
    ]);
    const agg = await sql.get<{ c: unknown; s: unknown; m: unknown; mb: unknown }>("SELECT COUNT(*) AS c, SUM(n) AS s, MAX(n) AS m, MAX(big) AS mb FROM t");
    expect(agg).toEqual({ c: 2, s: 39, m: 42, mb: big });
    expect(typeof agg!.c).toBe("number");
    expect(await sql.get("SELECT k FROM t WHERE k = ?", ["nope"])).toBeNull();
    expect(await sql.all("SELECT k FROM t WHERE n > ?", [1000])).toEqual([]);
  });

  test("run reports changes; RETURNING and ON CONFLICT work the same", async () => {
    const sql = (await backend.fresh()).open();
    await sql.run(TABLE);
    expect(await sql.run("INSERT INTO t (k, n) VALUES (?, ?), (?, ?)", ["a", 1, "b", 2])).toEqual({ changes: 2 });
    expect(await sql.run("UPDATE t SET n = n + 1 WHERE n > ?", [5])).toEqual({ changes: 0 });
    expect(await sql.run("UPDATE t SET n = n + 1")).toEqual({ changes: 2 });
    expect(await sql.run("INSERT INTO t (k, n) VALUES (?, ?) ON CONFLICT (k) DO NOTHING", ["a", 9])).toEqual({ changes: 0 });
    expect(await sql.get("INSERT INTO t (k, n) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET n = excluded.n RETURNING k, n", ["a", 9])).toEqual({ k: "a", n: 9 });
    expect(await sql.run("DELETE FROM t WHERE k = ?", ["b"])).toEqual({ changes: 1 });
    expect(await sql.all("SELECT k, n FROM t")).toEqual([{ k: "a", n: 9 }]);
  });

  test("a transaction commits whole; one that throws leaves nothing and others never see its rows", async () => {
    const db = await backend.fresh();
    const sql = db.open();
    await sql.run(TABLE);
    await sql.transaction(async (tx) => {
      await tx.run("INSERT INTO t (k) VALUES (?)", ["kept1"]);
      await tx.run("INSERT INTO t (k) VALUES (?)", ["kept2"]);
    });
    let outside: Promise<number> | undefined;
    await expect(
      sql.transaction(async (tx) => {
        await tx.run("INSERT INTO t (k) VALUES (?)", ["lost"]);
        expect(await tx.get("SELECT k FROM t WHERE k = ?", ["lost"])).toEqual({ k: "lost" });
        outside = sql.get<{ c: number }>("SELECT COUNT(*) AS c FROM t WHERE k = 'lost'").then((r) => r!.c);
        throw new Error("boom");
      }),
    ).rejects.toThrow("boom");
    expect(await outside!).toBe(0);
    expect((await sql.all<{ k: string }>("SELECT k FROM t ORDER BY k")).map((r) => r.k)).toEqual(["kept1", "kept2"]);
  });

  test("a failing statement inside a transaction rolls it back, the error reaches the caller, the executor stays usable", async () => {
    const sql = (await backend.fresh()).open();
    await sql.run(TABLE);
    await expect(
      sql.transaction(async (tx) => {
        await tx.run("INSERT INTO t (k) VALUES (?)", ["a"]);
        await tx.run("INSERT INTO t (k) VALUES (?)", ["a"]); // duplicate primary key
      }),
    ).rejects.toThrow();
    expect(await sql.get("SELECT COUNT(*) AS c FROM t")).toEqual({ c: 0 });
    await expect(sql.run("INSERT INTO no_such_table (k) VALUES (?)", ["a"])).rejects.toThrow(/no_such_table/);
    expect(await sql.run("INSERT INTO t (k) VALUES (?)", ["b"])).toEqual({ changes: 1 });
  });

  test("nested transactions are savepoints: an inner failure rolls back only the inner part", async () => {
    const sql = (await backend.fresh()).open();
    await sql.run(TABLE);
    await sql.transaction(async (tx) => {
      await tx.run("INSERT INTO t (k) VALUES ('a')");
      await tx
        .transaction(async (inner) => {
          await inner.run("INSERT INTO t (k) VALUES ('b')");
          await inner.transaction(async (deeper) => {
            await deeper.run("INSERT INTO t (k) VALUES ('b2')");
          });
          throw new Error("inner");
        })
        .catch(() => {});
      await tx.transaction(async (inner) => {
        await inner.run("INSERT INTO t (k) VALUES ('c')");
      });
      // a failed statement inside a savepoint does not poison the outer transaction
      await tx.transaction((inner) => inner.run("INSERT INTO t (k) VALUES ('a')")).catch(() => {});
      await tx.run("INSERT INTO t (k) VALUES ('d')");
    });
    expect((await sql.all<{ k: string }>("SELECT k FROM t ORDER BY k")).map((r) => r.k)).toEqual(["a", "c", "d"]);
  });

  test("concurrent transactions (PostgreSQL: from two pools) on one database: every write lands exactly once", async () => {
    const db = await backend.fresh();
    const a = db.open();
    // SQLite: one executor per process (a second connection in the same thread would busy-wait synchronously
    // on the first one's write lock); processes sharing a file are covered by migrations.test.ts.
    const b = backend.dialect === "postgres" ? db.open() : a;
    await a.run(TABLE);
    await a.run("INSERT INTO t (k, n) VALUES ('counter', 0)");
    const work = (sql: typeof a, who: string) =>
      Array.from({ length: 10 }, (_, i) =>
        sql.transaction(async (tx) => {
          await tx.run("INSERT INTO t (k, n) VALUES (?, ?)", [`${who}${i}`, i]);
          await tx.run("UPDATE t SET n = n + 1 WHERE k = 'counter'");
        }),
      );
    await Promise.all([...work(a, "a"), ...work(b, "b")]);
    expect(await b.get("SELECT n FROM t WHERE k = 'counter'")).toEqual({ n: 20 });
    expect(await a.get("SELECT COUNT(*) AS c FROM t WHERE k <> 'counter'")).toEqual({ c: 20 });
  });

  if (backend.dialect === "postgres") {
    test("postgres: a bigint past 2^53 is refused rather than rounded", async () => {
      const sql = (await backend.fresh()).open();
      expect(await sql.get("SELECT CAST(9007199254740991 AS BIGINT) AS v")).toEqual({ v: Number.MAX_SAFE_INTEGER });
      await expect(sql.get("SELECT CAST(9007199254740993 AS BIGINT) AS v")).rejects.toThrow(/past 2\^53/);
    });

    test("postgres: a transaction left idle (its process paused) loses its session and its locks; nothing of it lands", async () => {
      const db = await backend.fresh();
      const other = db.open();
      await other.run(TABLE);
      await other.run("INSERT INTO t (k, n) VALUES ('row', 0)");
      const paused = pgSql(db.target, { idleInTransactionTimeoutMs: 300 });
      try {
        let locked!: () => void;
        const holding = new Promise<void>((r) => (locked = r));
        let resume!: () => void;
        const resumed = new Promise<void>((r) => (resume = r));
        const stale = paused.transaction(async (tx) => {
          await tx.run("UPDATE t SET n = 100 WHERE k = 'row'");
          locked();
          await resumed; // the "paused" process: holds the row lock, sends nothing
          await tx.run("UPDATE t SET note = 'stale' WHERE k = 'row'");
        });
        const staleOutcome = stale.then(() => "committed", () => "refused");
        await holding;
        // Another node's write on the locked row waits for the lock; it completes only because the server ends the idle session.
        await other.run("UPDATE t SET n = n + 1 WHERE k = 'row'");
        resume();
        expect(await staleOutcome).toBe("refused");
        expect(await other.get("SELECT n, note FROM t WHERE k = 'row'")).toEqual({ n: 1, note: null });
        expect(await paused.get("SELECT COUNT(*) AS c FROM t")).toEqual({ c: 1 }); // the pool is usable again
      } finally {
        await paused.close();
      }
    });
  }
});
