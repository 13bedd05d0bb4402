/**
 * @module store/sql
 * The one storage interface under every store module: an async SQL executor with two implementations,
 * embedded SQLite (bun:sqlite, the default) and PostgreSQL (`Bun.SQL`, `storage: postgres://…`).
 *
 * Store modules (sessions, turns, messages, audit, session rules, trust, usage, schedules and runs,
 * cards, leases) are written once against this interface in the SQL subset both engines accept:
 * - placeholders are `?` in the text; the PostgreSQL executor numbers them (`$1`, `$2` …);
 * - values are strings, numbers, booleans (stored as 0/1 integers) and null; times are ISO-8601 text;
 *   JSON is text;
 * - `INSERT … ON CONFLICT … DO NOTHING/UPDATE` and `RETURNING` work on both; no `INSERT OR …`, no `rowid`;
 * - integers come back as JS numbers on both (PostgreSQL `bigint`/`count(*)` are converted; values past
 *   2^53 are refused rather than rounded).
 * Dialect differences live in the migrations (`MIGRATIONS` per dialect) and nowhere else.
 */

/** A value bound to a `?` placeholder. */
export type SqlValue = string | number | boolean | null;

/** The SQL dialect of an executor. */
export type SqlDialect = "sqlite" | "postgres";

/** What a write statement reports. */
export interface SqlRunResult {
  /** Rows inserted, updated or deleted by the statement. */
  changes: number;
}

/**
 * An async SQL executor. Rows are plain objects keyed by column name.
 * Errors: a failure of the engine is thrown as-is (store modules map storage failures to
 * `data_dir_unusable` / `storage_unavailable`); a statement inside `transaction` that throws rolls the
 * whole transaction back and the error is rethrown.
 */
export interface Sql {
  readonly dialect: SqlDialect;
  /** All rows of a query. */
  all<T extends object>(sql: string, params?: readonly SqlValue[]): Promise<T[]>;
  /** The first row of a query, or null. */
  get<T extends object>(sql: string, params?: readonly SqlValue[]): Promise<T | null>;
  /** Runs a write (or DDL) statement. */
  run(sql: string, params?: readonly SqlValue[]): Promise<SqlRunResult>;
  /**
   * Runs `fn` in one transaction on one connection (SQLite: `BEGIN IMMEDIATE`, other callers wait until
   * it ends; PostgreSQL: a reserved pool connection). Commits when `fn` resolves, rolls back when it
   * throws. Nested calls on `tx` are savepoints.
   */
  transaction<T>(fn: (tx: Sql) => Promise<T>): Promise<T>;
  /** Closes the executor (SQLite: the database; PostgreSQL: the pool). Idempotent. */
  close(): Promise<void>;
}
