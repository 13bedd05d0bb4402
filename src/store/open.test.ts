/**
 * @module store/open.test
 * `openStore` picks the backend: no `storage:` and no `$AIRLOCK_DATABASE_URL` is the data dir's SQLite file,
 * migrated through `migrateSql` (a file migrated by the older synchronous `migrate` is recognized: same
 * `schema_version` table); a bad `$AIRLOCK_DATABASE_URL` is `config_invalid`; an unreachable PostgreSQL is
 * `storage_unavailable` with the password redacted. PostgreSQL itself: test/e2e/postgres-storage.test.ts.
 */
import { afterAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MIGRATIONS, openDatabase } from "./db.ts";
import { schemaVersionSql } from "./migrate.ts";
import { openStore } from "./open.ts";

const dir = mkdtempSync(join(tmpdir(), "airlock-open-store-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const latest = Math.max(...MIGRATIONS.map((m) => m.version));

test("no storage configured: the data dir's airlock.db, migrated to the latest version; opened again as it is", async () => {
  const d = join(dir, "a");
  mkdirSync(d);
  for (let i = 0; i < 2; i++) {
    const store = await openStore({}, d, { env: {} });
    try {
      expect(store.sql.dialect).toBe("sqlite");
      expect(await schemaVersionSql(store.sql)).toBe(latest);
      expect(await store.sql.get("SELECT COUNT(*) AS c FROM schema_version")).toEqual({ c: MIGRATIONS.length });
    } finally {
      await store.close();
    }
  }
  expect(existsSync(join(d, "airlock.db"))).toBe(true);
});

test("a file migrated by the synchronous migrate is recognized (nothing applied twice)", async () => {
  const path = join(dir, "old.db");
  openDatabase(path).close();
  const store = await openStore({}, dir, { env: {}, dbPath: path });
  try {
    expect(await store.sql.get("SELECT COUNT(*) AS c FROM schema_version")).toEqual({ c: MIGRATIONS.length });
  } finally {
    await store.close();
  }
});

test("a bad $AIRLOCK_DATABASE_URL is config_invalid; an unreachable server is storage_unavailable, password redacted", async () => {
  await expect(openStore({}, dir, { env: { AIRLOCK_DATABASE_URL: "mysql://x:pw@h/d" } })).rejects.toMatchObject({ code: "config_invalid" });
  const err = (await openStore({ storage: "postgres://u:topsecret@127.0.0.1:1/db" }, dir, { env: {} }).catch((e: unknown) => e)) as Error & { code: string };
  expect(err.code).toBe("storage_unavailable");
  expect(err.message).not.toContain("topsecret");
  expect(err.message).toContain("postgres://u:***@127.0.0.1:1/db");
});
