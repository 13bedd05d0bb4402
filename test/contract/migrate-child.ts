/**
 * @module test/contract/migrate-child
 * A separate process for the "two processes migrate at once" contract test: waits until the start file
 * exists (so both children begin together), migrates the database, prints `{"applied":[…]}` and exits.
 * argv: `sqlite|postgres TARGET START_FILE` (TARGET: file path or URL).
 */
import { existsSync } from "node:fs";
import { MIGRATIONS } from "../../src/store/db.ts";
import { migrateSql } from "../../src/store/migrate.ts";
import { PG_MIGRATIONS } from "../../src/store/migrations-pg.ts";
import { pgSql } from "../../src/store/sql-pg.ts";
import { openSqliteFile } from "./backends.ts";

const [dialect, target, start] = process.argv.slice(2) as [string, string, string];
const sql = dialect === "postgres" ? pgSql(target, { max: 2 }) : openSqliteFile(target);
const until = Date.now() + 60_000;
while (!existsSync(start) && Date.now() < until) await Bun.sleep(5);
const applied = await migrateSql(sql, dialect === "postgres" ? PG_MIGRATIONS : MIGRATIONS);
await sql.close();
process.stdout.write(JSON.stringify({ applied }));
