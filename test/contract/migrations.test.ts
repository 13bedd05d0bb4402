/**
 * @module test/contract/migrations.test
 * Migrations on both dialects (src/store/migrate.ts): the SQLite and PostgreSQL lists have the same
 * versions and names; a fresh database gets every version; a rerun applies nothing and keeps the data;
 * two processes migrating one fresh database at once apply each version exactly once; a failing version
 * is rolled back alone; a database recording a version this airlock does not know is refused.
 */
import { describe, expect, test } from "bun:test";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MIGRATIONS } from "../../src/store/db.ts";
import { type Migration, migrateSql, schemaVersionSql, statements } from "../../src/store/migrate.ts";
import { PG_MIGRATIONS } from "../../src/store/migrations-pg.ts";
import { AirlockError } from "../../src/errors.ts";
import { contract } from "./backends.ts";

const CHILD = join(import.meta.dir, "migrate-child.ts");

describe("migration lists", () => {
  test("SQLite and PostgreSQL lists have the same versions and names, numbered 1..N without gaps", () => {
    const shape = (l: readonly Migration[]) => l.map((m) => ({ version: m.version, name: m.name }));
    expect(shape(PG_MIGRATIONS)).toEqual(shape(MIGRATIONS));
    expect(MIGRATIONS.map((m) => m.version)).toEqual(MIGRATIONS.map((_, i) => i + 1));
  });

  test("statements() splits at ; and drops empty pieces", () => {
    expect(statements(" CREATE TABLE a (x INT);\n  CREATE INDEX i ON a(x);\n ")).toEqual(["CREATE TABLE a (x INT)", "CREATE INDEX i ON a(x)"]);
    // a dollar-quoted body keeps its semicolons
    expect(statements("CREATE FUNCTION f() RETURNS trigger LANGUAGE plpgsql AS $fn$ BEGIN PERFORM 1; RETURN NULL; END $fn$; SELECT 1;")).toEqual([
      "CREATE FUNCTION f() RETURNS trigger LANGUAGE plpgsql AS $fn$ BEGIN PERFORM 1; RETURN NULL; END $fn$",
      "SELECT 1",
    ]);
  });
});

function runChild(dialect: string, target: string, start: string): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [CHILD, dialect, target, start], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    p.stdout.on("data", (d) => (out += d));
    p.stderr.on("data", (d) => (err += d));
    p.on("close", (code) => resolve({ code, out, err }));
  });
}

contract("migrations", (backend) => {
  const list = backend.dialect === "postgres" ? PG_MIGRATIONS : MIGRATIONS;
  const all = list.map((m) => m.version);
  const latest = Math.max(...all);

  test("a fresh database gets every version; a rerun applies nothing and keeps the data", async () => {
    const sql = (await backend.fresh()).open();
    expect(await schemaVersionSql(sql)).toBe(0);
    expect(await migrateSql(sql, list)).toEqual(all);
    expect(await schemaVersionSql(sql)).toBe(latest);
    const now = new Date().toISOString();
    await sql.run("INSERT INTO sessions (id, workspace, mode, sandbox, provider, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)", ["s1", "/w", "smart", "read-only", "scripted", now, now]);
    expect(await migrateSql(sql, list)).toEqual([]);
    expect(await sql.get("SELECT id, headless, privacy FROM sessions")).toEqual({ id: "s1", headless: 0, privacy: "public" });
    const recorded = await sql.all<{ version: number; name: string }>("SELECT version, name FROM schema_version ORDER BY version");
    expect(recorded).toEqual(list.map((m) => ({ version: m.version, name: m.name })));
  });

  test("two processes migrating one fresh database at once apply each version exactly once", async () => {
    const db = await backend.fresh();
    const dir = mkdtempSync(join(tmpdir(), "airlock-migrate-race-"));
    try {
      const start = join(dir, "go");
      const kids = [runChild(backend.dialect, db.target, start), runChild(backend.dialect, db.target, start), runChild(backend.dialect, db.target, start)];
      await Bun.sleep(300); // not for correctness: gives the children a chance to be waiting together
      writeFileSync(start, "");
      const results = await Promise.all(kids);
      for (const r of results) expect({ code: r.code, err: r.err }).toEqual({ code: 0, err: "" });
      const applied = results.flatMap((r) => (JSON.parse(r.out) as { applied: number[] }).applied).sort((a, b) => a - b);
      expect(applied).toEqual(all);
      const sql = db.open();
      expect(await sql.get("SELECT COUNT(*) AS c FROM schema_version")).toEqual({ c: all.length });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  test("a failing version is rolled back alone: earlier ones stay, its table is not left behind", async () => {
    const sql = (await backend.fresh()).open();
    await migrateSql(sql, list);
    const bad: Migration = { version: latest + 1, name: "broken", sql: "CREATE TABLE half_done (x INTEGER); INSERT INTO no_such_table VALUES (1)" };
    await expect(migrateSql(sql, [...list, bad])).rejects.toThrow(/no_such_table/);
    expect(await schemaVersionSql(sql)).toBe(latest);
    expect(await sql.get("SELECT COUNT(*) AS c FROM schema_version WHERE version = ?", [latest + 1])).toEqual({ c: 0 });
    await expect(sql.get("SELECT x FROM half_done")).rejects.toThrow(/half_done/);
  });

  test("a database recording a version this airlock does not know is refused, untouched", async () => {
    const sql = (await backend.fresh()).open();
    await migrateSql(sql, list);
    await sql.run("INSERT INTO schema_version (version, name, applied_at) VALUES (?, ?, ?)", [latest + 5, "from the future", new Date().toISOString()]);
    const err = await migrateSql(sql, list).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AirlockError);
    expect((err as AirlockError).code).toBe(backend.dialect === "postgres" ? "storage_unavailable" : "data_dir_unusable");
    expect((err as Error).message).toContain(String(latest + 5));
    expect(await schemaVersionSql(sql)).toBe(latest + 5);
  });
});
