/**
 * @module store/sql-pg
 * The PostgreSQL implementation of the storage interface (`Sql`, store/sql.ts) over a `Bun.SQL` pool
 * (`storage: postgres://…`). Statements are written with `?` placeholders (the subset both engines
 * accept); this module numbers them `$1`, `$2` … outside quotes and comments ({@link numberPlaceholders}).
 *
 * Values: booleans are bound as 0/1 integers and boolean results come back as 0/1 (as SQLite stores them);
 * `bigint` results (int8 columns, `count(*)`, `sum`) come back as JS numbers, and a value past
 * `Number.MAX_SAFE_INTEGER` (2^53 − 1) is refused with an error rather than rounded.
 *
 * Transactions run at PostgreSQL's default isolation, READ COMMITTED (SQLite's `BEGIN IMMEDIATE` is
 * serial): a read-then-write must be one statement (`UPDATE … SET n = n + 1 … RETURNING`,
 * `INSERT … ON CONFLICT`) to be safe beside other processes.
 *
 * Failures reaching the server (refused, timed out, closed, authentication, unknown database, server
 * shutting down) become `AirlockError("storage_unavailable")`; the URL in any message is
 * {@link redactUrl redacted}: the password never appears in an error, a log line or `airlock doctor`.
 */
import { SQL } from "bun";
import { AirlockError } from "../errors.ts";
import { isPostgresUrl, redactUrl } from "./pg-url.ts";
import type { Sql, SqlRunResult, SqlValue } from "./sql.ts";

export { isPostgresUrl, redactUrl };

/** Pool settings of {@link pgSql}. */
export interface PgSqlOptions {
  /** Pool size (connections). Default 10. */
  max?: number;
  /** Seconds to wait for a connection to open before `storage_unavailable`. Default 10. */
  connectionTimeoutS?: number;
  /** Seconds an idle pooled connection is kept. Default 30. */
  idleTimeoutS?: number;
  /**
   * Milliseconds a connection may sit idle inside an open transaction before the server ends its session
   * (PostgreSQL's `idle_in_transaction_session_timeout`), default {@link IDLE_IN_TRANSACTION_TIMEOUT_MS}.
   * Without it a node paused or stalled mid-transaction (SIGSTOP, a swapped-out VM) keeps its row locks and
   * blocks every other node's sweeper for as long as it is paused; with it the locks are released and the
   * paused node's transaction fails when it resumes (its commit is refused: nothing of it lands).
   */
  idleInTransactionTimeoutMs?: number;
}

/**
 * Default of {@link PgSqlOptions.idleInTransactionTimeoutMs}, ms: no transaction of ours waits on anything
 * but its own statements, so 10 s idle means the process is paused or stalled; below the default turn lease
 * (15 s), so a sweep is not delayed past the lease by a paused node's locks.
 */
export const IDLE_IN_TRANSACTION_TIMEOUT_MS = 10_000;

/**
 * Opens a pool on `url` (`postgres://` or `postgresql://`) and checks it with `SELECT 1`.
 * @throws AirlockError `storage_unavailable` (message names the redacted URL and says which: refused,
 *   unknown host, timeout, login refused, no such database, TLS, server busy — also as `details.reason`,
 *   see {@link connectionProblem}) when the server cannot be used; `config_invalid` when `url` is not a
 *   PostgreSQL URL or the driver cannot parse it.
 */
export async function openPgSql(url: string, opts: PgSqlOptions = {}): Promise<PgSql> {
  const sql = pgSql(url, opts);
  try {
    await sql.get("SELECT 1 AS ok");
  } catch (e) {
    await sql.close().catch(() => {});
    throw await withHostLookup(e, url);
  }
  return sql;
}

