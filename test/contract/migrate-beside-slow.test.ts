/**
 * @module test/contract/migrate-beside-slow.test
 * Two processes opening a version-12 SQLite data dir at once, when version 13's transaction (CREATE INDEX on the
 * whole audit log, then DROP INDEX) holds SQLite's write lock longer than the busy timeout (5 s): with a large log
 * it does (7.6 s at 8,000,000 audit rows here). The second process must wait for the first one's migration and
 * then find it applied — as store/db.ts and store/migrate.ts promise ("the other waits …, then skips it") —
 * not exit with `airlock: internal: database is locked` after 5 s. Real processes: a migrator held inside
 * version 13 for 9 s (test/contract/migrate-stop-child.ts), and `airlock audit` on the same data dir.
 */
import { expect, test } from "bun:test";
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MIGRATIONS } from "../../src/store/db.ts";
import { migrateSql, schemaVersionSql } from "../../src/store/migrate.ts";
import { Store } from "../../src/store/store.ts";
import { openSqliteFile } from "./backends.ts";

const CHILD = join(import.meta.dir, "migrate-stop-child.ts");
const MAIN = join(import.meta.dir, "../../src/main.ts");
/** How long the first process holds version 13's transaction open: well past the 5 s busy timeout. */
const HOLD_MS = 9000;

test("a process started while another holds version 13's transaction past the busy timeout waits for it, then finds 13 applied", async () => {
  const dir = mkdtempSync(join(tmpdir(), "airlock-slow-migrate-"));
  try {
    const dataDir = join(dir, "data");
    mkdirSync(dataDir);
    const file = join(dataDir, "airlock.db");
    const sql = openSqliteFile(file);
    await migrateSql(sql, MIGRATIONS.filter((m) => m.version <= 12));
    await new Store(sql).audit({ kind: "card_decision", outcome: "refused", request_id: "act_1", decision: "allow_once", code: "not_found" });
    await sql.close();

    // the first process: inside version 13's transaction, past its CREATE INDEX, holding the write lock
    const first = spawn(process.execPath, [CHILD, "sqlite", file, "CREATE INDEX IF NOT EXISTS audit_decision_request", String(HOLD_MS)], { stdio: ["ignore", "pipe", "pipe"] });
    let firstOut = "";
    let firstErr = "";
    first.stderr.on("data", (d) => (firstErr += d));
    const firstDone = new Promise<number | null>((r) => first.on("close", (code) => r(code)));
    await new Promise<void>((resolve, reject) => {
      first.stdout.on("data", (d) => {
        firstOut += d;
        if (firstOut.includes("stopped\n")) resolve();
      });
      first.on("close", () => reject(new Error(`the first process ended before it stopped: ${firstOut} ${firstErr}`)));
    });

    // the second process: `airlock audit` on the same data dir, started while the first holds the lock
    const started = Date.now();
    const second = Bun.spawn([process.execPath, MAIN, "audit", "--data-dir", dataDir, "--json"], { stdout: "pipe", stderr: "pipe", env: { ...process.env, HOME: dir } });
    const [out, err, code] = await Promise.all([new Response(second.stdout).text(), new Response(second.stderr).text(), second.exited]);
    const waited = Date.now() - started;

    expect(await firstDone).toBe(0);
    // version 13 and every later one (14: the audit ids) are applied by the first process
    const due = MIGRATIONS.filter((m) => m.version > 12).map((m) => m.version);
    expect(firstOut).toContain(`applied ${JSON.stringify(due)}`);
    // stderr: at most the notice that it waits (said once it has waited past the busy timeout for a due version)
    const notice = "airlock: another process holds the database while schema version 13 is due (it is applying it); waiting for it (up to 10 min)";
    expect({ code, err: err.split("\n").filter((l) => l !== "" && l !== notice) }).toEqual({ code: 0, err: [] });
    expect(out).toContain("act_1");
    // it did wait (past the busy timeout) for the first one's commit
    expect(waited).toBeGreaterThan(5000);

    const after = openSqliteFile(file);
    expect(await schemaVersionSql(after)).toBe(due.at(-1)!);
    expect((await after.all("SELECT version FROM schema_version WHERE version = 13")).length).toBe(1);
    await after.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 120_000);
