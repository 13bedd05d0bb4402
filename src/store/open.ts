/**
 * @module store/open
 * Opens the store on the backend the config and environment choose (store/storage.ts `chooseStorage`):
 * the embedded SQLite database `airlock.db` in the data dir (default), or the PostgreSQL database of
 * `$AIRLOCK_DATABASE_URL` / `storage:`. Either way the dialect's migrations run first (store/migrate.ts
 * `migrateSql`), so the store is at the current schema version when this resolves.
 */
import { dirname, join } from "node:path";
import { AirlockError, assertNever } from "../errors.ts";
import { MIGRATIONS, openDatabase, storageError } from "./db.ts";
import { migrateSql, schemaVersionSql } from "./migrate.ts";
import { liveServeLock } from "./serve-lock.ts";
import type { Sql } from "./sql.ts";
import { sqliteSql } from "./sql-sqlite.ts";
import { chooseStorage, type StorageChoice } from "./storage.ts";
import { Store } from "./store.ts";

/** Options of {@link openStore}. */
export interface OpenStoreOptions {
  /** The environment holding `$AIRLOCK_DATABASE_URL`; default `process.env`. */
  env?: Readonly<Record<string, string | undefined>>;
  /** The SQLite file instead of `<dataDir>/airlock.db` (`:memory:` allowed); ignored on PostgreSQL. */
  dbPath?: string;
}

/**
 * Opens and migrates the store.
 * @param config the `storage` key of the config (absent: SQLite).
 * @param dataDir the data dir (SQLite: holds `airlock.db`).
 * @throws AirlockError `storage_unavailable` (PostgreSQL unreachable, login refused, no such database, a
 *   schema newer than this airlock, or migrations due and the user lacking CREATE on the schema — the
 *   message names the GRANT, store/pg-grants.ts; the URL's password redacted), `config_invalid` (a bad
 *   `$AIRLOCK_DATABASE_URL` or `storage:` URL), `data_dir_unusable` (SQLite: read-only, full, not a database, or newer).
 */
export async function openStore(config: { storage?: string }, dataDir: string, opts: OpenStoreOptions = {}): Promise<Store> {
  const choice = chooseStorage(config.storage, opts.env ?? process.env);
  return openChosen(choice, opts.dbPath ?? join(dataDir, "airlock.db"));
}

/**
 * SQLite: a migration that holds the write lock for many seconds (one with a `notice`, at or past its size: version
 * 14 copies the audit table, ~20 s per million rows) is not started while a live `airlock serve` of another process
 * holds the data dir's serve lock and does not know the version (its lock's `schema`): an older airlock, whose writes
 * wait 5 s for the lock, then fail `database is locked`, and the audit rows they carried are lost. The user stops it
 * and starts the new server, which applies the version itself. A server that knows the version took its lock and is
 * applying it: this start waits for that, as for any process's migration. (An older `airlock run` takes no lock and
 * cannot be seen.)
 * @throws AirlockError `data_dir_in_use` naming the server's pid, the version and the size.
 */
async function refuseLongMigrationBesideServe(sql: Sql, dataDir: string): Promise<void> {
  const other = liveServeLock(dataDir);
  if (!other) return;
  let done: Set<number>;
  try {
    done = new Set((await sql.all<{ version: number }>("SELECT version FROM schema_version")).map((r) => Number(r.version)));
  } catch {
    return; // a fresh database: nothing long to do
  }
  for (const m of MIGRATIONS) {
    // a server that knows the version applies it itself (it took the lock, then migrates): this start waits for it
    if (!m.notice || done.has(m.version) || (other.schema ?? 0) >= m.version) continue;
    const n = Number((await sql.get<{ n: number | null }>(m.notice.rows).catch(() => undefined))?.n ?? 0);
    if (n < m.notice.min) continue;
    throw new AirlockError(
      "data_dir_in_use",
      `an airlock serve of an older airlock (pid ${other.pid}${other.url ? `, listening on ${other.url}` : ""}) uses the data dir ${dataDir}, and this airlock must first apply schema version ${m.version} (${m.name}: ${n.toLocaleString("en-US")} rows), ` +
        `which holds the database's write lock longer than that server's writes wait (5 s): they would fail and their audit rows be lost. ` +
        `Stop that server and start this airlock's serve (it applies the version), then run this again`,
      { pid: other.pid, url: other.url, data_dir: dataDir, version: m.version },
    );
  }
}

/** Opens the store of an already made choice (see {@link openStore}). */
export async function openChosen(choice: StorageChoice, sqlitePath: string): Promise<Store> {
  switch (choice.kind) {
    case "sqlite": {
      const sql = sqliteSql(openDatabase(sqlitePath, { migrate: false }));
      try {
        await refuseLongMigrationBesideServe(sql, dirname(sqlitePath));
        await migrateSql(sql, MIGRATIONS);
      } catch (e) {
        await sql.close().catch(() => {});
        throw storageError(e, sqlitePath) ?? e;
      }
      return new Store(sql);
    }
    case "postgres": {
      // loaded here: a SQLite run never loads the PostgreSQL driver (bun:sql) or its migrations
      const { openPgSql } = await import("./sql-pg.ts");
      const { PG_MIGRATIONS } = await import("./migrations-pg.ts");
      const { readPgGrants, migrationGrantError } = await import("./pg-grants.ts");
      const sql = await openPgSql(choice.url);
      try {
        // migrations due and no CREATE on the schema: say which GRANT, not `permission denied for schema public`
        if ((await schemaVersionSql(sql)) < Math.max(...PG_MIGRATIONS.map((m) => m.version))) {
          const refused = migrationGrantError(await readPgGrants(sql), sql.redactedUrl);
          if (refused) throw refused;
        }
        await migrateSql(sql, PG_MIGRATIONS);
      } catch (e) {
        await sql.close().catch(() => {});
        throw e;
      }
      return new Store(sql);
    }
    default:
      return assertNever(choice);
  }
}
