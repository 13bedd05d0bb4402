/**
 * @module test/contract/old-serve-child
 * Stands for an `airlock serve` on a data dir at version 13 (test/contract/audit-ids-notice.test.ts): takes the serve
 * lock — `old`: as an airlock before version 14 wrote it (no `schema`); `new`: with this airlock's acquireServeLock,
 * as a current server does before it migrates — then writes one audit row every 50 ms, each waiting at most the 5 s
 * busy timeout as a server's do. Prints `held` once it holds the lock; on SIGTERM prints `{"ok":n,"failed":[messages]}`
 * and exits. argv: DATA_DIR old|new.
 */
import { unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { MIGRATIONS } from "../../src/store/db.ts";
import { migrateSql } from "../../src/store/migrate.ts";
import { currentOwner } from "../../src/store/owner.ts";
import { acquireServeLock, SERVE_LOCK_FILE } from "../../src/store/serve-lock.ts";
import { Store } from "../../src/store/store.ts";
import { openSqliteFile } from "./backends.ts";

const [dataDir, kind] = process.argv.slice(2) as [string, "old" | "new"];
const sql = openSqliteFile(join(dataDir, "airlock.db"));
await migrateSql(sql, MIGRATIONS.filter((m) => m.version <= 13));
const me = currentOwner();
const lock =
  kind === "new"
    ? acquireServeLock(dataDir)
    : (writeFileSync(join(dataDir, SERVE_LOCK_FILE), JSON.stringify({ pid: me.pid, start: me.start, url: null, started_at: new Date().toISOString() }), { mode: 0o600 }),
      { release: () => unlinkSync(join(dataDir, SERVE_LOCK_FILE)) });
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
