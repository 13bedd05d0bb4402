/**
 * @module test/contract/audit-index-upgrade-child
 * One start-up of a process on a SQLite file, as createRuntime does it: migrate (through `migrateSql`), mark the
 * turns of dead processes interrupted, close the orphan cards. Prints `{"closed":[…]}`. argv: `FILE`.
 */
import { interruptOrphanCards } from "../../src/card/recovery.ts";
import { MIGRATIONS, openDatabase } from "../../src/store/db.ts";
import { migrateSql } from "../../src/store/migrate.ts";
import { sqliteSql } from "../../src/store/sql-sqlite.ts";
import { Store } from "../../src/store/store.ts";

const sql = sqliteSql(openDatabase(process.argv[2]!, { migrate: false }));
await migrateSql(sql, MIGRATIONS);
const store = new Store(sql);
await store.markInterruptedTurns();
const closed = await interruptOrphanCards(store);
process.stdout.write(`${JSON.stringify({ closed })}\n`);
await store.close();
