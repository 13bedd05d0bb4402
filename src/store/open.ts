/**
 * @module store/open
 * Opens the store on the backend the config and environment choose (store/storage.ts `chooseStorage`):
 * the embedded SQLite database `airlock.db` in the data dir (default), or the PostgreSQL database of
 * `$AIRLOCK_DATABASE_URL` / `storage:`. Either way the dialect's migrations run first (store/migrate.ts
 * `migrateSql`), so the store is at the current schema version when this resolves.
 */
import { join } from "node:path";
import { assertNever } from "../errors.ts";
import { MIGRATIONS, openDatabase, storageError } from "./db.ts";
import { migrateSql, schemaVersionSql } from "./migrate.ts";
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

/** Opens the store of an already made choice (see {@link openStore}). */
export async function openChosen(choice: StorageChoice, sqlitePath: string): Promise<Store> {
  switch (choice.kind) {
    case "sqlite": {
      const sql = sqliteSql(openDatabase(sqlitePath, { migrate: false }));
      try {
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
