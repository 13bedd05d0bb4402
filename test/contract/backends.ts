/**
 * @module test/contract/backends
 * The two storage backends of the contract suite: one suite body (`contract(title, body)`) is declared
 * once per backend — SQLite (a temp file, WAL, 5 s busy timeout, as store/db.ts opens it) and PostgreSQL
 * (a throwaway cluster from test/pg-cluster.ts, one fresh database per `fresh()`). The PostgreSQL copy is
 * skipped, with the reason in its title, only when PostgreSQL is not installed here.
 */
import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pgSql } from "../../src/store/sql-pg.ts";
import { sqliteSql } from "../../src/store/sql-sqlite.ts";
import type { Sql, SqlDialect } from "../../src/store/sql.ts";
import { type PgCluster, pgAvailable, startPgCluster } from "../pg-cluster.ts";

/** One fresh, empty database of a backend. */
export interface FreshDatabase {
  /** SQLite: the file path; PostgreSQL: the URL (no password: trust auth). */
  target: string;
  /** Opens another executor (another connection or pool) on the same database; closed after the file's tests. */
  open(): Sql;
}

/** What a suite body gets: the backend's dialect and a way to make fresh databases. */
export interface Backend {
  dialect: SqlDialect;
  /** A new empty database (one per test keeps tests apart). */
  fresh(): Promise<FreshDatabase>;
}

/** Opens a SQLite file the way store/db.ts does (WAL, busy timeout, foreign keys). */
export function openSqliteFile(path: string): Sql {
  const db = new Database(path, { create: true, strict: true });
  db.exec("PRAGMA busy_timeout = 5000");
  db.query("PRAGMA journal_mode = WAL").get();
  db.exec("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;");
  return sqliteSql(db);
}

/**
 * Declares `body` once per backend, in `describe("<title> [sqlite]")` and `describe("<title> [postgres]")`.
 * Executors opened through `fresh().open()` are closed, the cluster stopped and temp files removed in `afterAll`.
 */
export function contract(title: string, body: (backend: Backend) => void): void {
  describe(`${title} [sqlite]`, () => {
    const dir = mkdtempSync(join(tmpdir(), "airlock-contract-"));
    const opened: Sql[] = [];
    let n = 0;
    afterAll(async () => {
      for (const s of opened) await s.close().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    });
    body({
      dialect: "sqlite",
      async fresh() {
        const path = join(dir, `db${++n}.sqlite`);
        return {
          target: path,
          open() {
            const s = openSqliteFile(path);
            opened.push(s);
            return s;
          },
        };
      },
    });
  });

  const why = pgAvailable();
  describe.skipIf(why !== null)(`${title} [postgres]${why ? ` — skipped: ${why}` : ""}`, () => {
    let cluster: PgCluster | undefined;
    const opened: Sql[] = [];
    beforeAll(async () => {
      cluster = await startPgCluster();
    }, 120_000);
    afterAll(async () => {
      for (const s of opened) await s.close().catch(() => {});
      cluster?.stop();
    });
    body({
      dialect: "postgres",
      async fresh() {
        const url = await cluster!.createDatabase();
        return {
          target: url,
          open() {
            const s = pgSql(url, { max: 4 });
            opened.push(s);
            return s;
          },
        };
      },
    });
  });
}
