/**
 * @module store/migrate
 * Applies a numbered migration list (SQLite: `MIGRATIONS` in store/db.ts; PostgreSQL: `PG_MIGRATIONS` in
 * store/migrations-pg.ts) through the storage interface (`Sql`). Idempotent: each version runs once, in
 * its own transaction, and is recorded in `schema_version (version, name, applied_at)` in that same
 * transaction, so a crash leaves either the whole version or none of it.
 *
 * Safe when several processes start at once: each version's transaction first takes the migration lock
 * (PostgreSQL: `pg_advisory_xact_lock(MIGRATION_LOCK_KEY)`, released at commit or rollback; SQLite:
 * `BEGIN IMMEDIATE`, the write lock, waiting up to the busy timeout), then checks again whether the
 * version is recorded, so the loser of the race skips it. On SQLite a version can hold the write lock longer
 * than the busy timeout (version 13 builds an index over the whole audit log: 7.6 s at 8,000,000 rows), so a
 * process refused the lock while the version is still not recorded tries again ({@link MIGRATION_WAIT_MS}).
 */
import { AirlockError } from "../errors.ts";
import type { Sql } from "./sql.ts";

/**
 * One numbered migration: `sql` is one or more statements separated by `;` (no `;` inside strings or
 * comments, except inside a PostgreSQL dollar-quoted body `$tag$ … $tag$`, e.g. a function's).
 */
export interface Migration {
  version: number;
  name: string;
  sql: string;
  /**
   * A version that can take long on a large database (it copies a whole table while holding the write lock): `rows`
   * is a query giving `n`, the size of that work (cheap: no scan); from `min` on, the process that applies the
   * version says `text` (with `{n}` replaced) on stderr before it starts, so a start that blocks for many seconds
   * is not silent.
   */
  notice?: { rows: string; min: number; text: string };
}

/** The PostgreSQL advisory lock key (a bigint) that serializes migrations across processes. */
export const MIGRATION_LOCK_KEY = 7_420_230_001;

/** Splits a migration's text into statements at `;` outside dollar-quoted bodies (`$$ … $$`, `$fn$ … $fn$`); empty ones dropped. */
export function statements(text: string): string[] {
  const out: string[] = [];
  let start = 0;
  let i = 0;
  while (i < text.length) {
    const ch = text[i];
    if (ch === "$") {
      const tag = /^\$[A-Za-z_]*\$/.exec(text.slice(i))?.[0];
      if (tag) {
        const end = text.indexOf(tag, i + tag.length);
        i = end < 0 ? text.length : end + tag.length;
        continue;
      }
    }
    if (ch === ";") {
      out.push(text.slice(start, i));
      start = i + 1;
    }
    i++;
  }
  out.push(text.slice(start));
  return out.map((s) => s.trim()).filter((s) => s.length > 0 && !/^(--[^\n]*\n?\s*)+$/.test(s));
}

/**
 * How long a SQLite start keeps asking for the write lock, past the busy timeout, while the migration it waits
 * for is still not recorded (another process is applying it), before it gives up with SQLite's error.
 */
export const MIGRATION_WAIT_MS = 10 * 60_000;

const isBusy = (e: unknown): boolean => /^SQLITE_BUSY/.test(String((e as { code?: unknown } | null)?.code ?? ""));

/**
 * Runs the migration transaction `fn`. SQLite: when the write lock stays held past the busy timeout (another
 * process inside a long migration), tries again 100 ms later while `due()` says the work is still not done, for
 * up to {@link MIGRATION_WAIT_MS}; once another process has done it, returns `done` without the lock.
 */
