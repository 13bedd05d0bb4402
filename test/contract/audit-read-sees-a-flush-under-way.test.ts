/**
 * A read of the decision log sees every row logged before it, also rows whose buffered write was already under way
 * when the read came (the `auditSoon` timer's or `AUDIT_FLUSH_ROWS`' flush). That write takes its rows out of the
 * buffer before its transaction commits; the read's own flush found nothing to write and, on PostgreSQL, queried on
 * another connection before that commit: 0 rows (a fresh-clone CI run of test/e2e/postgres-storage.test.ts, GET
 * /audit right after the turn). Both backends; the flush under way is started, not awaited, then the log is read.
 */
import { expect, test } from "bun:test";
import { MIGRATIONS } from "../../src/store/db.ts";
import { migrateSql } from "../../src/store/migrate.ts";
import { PG_MIGRATIONS } from "../../src/store/migrations-pg.ts";
import { queryAudit } from "../../src/store/audit-log.ts";
import { Store } from "../../src/store/store.ts";
import { contract } from "./backends.ts";

contract("a read of the decision log waits for a buffered write under way", (backend) => {
  test("the rows of a flush started just before the read are in its answer, every round", async () => {
    const sql = (await backend.fresh()).open();
    await migrateSql(sql, backend.dialect === "postgres" ? PG_MIGRATIONS : MIGRATIONS);
    const store = new Store(sql);
    let logged = 0;
    for (let round = 0; round < 30; round++) {
      for (let i = 0; i < 5; i++) store.auditSoon({ kind: "call_judged", outcome: "recorded", decision: "allow", detail: { round, i } });
      logged += 5;
      const underWay = store.flushAudit(); // as the timer's would: not awaited
      const rows = await queryAudit(store, { limit: null });
      expect(rows.length).toBe(logged);
      await underWay;
    }
  });
});
