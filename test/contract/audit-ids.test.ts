/**
 * @module test/contract/audit-ids.test
 * Schema version 14 (SQLite: the `audit` table's ids without AUTOINCREMENT, so an audit row no longer rewrites
 * `sqlite_sequence`'s page in the WAL, and `audit_home_session` only for rows whose home is not their session: issue
 * 20; PostgreSQL: nothing to do). On both backends: the rows, their ids and the indexes are kept, and new rows are
 * numbered after the largest id. On SQLite: a process SIGKILLed inside the version's transaction — after the copy,
 * after the old table's DROP, after the RENAME — leaves a database that opens at version 13 with its table and every
 * row, and the next start applies it; a `card_parked` row's commit then writes two pages to the WAL (the table's leaf
 * and `audit_session`), not four, and a `card_decision` row's four, not five. (The decision log's reads return the
 * same rows at versions 12, 13 and 14: audit-index.test.ts.)
 */
import { expect, test } from "bun:test";
import { statSync } from "node:fs";
import { MIGRATIONS } from "../../src/store/db.ts";
import { migrateSql, schemaVersionSql, type Migration } from "../../src/store/migrate.ts";
import { PG_MIGRATIONS } from "../../src/store/migrations-pg.ts";
import type { Sql } from "../../src/store/sql.ts";
import { Store } from "../../src/store/store.ts";
import { contract } from "./backends.ts";
import { killInsideMigration } from "./migrate-kill.ts";



async function auditIndexes(sql: Sql): Promise<string[]> {
  const rows =
    sql.dialect === "postgres"
      ? await sql.all<{ name: string }>("SELECT indexname AS name FROM pg_indexes WHERE tablename = 'audit' AND indexname <> 'audit_pkey'")
      : await sql.all<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'audit' AND name NOT LIKE 'sqlite_%'");
  return rows.map((r) => r.name).sort();
}

/** The audit table's CREATE statement (SQLite). */
async function auditTableSql(sql: Sql): Promise<string> {
  return (await sql.get<{ sql: string }>("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'audit'"))!.sql;
}

/** A session and 40 audit rows of the kinds a card writes; the last rows' ids are deleted-free and increasing. */
async function fill(sql: Sql): Promise<void> {
  const now = "2026-12-02T10:00:00.000Z";
  await sql.run("INSERT INTO sessions (id, parent_session_id, workspace, mode, sandbox, provider, created_at, updated_at) VALUES ('ses_a', NULL, '/w', 'smart', 'read-only', 'scripted', ?, ?)", [now, now]);
  const store = new Store(sql);
  for (let i = 0; i < 20; i++) {
    const req = `act_${String(i).padStart(4, "0")}`;
    await store.audit({ kind: "card_parked", outcome: "recorded", request_id: req, session_id: "ses_a", home_session_id: "ses_a", detail: { tool: "developer__shell" } });
    await store.audit({ kind: "card_decision", outcome: "accepted", request_id: req, session_id: "ses_a", home_session_id: "ses_a", decision: "deny", detail: { proof: false } });
  }
}

const INDEXES = ["audit_decision_request", "audit_home_session", "audit_session"];