/** A pool on `url` without a first round trip (see {@link openPgSql}). @throws AirlockError `config_invalid` for a URL that is not `postgres://` / `postgresql://`. */
export function pgSql(url: string, opts: PgSqlOptions = {}): PgSql {
  if (!isPostgresUrl(url)) {
    throw new AirlockError("config_invalid", `storage: ${redactUrl(url)} is not a PostgreSQL URL (postgres://user:password@host:port/database)`);
  }
  try {
    return new PgSql(url, opts);
  } catch (e) {
    if (!refusedUrl(e)) throw e;
    throw new AirlockError("config_invalid", `the PostgreSQL URL ${redactUrl(url)} (storage: / $AIRLOCK_DATABASE_URL) cannot be used: ${scrub((e as Error).message, url)}`);
  }
}

/** True for the driver refusing the URL itself (Bun.SQL: `ERR_INVALID_URL`, `ERR_INVALID_ARG_VALUE` for port 0). */
function refusedUrl(e: unknown): boolean {
  const code = String((e as { code?: unknown } | null)?.code ?? "");
  return code === "ERR_INVALID_URL" || code === "ERR_INVALID_ARG_VALUE";
}

/** The secrets of `url` (its password raw and percent-decoded), to scrub from foreign messages. */
function secretsOf(url: string): string[] {
  const out = new Set<string>();
  try {
    const u = new URL(url);
    if (u.password) {
      out.add(u.password);
      out.add(decodeURIComponent(u.password));
    }
    for (const [k, v] of u.searchParams) if (/^pass(word)?$/i.test(k) && v) out.add(v);
  } catch {
    const m = /\/\/[^/:@]*:([^@/]*)@/.exec(url);
    if (m?.[1]) out.add(m[1]);
  }
  return [...out].filter((s) => s.length > 0);
}

/** `text` with every secret of `url` replaced by `***`. */
function scrub(text: string, url: string): string {
  let t = text;
  for (const s of secretsOf(url)) t = t.split(s).join("***");
  return t;
}

const translations = new Map<string, { text: string; count: number }>();

/**
 * Numbers the `?` placeholders of `sql` as `$1`, `$2` … (PostgreSQL), leaving alone a `?` inside a
 * single-quoted string (`''` doubled; `E'…'` with backslash escapes), a double-quoted identifier, a
 * dollar-quoted string (`$$…$$`, `$tag$…$tag$`), a `--` line comment or a `/* … *\/` block comment
 * (nested, as PostgreSQL allows). Lexical rules: PostgreSQL docs §4.1 "Lexical Structure".
 * @returns the text and the number of placeholders.
 */
export function numberPlaceholders(sql: string): { text: string; count: number } {
  const cached = translations.get(sql);
  if (cached) return cached;
  let out = "";
  let n = 0;
  let i = 0;
  const len = sql.length;
  while (i < len) {
    const c = sql[i]!;
    if (c === "?") {
      out += `$${++n}`;
      i++;
    } else if (c === "'") {
      const escapes = i > 0 && /[eE]/.test(sql[i - 1]!) && (i < 2 || !/[A-Za-z0-9_]/.test(sql[i - 2]!));
      let j = i + 1;
      while (j < len) {
        if (escapes && sql[j] === "\\") j += 2;
        else if (sql[j] === "'" && sql[j + 1] === "'") j += 2;
        else if (sql[j] === "'") break;
        else j++;
      }
      out += sql.slice(i, j + 1);
      i = j + 1;
    } else if (c === '"') {
      let j = i + 1;
      while (j < len) {
        if (sql[j] === '"' && sql[j + 1] === '"') j += 2;
        else if (sql[j] === '"') break;
        else j++;
      }
      out += sql.slice(i, j + 1);
      i = j + 1;
    } else if (c === "-" && sql[i + 1] === "-") {
      const j = sql.indexOf("\n", i);
      const end = j < 0 ? len : j;
      out += sql.slice(i, end);
      i = end;
    } else if (c === "/" && sql[i + 1] === "*") {
      let depth = 1;
      let j = i + 2;
      while (j < len && depth > 0) {
        if (sql[j] === "/" && sql[j + 1] === "*") {
          depth++;
          j += 2;
        } else if (sql[j] === "*" && sql[j + 1] === "/") {
          depth--;
          j += 2;
        } else j++;
      }
      out += sql.slice(i, j);
      i = j;
    } else if (c === "$" && (i === 0 || !/[A-Za-z0-9_$]/.test(sql[i - 1]!))) {
      const m = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(sql.slice(i));
      if (m) {
        const tag = m[0];
        const close = sql.indexOf(tag, i + tag.length);
        const end = close < 0 ? len : close + tag.length;
        out += sql.slice(i, end);
        i = end;
      } else {
        out += c;
        i++;
      }
    } else {
      out += c;
      i++;
    }
  }
  const result = { text: out, count: n };
  if (translations.size > 2000) translations.clear();
  translations.set(sql, result);
  return result;
}

