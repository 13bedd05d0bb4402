/**
 * @module test/contract/audit-index.test
 * Schema version 13 (the `audit` table's request index holds `card_decision` rows only: issue 20), on both
 * backends: a process SIGKILLed inside the version's transaction — after its CREATE INDEX, after its DROP INDEX —
 * leaves a database that opens at version 12 with its old index and every row, and the next start applies
 * it; and the decision log's reads return the same rows on versions 12 and 13.
 */
import { expect, test } from "bun:test";
import { interruptOrphanCards } from "../../src/card/recovery.ts";
import { MIGRATIONS } from "../../src/store/db.ts";
import { migrateSql, schemaVersionSql, type Migration } from "../../src/store/migrate.ts";
import { PG_MIGRATIONS } from "../../src/store/migrations-pg.ts";
import { exportAudit, queryAudit } from "../../src/store/audit-log.ts";
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

const S = { root: "ses_root", kid: "ses_kid", other: "ses_other" };

/** Sessions (a root with a child, another root), a turn that ended, and audit rows of every kind the runtime writes. */
async function fill(sql: Sql): Promise<void> {
  const now = "2026-12-02T10:00:00.000Z";
  for (const [id, parent] of [[S.root, null], [S.kid, S.root], [S.other, null]] as const) {
    await sql.run("INSERT INTO sessions (id, parent_session_id, workspace, mode, sandbox, provider, created_at, updated_at) VALUES (?, ?, '/w', 'smart', 'read-only', 'scripted', ?, ?)", [id, parent, now, now]);
  }
  await sql.run("INSERT INTO turns (id, session_id, status, started_at) VALUES ('turn_done', ?, 'completed', ?)", [S.kid, now]);
  const store = new Store(sql);
  for (let i = 0; i < 60; i++) {
    const req = `act_${String(i).padStart(4, "0")}`;
    const home = i % 3 === 0 ? S.other : S.kid;
    await store.audit({ kind: "card_parked", outcome: "recorded", request_id: req, session_id: home, home_session_id: home, detail: { tool: "developer__shell", turn_id: "turn_done" } });
    if (i % 4 === 0) continue; // never answered: recovery closes these
    if (i % 4 === 1) await store.audit({ kind: "card_decision", outcome: "refused", request_id: req, session_id: S.other, home_session_id: home, decision: "allow_once", code: "outside_scope", detail: { proof: false } });
    const decision = i % 4 === 3 ? "deny" : "allow_once";
    await store.audit({ kind: "card_decision", outcome: "accepted", request_id: req, session_id: S.root, home_session_id: home, decision, actor: "console", detail: { proof: i % 2 === 0 } });
    await store.audit({ kind: "call_judged", outcome: "recorded", request_id: req, session_id: home, home_session_id: home, decision: "ask", detail: { ran: decision !== "deny" } });
  }
  await store.audit({ kind: "call_judged", outcome: "recorded", session_id: S.root, home_session_id: S.root, decision: "allow", detail: { ran: true } });
  await store.audit({ kind: "card_decision", outcome: "refused", request_id: "act_none", decision: "allow_once", code: "not_found", detail: { proof: false } });
}

/** Every read of the decision log in src/, on `sql`. */
async function reads(sql: Sql): Promise<unknown> {
  const store = new Store(sql);
  const exported: unknown[] = [];
  for await (const r of exportAudit(store, { session: S.root })) exported.push(r);
  const proof = [];
  for (const req of ["act_0001", "act_0002", "act_0003", "act_0004", "act_none"]) {
    // the answer's proof, as gate/decision-log.ts writeCallJudged reads it
    proof.push(await sql.get("SELECT detail, actor FROM audit WHERE request_id = ? AND kind = 'card_decision' AND outcome = 'accepted' ORDER BY id DESC LIMIT 1", [req]));
  }
  return {
    all: await queryAudit(store, { limit: null }),
    tree: await queryAudit(store, { session: S.root }),
    kid: await queryAudit(store, { session: S.kid, decision: "allow_once", limit: 7 }),
    since: await queryAudit(store, { session: S.other, since: { id: 40 } }),
    exported,
    proof,
    byRequest: [await store.listAudit({ request_id: "act_0005" }), await store.listAudit({ request_id: "act_0008", kind: "card_parked" })],
    // recovery: the cards it closes and the rows it writes (times aside)
    interrupted: await interruptOrphanCards(store),
    after: await store.listAudit(),
  };
}

contract("audit request index (schema version 13)", (backend) => {
  const list: readonly Migration[] = backend.dialect === "postgres" ? PG_MIGRATIONS : MIGRATIONS;
  const upTo12 = list.filter((m) => m.version <= 12);
  const upTo13 = list.filter((m) => m.version <= 13); // version 14 (audit ids) has its own test: audit-ids.test.ts

  for (const stopAt of ["CREATE INDEX IF NOT EXISTS audit_decision_request", "DROP INDEX IF EXISTS audit_request"]) {
    test(`SIGKILL inside version 13 after "${stopAt}": opens at version 12 with its index and every row; the next start applies it`, async () => {
      const db = await backend.fresh();
      const sql = db.open();
      await migrateSql(sql, upTo12);
      await fill(sql);
      const rows = await sql.all("SELECT * FROM audit ORDER BY id");
      expect(await auditIndexes(sql)).toEqual(["audit_home_session", "audit_request", "audit_session"]);

      await killInsideMigration(backend.dialect, db.target, stopAt);

      const again = db.open();
      expect(await schemaVersionSql(again)).toBe(12);
      expect(await auditIndexes(again)).toEqual(["audit_home_session", "audit_request", "audit_session"]);
      expect(await again.all("SELECT * FROM audit ORDER BY id")).toEqual(rows);
      expect(await migrateSql(again, upTo13)).toEqual([13]);
      expect(await auditIndexes(again)).toEqual(["audit_decision_request", "audit_home_session", "audit_session"]);
      expect(await again.all("SELECT * FROM audit ORDER BY id")).toEqual(rows);
    }, 120_000);
  }

  test("the decision log's reads return the same rows at versions 12, 13 and 14", async () => {
    const old = (await backend.fresh()).open();
    const cur = (await backend.fresh()).open();
    const v14 = (await backend.fresh()).open(); // version 14: audit ids, a partial audit_home_session (audit-ids.test.ts)
    for (const s of [old, cur, v14]) {
      await migrateSql(s, upTo12);
      await fill(s);
    }
    expect(await migrateSql(cur, upTo13)).toEqual([13]);
    expect(await auditIndexes(cur)).toEqual(["audit_decision_request", "audit_home_session", "audit_session"]);
    expect(await migrateSql(v14, list)).toEqual([13, 14]);
    // the rows' times differ between the databases (written a moment apart): compared without them
    const timeless = (x: unknown): unknown => JSON.parse(JSON.stringify(x, (k, v: unknown) => (k === "at" ? "" : v)));
    const a = timeless(await reads(old));
    const b = timeless(await reads(cur));
    expect(b).toEqual(a);
    expect(timeless(await reads(v14))).toEqual(a);
    expect((a as { interrupted: string[] }).interrupted.length).toBe(15);
  }, 120_000);
});
