/**
 * @module test/contract/migrate-kill-child
 * A process for the "killed inside a migration" contract test: migrates the database with the real list and
 * `migrateSql`, but once a statement containing STOP_AT has run inside a migration's transaction it prints
 * `stopped\n` and waits for ever (the transaction open, uncommitted), so the parent kills it at that exact point.
 * argv: `sqlite|postgres TARGET STOP_AT`.
 */
import { MIGRATIONS } from "../../src/store/db.ts";
import { migrateSql } from "../../src/store/migrate.ts";
import { PG_MIGRATIONS } from "../../src/store/migrations-pg.ts";
import { pgSql } from "../../src/store/sql-pg.ts";
import type { Sql } from "../../src/store/sql.ts";
import { openSqliteFile } from "./backends.ts";

const [dialect, target, stopAt] = process.argv.slice(2) as [string, string, string];
const base = dialect === "postgres" ? pgSql(target, { max: 2 }) : openSqliteFile(target);

/** `tx` with `run` stopping for ever after the statement naming STOP_AT. */
function stopping(tx: Sql): Sql {
  return {
    dialect: tx.dialect,
    all: (s, p) => tx.all(s, p),
    get: (s, p) => tx.get(s, p),
    async run(s, p) {
      const r = await tx.run(s, p);
      if (s.includes(stopAt)) {
        process.stdout.write("stopped\n");
        await new Promise(() => {});
      }
      return r;
    },
    transaction: (fn) => tx.transaction((inner) => fn(stopping(inner))),
    close: () => tx.close(),
  };
}

const sql: Sql = { ...stopping(base), transaction: (fn) => base.transaction((tx) => fn(stopping(tx))), close: () => base.close() };
await migrateSql(sql, dialect === "postgres" ? PG_MIGRATIONS : MIGRATIONS);
process.stdout.write("done\n");
await base.close();