/** Binds one value: booleans as 0/1 (store/sql.ts). */
function bindValue(v: SqlValue): string | number | null {
  if (typeof v === "boolean") return v ? 1 : 0;
  return v;
}

/** Converts one result value: bigint → number (refusing past 2^53), boolean → 0/1. */
function rowValue(v: unknown, column: string): unknown {
  if (typeof v === "bigint") {
    if (v > BigInt(Number.MAX_SAFE_INTEGER) || v < BigInt(Number.MIN_SAFE_INTEGER)) {
      throw new RangeError(`column ${column} holds ${v}, past 2^53: refused rather than rounded`);
    }
    return Number(v);
  }
  if (typeof v === "boolean") return v ? 1 : 0;
  return v;
}

function plainRow<T>(row: Record<string, unknown>): T {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(row)) out[k] = rowValue(row[k], k);
  return out as T;
}

/** Error codes (Bun.SQL `code` or PostgreSQL SQLSTATE `errno`) meaning the database cannot be used at all. */
function unreachable(e: unknown): boolean {
  const code = String((e as { code?: unknown } | null)?.code ?? "");
  const state = String((e as { errno?: unknown } | null)?.errno ?? "");
  if (/^ERR_POSTGRES_(CONNECTION|.*TIMEOUT|AUTHENTICATION|UNSUPPORTED_AUTHENTICATION|SASL|TLS|INVALID_SERVER|IDLE)/.test(code)) return true;
  // SQLSTATE classes 08 (connection exception), 28 (invalid authorization), 3D000 (no such database),
  // 57P01–57P03 (admin shutdown, crash shutdown, cannot connect now), 53300 (too many connections).
  return /^(08|28)/.test(state) || state === "3D000" || /^57P0[1-3]$/.test(state) || state === "53300";
}

/** Why a PostgreSQL database cannot be used, as `storage_unavailable`'s `details.reason`. */
export type PgProblem = "refused" | "unknown_host" | "timeout" | "login" | "no_database" | "tls" | "server_busy" | "unreachable";

/**
 * What an unreachable-class failure (see `unreachable`) means, from the driver's `code` and the SQLSTATE
 * `errno`: the sentence saying which, and the fix that matches it (a refused login is not "start the server").
 */
