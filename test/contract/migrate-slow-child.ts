/**
 * @module test/contract/migrate-slow-child
 * A slow migrator for the "start beside a long migration" test: migrates a SQLite file with the real list and
 * `migrateSql`, but once a statement containing STOP_AT has run inside a migration's transaction it prints
 * `stopped\n` and holds the transaction (and so SQLite's write lock) HOLD_MS more — as version 13's CREATE INDEX
 * does on a large audit log (7.6 s at 8,000,000 rows on the 2-core test machine) — then goes on and commits.
 * argv: `FILE STOP_AT HOLD_MS`.
 */
import { MIGRATIONS } from "../../src/store/db.ts";
import { migrateSql } from "../../src/store/migrate.ts";
import type { Sql } from "../../src/store/sql.ts";
import { openSqliteFile } from "./backends.ts";

const [target, stopAt, holdMs] = process.argv.slice(2) as [string, string, string];
const base = openSqliteFile(target);

function slow(tx: Sql): Sql {
  return {
    dialect: tx.dialect,
    all: (s, p) => tx.all(s, p),
    get: (s, p) => tx.get(s, p),
    async run(s, p) {
      const r = await tx.run(s, p);
      if (s.includes(stopAt)) {
        process.stdout.write("stopped\n");
        await Bun.sleep(Number(holdMs));
      }
      return r;
    },
    transaction: (fn) => tx.transaction((inner) => fn(slow(inner))),
    close: () => tx.close(),
  };
}

const sql: Sql = { ...slow(base), transaction: (fn) => base.transaction((tx) => fn(slow(tx))), close: () => base.close() };
process.stdout.write(`applied ${JSON.stringify(await migrateSql(sql, MIGRATIONS))}\n`);
await base.close();
