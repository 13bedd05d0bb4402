/**
 * @module test/contract/audit-ids-notice.test
 * Schema version 14 copies the whole SQLite audit table in one transaction: ~20-45 s per million rows on the 2-core
 * test machine at load 15, during which the starting command prints nothing and answers nothing. A user waiting that
 * long with no word takes it for a hang. From 100,000 rows the process that applies the version says so on stderr
 * before the copy (once; a process that waits for it says its own line, migrate.ts); a small log says nothing.
 * Real processes: `airlock audit` on a version-13 data dir.
 */
import { Database } from "bun:sqlite";
import { expect, test } from "bun:test";
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MIGRATIONS } from "../../src/store/db.ts";
import { migrateSql, schemaVersionSql } from "../../src/store/migrate.ts";
import { openSqliteFile } from "./backends.ts";

const MAIN = join(import.meta.dir, "../../src/main.ts");
const NOTICE = "airlock: upgrading the database to schema version 14: copying the decision log";

/** A version-13 data dir whose audit table holds `rows` rows. */
async function v13(dir: string, rows: number): Promise<string> {
  const dataDir = join(dir, `data-${rows}`);
  mkdirSync(dataDir);
  const file = join(dataDir, "airlock.db");
  const sql = openSqliteFile(file);
  await migrateSql(sql, MIGRATIONS.filter((m) => m.version <= 13));
  await sql.close();
  const db = new Database(file, { strict: true });
  const ins = db.query("INSERT INTO audit (at, kind, request_id, session_id, home_session_id, decision, outcome) VALUES ('2026-12-02T10:00:00.000Z', 'call_judged', ?, NULL, NULL, 'allow', 'recorded')");
  db.transaction(() => {
    for (let i = 0; i < rows; i++) ins.run(`act_${i}`);
  })();
  db.close();
  return dataDir;
}

const OLD_SERVE = join(import.meta.dir, "old-serve-child.ts");

function audit(dataDir: string): Promise<{ code: number | null; err: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [MAIN, "audit", "--data-dir", dataDir, "--limit", "1", "--json"], { stdio: ["ignore", "pipe", "pipe"] });
    let err = "";
    p.stdout.resume();
    p.stderr.on("data", (d) => (err += d));
    p.on("close", (code) => resolve({ code, err }));
  });
}

test("applying version 14 to a large audit log says so on stderr first; a small one says nothing", async () => {
  const dir = mkdtempSync(join(tmpdir(), "airlock-v14-notice-"));
  try {
    const large = await v13(dir, 100_000);
    const small = await v13(dir, 1_000);
    const a = await audit(large);
    expect(a.code).toBe(0);
    expect(a.err.split("\n").filter((l) => l !== "")).toEqual([
      `${NOTICE} (100,000 rows) once; this takes about 20 s per million rows, and other airlock processes on this data dir wait for it`,
    ]);
    const b = await audit(small);
    expect(b).toEqual({ code: 0, err: "" });
    for (const d of [large, small]) {
      const sql = openSqliteFile(join(d, "airlock.db"));
      expect(await schemaVersionSql(sql)).toBe(14);
      await sql.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 180_000);

test("version 14 is not applied to a large log while an older airlock serve holds the data dir: data_dir_in_use, its writes go on", async () => {
  // Without the refusal the copy (~20 s per million rows) holds the write lock past that server's 5 s busy timeout:
  // measured with main's serve code beside 1,000,000 rows, 7 of its audit writes failed `database is locked`.
  const dir = mkdtempSync(join(tmpdir(), "airlock-v14-beside-serve-"));
  try {
    const dataDir = await v13(dir, 100_000);
    const old = spawn(process.execPath, [OLD_SERVE, dataDir, "old"], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let oldErr = "";
    old.stderr.on("data", (d) => (oldErr += d));
    const closed = new Promise<void>((r) => old.on("close", () => r()));
    await new Promise<void>((resolve, reject) => {
      old.stdout.on("data", (d) => {
        out += d;
        if (out.includes("held\n")) resolve();
      });
      old.on("close", () => reject(new Error(`the old server ended before it held the lock: ${out} ${oldErr}`)));
    });
    const a = await audit(dataDir);
    old.kill("SIGTERM");
    await closed;
    expect(a.code).toBe(2);
    expect(a.err).toContain("data_dir_in_use");
    expect(a.err).toContain(`an airlock serve of an older airlock (pid ${old.pid})`);
    const sql = openSqliteFile(join(dataDir, "airlock.db"));
    expect(await schemaVersionSql(sql)).toBe(13);
    await sql.close();
    const report = JSON.parse(out.split("\n").filter((l) => l.startsWith("{")).at(-1)!) as { ok: number; failed: string[] };
    expect(report.failed).toEqual([]);
    expect(report.ok).toBeGreaterThan(0);
    // the server gone (its lock released), the next start applies the version
    const b = await audit(dataDir);
    expect(b.code).toBe(0);
    const again = openSqliteFile(join(dataDir, "airlock.db"));
    expect(await schemaVersionSql(again)).toBe(14);
    await again.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 180_000);

test("a current airlock serve holding the lock (it applies version 14 itself) is not taken for an older one: the start applies or waits, exit 0", async () => {
  // the refusal above first read any live lock as an older server's: an `airlock audit` started while a new
  // `airlock serve` was still copying 1,000,000 rows exited 2 data_dir_in_use "an airlock serve of an older airlock"
  const dir = mkdtempSync(join(tmpdir(), "airlock-v14-beside-new-serve-"));
  try {
    const dataDir = await v13(dir, 100_000);
    const cur = spawn(process.execPath, [OLD_SERVE, dataDir, "new"], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let curErr = "";
    cur.stderr.on("data", (d) => (curErr += d));
    const closed = new Promise<void>((r) => cur.on("close", () => r()));
    await new Promise<void>((resolve, reject) => {
      cur.stdout.on("data", (d) => {
        out += d;
        if (out.includes("held\n")) resolve();
      });
      cur.on("close", () => reject(new Error(`the server ended before it held the lock: ${out} ${curErr}`)));
    });
    const a = await audit(dataDir);
    cur.kill("SIGTERM");
    await closed;
    expect(a.err).not.toContain("data_dir_in_use");
    expect(a.code).toBe(0);
    const sql = openSqliteFile(join(dataDir, "airlock.db"));
    expect(await schemaVersionSql(sql)).toBe(14);
    await sql.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 180_000);