export function connectionProblem(e: unknown): { reason: PgProblem; what: string; fix: string } {
  const code = String((e as { code?: unknown } | null)?.code ?? "");
  const state = String((e as { errno?: unknown } | null)?.errno ?? "");
  const setting = "the URL (storage: / $AIRLOCK_DATABASE_URL)";
  if (/AUTHENTICATION|SASL/.test(code) || /^28/.test(state)) {
    return {
      reason: "login",
      what: state === "28000" ? "the server refused the login (no such user, or no pg_hba.conf entry for it)" : "the server refused the login (wrong password or user)",
      fix: `correct the user and password in ${setting}, or the server's pg_hba.conf`,
    };
  }
  if (state === "3D000") return { reason: "no_database", what: "the server has no such database", fix: `create it (createdb) or correct the database name in ${setting}` };
  if (/TLS/.test(code)) return { reason: "tls", what: "the TLS handshake failed", fix: `check sslmode in ${setting} and the server's ssl setting` };
  if (/^57P0|^53300$/.test(state)) return { reason: "server_busy", what: "the server is shutting down, starting up or has no free connection", fix: "wait for the server, or raise its max_connections" };
  if (/TIMEOUT/.test(code) || code === "ERR_POSTGRES_CONNECTION_FAILED" || code === "ERR_POSTGRES_IDLE_TIMEOUT") {
    return { reason: "timeout", what: "no answer in time (the connection timed out or was closed before it was established)", fix: `check that the host in ${setting} is reachable from here (firewall, network) and the server runs` };
  }
  if (code === "ERR_POSTGRES_CONNECTION_REFUSED" || /^08/.test(state)) {
    return { reason: "refused", what: "the connection was refused (nothing listens on that host and port)", fix: `start the server, or correct the host and port in ${setting}` };
  }
  return { reason: "unreachable", what: "the server cannot be reached", fix: `check that the server runs, ${setting} and its credentials` };
}

/**
 * A refused connection to a host name that does not resolve says so (Bun.SQL reports both as refused).
 * @returns `e` itself, or a `storage_unavailable` with reason `unknown_host`.
 */
async function withHostLookup(e: unknown, url: string): Promise<unknown> {
  if (!(e instanceof AirlockError) || e.details.reason !== "refused") return e;
  let host: string;
  try {
    host = new URL(url).hostname.replace(/^\[|\]$/g, "");
  } catch {
    return e;
  }
  if (host === "" || /^[\d.]+$/.test(host) || host.includes(":")) return e;
  const { lookup } = await import("node:dns/promises");
  try {
    await lookup(host);
    return e;
  } catch (le) {
    const c = (le as { code?: string }).code;
    if (c !== "ENOTFOUND" && c !== "EAI_NONAME" && c !== "EAI_AGAIN") return e;
    return new AirlockError(
      "storage_unavailable",
      `the PostgreSQL database ${redactUrl(url)} cannot be used: the host ${host} is unknown (it does not resolve: ${c}); correct the host in the URL (storage: / $AIRLOCK_DATABASE_URL) or the DNS`,
      { reason: "unknown_host" },
    );
  }
}

type Conn = InstanceType<typeof SQL>;
type Reserved = Awaited<ReturnType<Conn["reserve"]>>;
type Runner = (text: string, params: (string | number | null)[]) => Promise<unknown[] & { count?: number | null }>;

/** Shared statement code of the pool and of a transaction's connection. */
abstract class PgBase implements Sql {
  readonly dialect = "postgres" as const;
  constructor(protected readonly url: string) {}
  protected abstract runner(): Runner;

  /** Maps a failure: unreachable server → `storage_unavailable`; any other error keeps its class, password scrubbed. */
  protected fail(e: unknown): never {
    if (e instanceof AirlockError) throw e;
    const msg = scrub(e instanceof Error ? e.message : String(e), this.url);
    if (refusedUrl(e)) throw new AirlockError("config_invalid", `the PostgreSQL URL ${redactUrl(this.url)} (storage: / $AIRLOCK_DATABASE_URL) cannot be used: ${msg}`);
    if (unreachable(e)) {
      const why = connectionProblem(e);
      throw new AirlockError("storage_unavailable", `the PostgreSQL database ${redactUrl(this.url)} cannot be used: ${why.what} (${msg}); ${why.fix}`, { reason: why.reason });
    }
    if (e instanceof Error && e.message !== msg) e.message = msg;
    throw e;
  }

  private async exec(sql: string, params: readonly SqlValue[]) {
    const { text, count } = numberPlaceholders(sql);
    if (count !== params.length) throw new Error(`the statement has ${count} placeholder(s) but ${params.length} value(s) were given: ${sql.slice(0, 120)}`);
    try {
      return await this.runner()(text, params.map(bindValue));
    } catch (e) {
      this.fail(e);
    }
  }

