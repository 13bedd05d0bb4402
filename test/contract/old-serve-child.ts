/**
 * @module test/contract/old-serve-child
 * Stands for an `airlock serve` of an older airlock on a data dir (test/contract/audit-ids-notice.test.ts): opens the
 * database at version 13 with that version's list, takes the serve lock, then writes one audit row every 50 ms,
 * each waiting at most the 5 s busy timeout as a server's do. Prints `held` once it holds the lock; on SIGTERM prints
 * `{"ok":n,"failed":[messages]}` and exits. argv: DATA_DIR.
 */
import { join } from "node:path";
import { MIGRATIONS } from "../../src/store/db.ts";
import { migrateSql } from "../../src/store/migrate.ts";
import { acquireServeLock } from "../../src/store/serve-lock.ts";
import { Store } from "../../src/store/store.ts";
import { openSqliteFile } from "./backends.ts";

const dataDir = process.argv[2]!;
const sql = openSqliteFile(join(dataDir, "airlock.db"));
await migrateSql(sql, MIGRATIONS.filter((m) => m.version <= 13));
const lock = acquireServeLock(dataDir);
const store = new Store(sql);
let ok = 0;
const failed: string[] = [];
let stop = false;
process.on("SIGTERM", () => (stop = true));
process.stdout.write("held\n");
for (let i = 0; !stop; i++) {
  try {
    await store.audit({ kind: "call_judged", outcome: "recorded", request_id: `act_old_${i}`, decision: "allow" });
    ok++;
  } catch (e) {
    failed.push(String(e));
  }
  await Bun.sleep(50);
}
lock.release();
process.stdout.write(`${JSON.stringify({ ok, failed })}\n`);
process.exit(0);