contract("audit ids (schema version 14)", (backend) => {
  const list: readonly Migration[] = backend.dialect === "postgres" ? PG_MIGRATIONS : MIGRATIONS;
  const upTo13 = list.filter((m) => m.version <= 13);

  test("the rows, their ids and the indexes are kept; new rows are numbered after the largest id", async () => {
    const sql = (await backend.fresh()).open();
    await migrateSql(sql, upTo13);
    await fill(sql);
    const rows = await sql.all<{ id: number }>("SELECT * FROM audit ORDER BY id");
    expect(await migrateSql(sql, list)).toEqual([14]);
    expect(await sql.all("SELECT * FROM audit ORDER BY id")).toEqual(rows);
    expect(await auditIndexes(sql)).toEqual(INDEXES);
    await new Store(sql).audit({ kind: "card_parked", outcome: "recorded", request_id: "act_new", session_id: "ses_a", home_session_id: "ses_a" });
    const last = await sql.get<{ id: number }>("SELECT id FROM audit WHERE request_id = 'act_new'");
    expect(Number(last!.id)).toBe(Number(rows.at(-1)!.id) + 1);
    if (backend.dialect === "sqlite") {
      expect(await auditTableSql(sql)).not.toMatch(/AUTOINCREMENT/i);
      // an audit insert leaves sqlite_sequence alone (before version 14 it held the audit table's counter)
      expect(await sql.all("SELECT name FROM sqlite_sequence WHERE name = 'audit'")).toEqual([]);
    }
  }, 120_000);

  if (backend.dialect !== "sqlite") return;

  for (const stopAt of ["SELECT id, at, kind", "DROP TABLE audit", "ALTER TABLE audit_v14 RENAME"]) {
    test(`SIGKILL inside version 14 after "${stopAt}": opens at version 13 with its table and every row; the next start applies it`, async () => {
      const db = await backend.fresh();
      const sql = db.open();
      await migrateSql(sql, upTo13);
      await fill(sql);
      const rows = await sql.all("SELECT * FROM audit ORDER BY id");
      const before = await auditTableSql(sql);
      expect(before).toMatch(/AUTOINCREMENT/i);

      await killInsideMigration(backend.dialect, db.target, stopAt);

      const again = db.open();
      expect(await schemaVersionSql(again)).toBe(13);
      expect(await auditTableSql(again)).toBe(before);
      expect(await again.get("SELECT name FROM sqlite_master WHERE name = 'audit_v14'")).toBeNull();
      expect(await again.all("SELECT * FROM audit ORDER BY id")).toEqual(rows);
      expect(await again.get("SELECT integrity_check AS ok FROM pragma_integrity_check")).toEqual({ ok: "ok" });
      expect(await migrateSql(again, list)).toEqual([14]);
      expect(await auditIndexes(again)).toEqual(INDEXES);
      expect(await again.all("SELECT * FROM audit ORDER BY id")).toEqual(rows);
    }, 120_000);
  }

  test("a card_parked row's commit writes two pages to the WAL (the table's leaf, audit_session), a card_decision row's four", async () => {
    const db = await backend.fresh();
    const sql = db.open();
    await migrateSql(sql, list);
    await fill(sql); // the table and its indexes past their first pages
    await sql.run("INSERT INTO sessions (id, parent_session_id, workspace, mode, sandbox, provider, created_at, updated_at) VALUES ('ses_b', 'ses_a', '/w', 'smart', 'read-only', 'scripted', 'x', 'x')");
    const store = new Store(sql);
    const frame = 4096 + 24; // SQLite's default page size, and a WAL frame's header
    const parked: number[] = [];
    const decided: number[] = [];
    for (let i = 0; i < 21; i++) {
      let before = statSync(`${db.target}-wal`).size;
      await store.audit({ kind: "card_parked", outcome: "recorded", request_id: `act_p${i}`, session_id: "ses_b", home_session_id: "ses_b", detail: { tool: "developer__shell" } });
      parked.push((statSync(`${db.target}-wal`).size - before) / frame);
      before = statSync(`${db.target}-wal`).size;
      // answered from the root: its session is not its home
      await store.audit({ kind: "card_decision", outcome: "accepted", request_id: `act_p${i}`, session_id: "ses_a", home_session_id: "ses_b", decision: "deny", detail: { proof: false } });
      decided.push((statSync(`${db.target}-wal`).size - before) / frame);
    }
    parked.sort((a, b) => a - b);
    decided.sort((a, b) => a - b);
    // the median commit (a leaf split now and then adds pages to one commit); before version 14: 4 and 5
    // (sqlite_sequence's page in each, audit_home_session's in the card_parked one)
    expect([parked[10], decided[10]]).toEqual([2, 4]);
    // and the decision is found through its home by the tree filter (the partial index holds it)
    expect((await sql.all<{ request_id: string }>("SELECT request_id FROM audit WHERE home_session_id = 'ses_b' AND home_session_id IS DISTINCT FROM session_id")).length).toBe(21);
  }, 120_000);
});