  async all<T extends object>(sql: string, params: readonly SqlValue[] = []): Promise<T[]> {
    const rows = await this.exec(sql, params);
    return rows.map((r) => plainRow<T>(r as Record<string, unknown>));
  }

  async get<T extends object>(sql: string, params: readonly SqlValue[] = []): Promise<T | null> {
    const rows = await this.exec(sql, params);
    return rows.length ? plainRow<T>(rows[0] as Record<string, unknown>) : null;
  }

  async run(sql: string, params: readonly SqlValue[] = []): Promise<SqlRunResult> {
    const rows = await this.exec(sql, params);
    return { changes: Number(rows.count ?? 0) };
  }

  abstract transaction<T>(fn: (tx: Sql) => Promise<T>): Promise<T>;
  abstract close(): Promise<void>;
}

/** The PostgreSQL `Sql` executor: a `Bun.SQL` pool. */
export class PgSql extends PgBase {
  private readonly pool: Conn;
  private closed = false;

  constructor(url: string, opts: PgSqlOptions = {}) {
    super(url);
    this.pool = new SQL(url, {
      max: opts.max ?? 10,
      connectionTimeout: opts.connectionTimeoutS ?? 10,
      idleTimeout: opts.idleTimeoutS ?? 30,
      bigint: true,
      connection: { idle_in_transaction_session_timeout: opts.idleInTransactionTimeoutMs ?? IDLE_IN_TRANSACTION_TIMEOUT_MS },
    });
  }

  /** The URL with its password redacted (for messages and `airlock doctor`). */
  get redactedUrl(): string {
    return redactUrl(this.url);
  }

  protected runner(): Runner {
    return (text, params) => this.pool.unsafe(text, params) as unknown as ReturnType<Runner>;
  }

  /** Runs `fn` on a reserved pool connection between `BEGIN` and `COMMIT` (`ROLLBACK` when it throws). */
  async transaction<T>(fn: (tx: Sql) => Promise<T>): Promise<T> {
    let conn: Reserved;
    try {
      conn = await this.pool.reserve();
    } catch (e) {
      this.fail(e);
    }
    const tx = new PgTx(this.url, conn, 0);
    try {
      await tx.raw("BEGIN");
      let out: T;
      try {
        out = await fn(tx);
      } catch (e) {
        await conn.unsafe("ROLLBACK").catch(() => {});
        throw e;
      }
      await tx.raw("COMMIT");
      return out;
    } finally {
      conn.release();
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.close();
  }
}

/** The executor handed to a transaction's body: one reserved connection; nesting is a savepoint. */
class PgTx extends PgBase {
  constructor(
    url: string,
    private readonly conn: Reserved,
    private readonly depth: number,
  ) {
    super(url);
  }

  protected runner(): Runner {
    return (text, params) => this.conn.unsafe(text, params) as unknown as ReturnType<Runner>;
  }

  /** A statement without parameters, failures mapped. */
  async raw(text: string): Promise<void> {
    try {
      await this.conn.unsafe(text);
    } catch (e) {
      this.fail(e);
    }
  }

  async transaction<T>(fn: (tx: Sql) => Promise<T>): Promise<T> {
    const name = `sp${this.depth + 1}`;
    await this.raw(`SAVEPOINT ${name}`);
    let out: T;
    try {
      out = await fn(new PgTx(this.url, this.conn, this.depth + 1));
    } catch (e) {
      await this.raw(`ROLLBACK TO SAVEPOINT ${name}`);
      await this.raw(`RELEASE SAVEPOINT ${name}`);
      throw e;
    }
    await this.raw(`RELEASE SAVEPOINT ${name}`);
    return out;
  }

  async close(): Promise<void> {
    throw new Error("a transaction's executor cannot be closed; return from the transaction body instead");
  }
}
