import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { sqliteSql } from "./sql-sqlite.ts";

describe("sqliteSql", () => {
  const open = () => {
    const sql = sqliteSql(new Database(":memory:", { strict: true }));
    return sql;
  };

  test("all, get and run bind ? placeholders and report changes", async () => {
    const sql = open();
    await sql.run("CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER)");
    expect(await sql.run("INSERT INTO t (k, v) VALUES (?, ?), (?, ?)", ["a", 1, "b", 2])).toEqual({ changes: 2 });
    expect(await sql.get<{ v: number }>("SELECT v FROM t WHERE k = ?", ["b"])).toEqual({ v: 2 });
    expect(await sql.get("SELECT v FROM t WHERE k = ?", ["zz"])).toBeNull();
    expect(await sql.all<{ k: string }>("SELECT k FROM t ORDER BY k")).toEqual([{ k: "a" }, { k: "b" }]);
    expect(await sql.run("UPDATE t SET v = v + 1 WHERE v > ?", [5])).toEqual({ changes: 0 });
  });

  test("a transaction that throws leaves nothing behind; statements from outside wait for it", async () => {
    const sql = open();
    await sql.run("CREATE TABLE t (k TEXT PRIMARY KEY)");
    let outsideSaw: number | undefined;
    let outside: Promise<void> | undefined;
    await expect(
      sql.transaction(async (tx) => {
        await tx.run("INSERT INTO t (k) VALUES (?)", ["x"]);
        // started while the transaction is open: must not see (or join) its uncommitted row
        outside = sql.get<{ n: number }>("SELECT COUNT(*) AS n FROM t").then((r) => void (outsideSaw = r!.n));
        await Promise.resolve();
        expect(outsideSaw).toBeUndefined();
        throw new Error("boom");
      }),
    ).rejects.toThrow("boom");
    await outside;
    expect(outsideSaw).toBe(0);
  });

  test("a nested transaction is a savepoint: its failure rolls back only itself", async () => {
    const sql = open();
    await sql.run("CREATE TABLE t (k TEXT PRIMARY KEY)");
    await sql.transaction(async (tx) => {
      await tx.run("INSERT INTO t (k) VALUES ('a')");
      await tx.transaction(async (inner) => {
        await inner.run("INSERT INTO t (k) VALUES ('b')");
        throw new Error("inner");
      }).catch(() => {});
      await tx.run("INSERT INTO t (k) VALUES ('c')");
    });
    expect((await sql.all<{ k: string }>("SELECT k FROM t ORDER BY k")).map((r) => r.k)).toEqual(["a", "c"]);
  });
});
