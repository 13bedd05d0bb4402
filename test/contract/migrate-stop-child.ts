/**
 * @module test/contract/migrate-stop-child
 * A migrator for the contract tests that stop inside a migration: migrates the database with the real list and
 * `migrateSql`, but once a statement containing STOP_AT has run inside a migration's transaction it prints
 * `stopped\n` and then either waits for ever (HOLD_MS `forever`: the transaction open, uncommitted, so the parent
 * kills it at that exact point — "killed inside a migration") or holds the transaction, and so SQLite's write lock,
 * HOLD_MS more and goes on and commits, as version 13's CREATE INDEX does on a large audit log (7.6 s at 8,000,000
 * rows on the 2-core test machine — "start beside a long migration"). Prints `applied [versions]` when done.
 * argv: `sqlite|postgres TARGET STOP_AT HOLD_MS|forever`.
 */
import { MIGRATIONS } from "../../src/store/db.ts";
import { migrateSql } from "../../src/store/migrate.ts";
import { PG_MIGRATIONS } from "../../src/store/migrations-pg.ts";
import { pgSql } from "../../src/store/sql-pg.ts";
import type { Sql } from "../../src/store/sql.ts";
import { openSqliteFile } from "./backends.ts";

const [dialect, target, stopAt, hold] = process.argv.slice(2) as [string, string, string, string];
const base = dialect === "postgres" ? pgSql(target, { max: 2 }) : openSqliteFile(target);
const pause = (): Promise<unknown> => (hold === "forever" ? new Promise(() => {}) : Bun.sleep(Number(hold)));

/** `tx` with `run` pausing after the statement naming STOP_AT. */
function stopping(tx: Sql): Sql {
  return {
    dialect: tx.dialect,
    all: (s, p) => tx.all(s, p),
    get: (s, p) => tx.get(s, p),
    async run(s, p) {
      const r = await tx.run(s, p);
      if (s.includes(stopAt)) {
        process.stdout.write("stopped\n");
        await pause();
      }
      return r;
    },
    transaction: (fn) => tx.transaction((inner) => fn(stopping(inner))),
    close: () => tx.close(),
  };
}

const sql: Sql = { ...stopping(base), transaction: (fn) => base.transaction((tx) => fn(stopping(tx))), close: () => base.close() };
process.stdout.write(`applied ${JSON.stringify(await migrateSql(sql, dialect === "postgres" ? PG_MIGRATIONS : MIGRATIONS))}\n`);
await base.close();
