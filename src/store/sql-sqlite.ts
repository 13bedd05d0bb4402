/**
 * @module store/sql-sqlite
 * The embedded implementation of the storage interface (`Sql`, store/sql.ts) over one bun:sqlite
 * connection. Statements run synchronously and their promise is already settled, so the default
 * backend costs one microtask per statement. A transaction holds the connection: statements from
 * outside it wait until it commits or rolls back, so they never run inside someone else's transaction.
 * On a database file the WAL checkpoint runs beside the commits, not inside them (store/checkpoint.ts): every
 * write (`run`, a transaction, `all`/`get` of a statement with `RETURNING`) is noted to its checkpointer.
 */
import type { Database, SQLQueryBindings } from "bun:sqlite";
import { raiseAutoCheckpoint, WalCheckpointer, type WalCheckpointerOptions } from "./checkpoint.ts";
import type { Sql, SqlRunResult, SqlValue } from "./sql.ts";

type Bindings = SQLQueryBindings[];

/**
 * Wraps an open bun:sqlite `Database` (see store/db.ts `openDatabase`) as an `Sql` executor. On a file in
 * WAL mode it takes the connection's checkpoints off its commits (store/checkpoint.ts `WalCheckpointer`).
 */
export function sqliteSql(db: Database): SqliteSql {
  return new SqliteSql(db);
}

/** The SQLite `Sql` executor. `db` stays reachable for SQLite-only callers (file name, backups). */
export class SqliteSql implements Sql {
  readonly dialect = "sqlite" as const;
  /** Resolves when the open transaction (if any) ends. */
  private held: Promise<void> | null = null;
  private closed = false;
  /** Writes waiting at the checkpoint thread's gate: `close()` lets them run first (they were asked for before it). */
  private readonly gateWaits = new Set<Promise<unknown>>();
  /** The WAL checkpointer of a database file in WAL mode; null in memory. */
  readonly checkpointer: WalCheckpointer | null;

  /** @param checkpoint the checkpointer's options (tests; defaults: store/checkpoint.ts's constants and thread). */
  constructor(
    readonly db: Database,
    checkpoint: WalCheckpointerOptions = {},
  ) {
    const wal = db.filename !== "" && db.filename !== ":memory:" && db.query<{ journal_mode: string }, []>("PRAGMA journal_mode").get()?.journal_mode === "wal";
    if (wal) raiseAutoCheckpoint(db);
    this.checkpointer = wal ? new WalCheckpointer(db, checkpoint) : null;
  }

  async all<T extends object>(sql: string, params: readonly SqlValue[] = []): Promise<T[]> {
    const write = sql.includes("RETURNING"); // a write that answers rows
    for (let w; (w = write ? this.writeWait() : this.held); ) await w;
    try {
      return this.db.query<T, Bindings>(sql).all(...(params as Bindings));
    } finally {
      if (write) this.checkpointer?.noteWrite();
    }
  }

  async get<T extends object>(sql: string, params: readonly SqlValue[] = []): Promise<T | null> {
    const write = sql.includes("RETURNING"); // a write that answers rows
    for (let w; (w = write ? this.writeWait() : this.held); ) await w;
    try {
      return this.db.query<T, Bindings>(sql).get(...(params as Bindings)) ?? null;
    } finally {
      if (write) this.checkpointer?.noteWrite();
    }
  }

  async run(sql: string, params: readonly SqlValue[] = []): Promise<SqlRunResult> {
    for (let w; (w = this.writeWait()); ) await w;
    try {
      return { changes: this.db.query(sql).run(...(params as Bindings)).changes };
    } finally {
      this.checkpointer?.noteWrite();
    }
  }

  async transaction<T>(fn: (tx: Sql) => Promise<T>): Promise<T> {
    for (let w; (w = this.writeWait()); ) await w;
    let release!: () => void;
    this.held = new Promise<void>((r) => (release = r));
    try {
      this.db.exec("BEGIN IMMEDIATE");
      try {
        const out = await fn(new SqliteTx(this.db, 0));
        this.db.exec("COMMIT");
        return out;
      } catch (e) {
        if (this.db.inTransaction) this.db.exec("ROLLBACK");
        throw e;
      }
    } finally {
      this.held = null;
      release();
      this.checkpointer?.noteWrite();
    }
  }

  /**
   * What a write must wait for first, or undefined when it may run now (then it must run in the same turn, before any
   * other statement could begin): this connection's open transaction, or the checkpoint thread starting the WAL over
   * (store/checkpoint.ts `beforeWrite`, which also counts the write). Callers loop until it is undefined.
   */
  private writeWait(): Promise<unknown> | undefined {
    if (this.held) return this.held;
    const gate = this.checkpointer?.beforeWrite();
    if (gate) {
      this.gateWaits.add(gate);
      void gate.finally(() => this.gateWaits.delete(gate));
    }
    return gate;
  }

  /**
   * Waits for the open transaction, closes the checkpoint thread's connection, lets the writes that were waiting at
   * its gate run (and the transactions among them end), empties the WAL into the database file when no other
   * connection is busy on it (a TRUNCATE checkpoint that waits for no one), and closes the connection. Idempotent.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    while (this.held) await this.held;
    if (this.checkpointer) {
      await this.checkpointer.close(); // the gate is open from here on
      while (this.gateWaits.size > 0 || this.held) await (this.held ?? Promise.all(this.gateWaits));
      try {
        this.db.exec("PRAGMA busy_timeout = 0");
        this.db.query("PRAGMA wal_checkpoint(TRUNCATE)").get();
      } catch {
        // another process holds the database: its checkpoints (or SQLite's at the last close) empty the WAL
      }
    }
    this.db.close();
  }
}

/** The executor handed to a transaction's body: runs at once on the held connection; nesting is a savepoint. */
class SqliteTx implements Sql {
  readonly dialect = "sqlite" as const;
  constructor(
    private readonly db: Database,
    private readonly depth: number,
  ) {}

  async all<T extends object>(sql: string, params: readonly SqlValue[] = []): Promise<T[]> {
    return this.db.query<T, Bindings>(sql).all(...(params as Bindings));
  }

  async get<T extends object>(sql: string, params: readonly SqlValue[] = []): Promise<T | null> {
    return this.db.query<T, Bindings>(sql).get(...(params as Bindings)) ?? null;
  }

  async run(sql: string, params: readonly SqlValue[] = []): Promise<SqlRunResult> {
    return { changes: this.db.query(sql).run(...(params as Bindings)).changes };
  }

  async transaction<T>(fn: (tx: Sql) => Promise<T>): Promise<T> {
    const name = `sp${this.depth + 1}`;
    this.db.exec(`SAVEPOINT ${name}`);
    try {
      const out = await fn(new SqliteTx(this.db, this.depth + 1));
      this.db.exec(`RELEASE ${name}`);
      return out;
    } catch (e) {
      this.db.exec(`ROLLBACK TO ${name}`);
      this.db.exec(`RELEASE ${name}`);
      throw e;
    }
  }

  async close(): Promise<void> {
    throw new Error("a transaction's executor cannot be closed; return from the transaction body instead");
  }
}