async function retryingBusy<T>(sql: Sql, fn: () => Promise<T>, due: () => Promise<boolean>, done: T, what: string): Promise<T> {
  const deadline = Date.now() + MIGRATION_WAIT_MS;
  for (let said = false; ; said = true) {
    try {
      return await fn();
    } catch (e) {
      if (sql.dialect !== "sqlite" || !isBusy(e) || Date.now() > deadline) throw e;
      let stillDue: boolean;
      try {
        stillDue = await due();
      } catch (e2) {
        if (!isBusy(e2) && !/schema_version/.test(e2 instanceof Error ? e2.message : String(e2))) throw e2;
        stillDue = true;
      }
      if (!stillDue) return done;
      // said once: a start that waits minutes says why rather than looking hung
      if (!said) console.error(`airlock: another process holds the database while ${what} is due (it is applying it); waiting for it (up to ${MIGRATION_WAIT_MS / 60_000} min)`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

async function lock(tx: Sql): Promise<void> {
  if (tx.dialect === "postgres") await tx.run(`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`);
  // SQLite: the transaction is BEGIN IMMEDIATE (store/sql-sqlite.ts), already the write lock
}

/**
 * Applies every version of `list` not yet recorded, in ascending order.
 * @returns the versions applied now (empty when the database was up to date).
 * @throws AirlockError `storage_unavailable` (PostgreSQL) or `data_dir_unusable` (SQLite) when the database
 *   records a version this airlock does not know (a newer airlock migrated it: refuse rather than guess);
 *   a failing statement's error as thrown by the executor (its version is rolled back, earlier ones stay).
 */
export async function migrateSql(sql: Sql, list: readonly Migration[]): Promise<number[]> {
  await retryingBusy(
    sql,
    () =>
      sql.transaction(async (tx) => {
        await lock(tx);
        await tx.run("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)");
      }),
    // (SQLite only) due while the table is missing
    async () => !(await sql.get("SELECT 1 AS one FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'")),
    undefined,
    "the schema_version table",
  );
  const known = new Set(list.map((m) => m.version));
  const done = new Set((await sql.all<{ version: number }>("SELECT version FROM schema_version")).map((r) => Number(r.version)));
  const unknown = [...done].filter((v) => !known.has(v)).sort((a, b) => a - b);
  if (unknown.length) {
    const code = sql.dialect === "postgres" ? "storage_unavailable" : "data_dir_unusable";
    throw new AirlockError(code, `the database records schema version ${unknown.join(", ")}, which this airlock does not know (it knows 1–${Math.max(0, ...known)}); a newer airlock migrated it: run that version`);
  }
  const applied: number[] = [];
  for (const m of [...list].sort((a, b) => a.version - b.version)) {
    if (done.has(m.version)) continue;
    const ran = await retryingBusy(
      sql,
      () =>
        sql.transaction(async (tx) => {
          await lock(tx);
          if (await tx.get("SELECT 1 AS one FROM schema_version WHERE version = ?", [m.version])) return false;
          if (m.notice) {
            const n = Number((await tx.get<{ n: number | null }>(m.notice.rows))?.n ?? 0);
            if (n >= m.notice.min) console.error(`airlock: ${m.notice.text.replace("{n}", n.toLocaleString("en-US"))}`);
          }
          for (const s of statements(m.sql)) await tx.run(s);
          await tx.run("INSERT INTO schema_version (version, name, applied_at) VALUES (?, ?, ?)", [m.version, m.name, new Date().toISOString()]);
          return true;
        }),
      async () => !(await sql.get("SELECT 1 AS one FROM schema_version WHERE version = ?", [m.version])),
      false,
      `schema version ${m.version}`,
    );
    if (ran) applied.push(m.version);
  }
  return applied;
}

/** The highest applied version (0 for a fresh database, or one without `schema_version`). */
export async function schemaVersionSql(sql: Sql): Promise<number> {
  try {
    const r = await sql.get<{ v: number | null }>("SELECT MAX(version) AS v FROM schema_version");
    return Number(r?.v ?? 0);
  } catch (e) {
    if (/schema_version/.test(e instanceof Error ? e.message : String(e))) return 0;
    throw e;
  }
}
