/**
 * @module store/store
 * The repository over the database: sessions, turns, messages, audit, schedules, runs.
 * Every operation that writes more than one row runs in one transaction (no half state after a crash).
 * Written once over the async executor `Sql` (store/sql.ts) in the SQL subset both engines accept;
 * every method returns a promise.
 */
import { AirlockError } from "../errors.ts";
import { newId } from "../ids.ts";
import type { Message, MessageRole, NewSession, Session, ToolCallRequest } from "../session/types.ts";
import { openDatabase } from "./db.ts";
import type { Sql, SqlValue } from "./sql.ts";
import { sqliteSql } from "./sql-sqlite.ts";
import { currentOwner, ownerIsGone, type Owner } from "./owner.ts";

export type { NewSession };

export type TurnStatus = "running" | "completed" | "failed" | "cancelled" | "interrupted";
export interface Turn {
  id: string;
  session_id: string;
  status: TurnStatus;
  answer: string | null;
  error: string | null;
  started_at: string;
  finished_at: string | null;
}

export interface NewMessage {
  session_id: string;
  turn_id: string | null;
  role: MessageRole;
  content: string;
  tool_calls?: ToolCallRequest[];
  tool_call_id?: string;
  name?: string;
  is_error?: boolean;
  /** assistant: what its provider must be given back (session/types.ts `Message.provider_state`). */
  provider_state?: { provider: string; data: unknown };
}

export interface AuditEntry {
  kind: string;
  outcome: "accepted" | "refused" | "recorded";
  request_id?: string | null;
  session_id?: string | null;
  home_session_id?: string | null;
  decision?: string | null;
  code?: string | null;
  actor?: string | null;
  detail?: unknown;
}
export interface AuditRow extends Omit<AuditEntry, "detail"> {
  id: number;
  at: string;
  detail: unknown;
}

type SessionRow = Omit<Session, "headless"> & { headless: number };
type MessageRow = {
  seq: number;
  id: string;
  session_id: string;
  turn_id: string | null;
  role: MessageRole;
  content: string;
  tool_calls: string | null;
  tool_call_id: string | null;
  name: string | null;
  is_error: number | null;
  provider_state: string | null;
  created_at: string;
};

const now = () => new Date().toISOString();

/** Most ms a row logged with `Store.auditSoon` waits before it is written. */
export const AUDIT_FLUSH_MS = 20;
/** Most flushes `Store.close` runs for rows logged while it flushes. */
const CLOSE_FLUSH_ROUNDS = 8;
/** Rows `Store.auditSoon` buffers before writing them at once. */
export const AUDIT_FLUSH_ROWS = 256;
/** The public columns of a turn (the owner columns stay internal). */
const TURN_COLUMNS = "id, session_id, status, answer, error, started_at, finished_at";

function toSession(r: SessionRow): Session {
  return { ...r, headless: r.headless === 1 };
}

function toMessage(r: MessageRow): Message {
  const m: Message = { id: r.id, session_id: r.session_id, turn_id: r.turn_id, role: r.role, content: r.content, created_at: r.created_at };
  if (r.tool_calls) m.tool_calls = JSON.parse(r.tool_calls) as ToolCallRequest[];
  if (r.tool_call_id) m.tool_call_id = r.tool_call_id;
  if (r.name) m.name = r.name;
  if (r.is_error !== null) m.is_error = r.is_error === 1;
  if (r.provider_state) m.provider_state = JSON.parse(r.provider_state) as { provider: string; data: unknown };
  return m;
}

/**
 * The store. Open the embedded database with `await Store.open(path)`, or wrap any `Sql` executor
 * (PostgreSQL) with `new Store(sql)` after its migrations ran; close with `await close()`.
 */
export class Store {
  /** Stored parent links (a session's parent never changes once stored): filled on every read and write of a session. */
  private readonly parents = new Map<string, string | null>();

  constructor(readonly sql: Sql) {}

  /**
   * Opens (creating it when missing) the SQLite database at `path` (`:memory:` for a throwaway one), runs its
   * migrations (store/db.ts) and wraps it. @throws what `openDatabase` throws (`data_dir_unusable` …).
   */
  static async open(path: string): Promise<Store> {
    return new Store(sqliteSql(openDatabase(path)));
  }

  /**
   * Writes the buffered audit rows, then closes the executor. Idempotent. Rows given to {@link auditSoon} while a
   * flush of `close` runs are written too (up to {@link CLOSE_FLUSH_ROUNDS} flushes, so a caller that never stops
   * logging cannot hold `close` for ever); a row given after the executor closed is reported on stderr, not written.
   */
  async close(): Promise<void> {
    try {
      for (let round = 0; round < CLOSE_FLUSH_ROUNDS && (round === 0 || this.auditBuffer.length > 0); round++) await this.flushAudit();
    } finally {
      await this.sql.close();
    }
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  // ---- sessions -------------------------------------------------------------------------

  /**
   * Creates a session. A child (`parent_session_id` set) gets its `spawn_index` from its root's
   * `spawn_count`, incremented in the same transaction. Throws `session_not_found` for an unknown parent.
   */
  async createSession(input: NewSession, rootId?: string): Promise<Session> {
    const id = newId("ses");
    const at = now();
    const s = await this.sql.transaction(async (tx) => {
      let spawnIndex: number | null = null;
      if (input.parent_session_id) {
        if (!(await tx.get("SELECT id FROM sessions WHERE id = ?", [input.parent_session_id]))) {
          throw new AirlockError("session_not_found", `parent session ${input.parent_session_id} does not exist`);
        }
        const root = rootId ?? input.parent_session_id;
        const r = await tx.get<{ spawn_count: number }>("UPDATE sessions SET spawn_count = spawn_count + 1 WHERE id = ? RETURNING spawn_count", [root]);
        if (!r) throw new AirlockError("session_not_found", `root session ${root} does not exist`);
        spawnIndex = r.spawn_count - 1;
      }
      await tx.run(
        `INSERT INTO sessions (id, parent_session_id, workspace, mode, sandbox, privacy, headless, provider, model, spawn_index, spawn_count, title, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?)`,
        [
          id,
          input.parent_session_id ?? null,
          input.workspace,
          input.mode,
          input.sandbox,
          input.privacy,
          input.headless ? 1 : 0,
          input.provider,
          input.model ?? null,
          spawnIndex,
          input.title ?? null,
          at,
          at,
        ],
      );
      const row = await tx.get<SessionRow>("SELECT * FROM sessions WHERE id = ?", [id]);
      return toSession(row!);
    });
    this.parents.set(s.id, s.parent_session_id);
    return s;
  }

  async getSession(id: string): Promise<Session | null> {
    const r = await this.sql.get<SessionRow>("SELECT * FROM sessions WHERE id = ?", [id]);
    if (!r) return null;
    this.parents.set(r.id, r.parent_session_id);
    return toSession(r);
  }

  /** Returns the session or throws `session_not_found`. */
  async requireSession(id: string): Promise<Session> {
    const s = await this.getSession(id);
    if (!s) throw new AirlockError("session_not_found", `no session ${id}; list sessions with GET /sessions or 'airlock sessions list'`);
    return s;
  }

  async listSessions(opts: { limit?: number; parent?: string | null } = {}): Promise<Session[]> {
    const limit = opts.limit ?? 200;
    const rows =
      opts.parent === undefined
        ? await this.sql.all<SessionRow>("SELECT * FROM sessions ORDER BY created_at DESC, id DESC LIMIT ?", [limit])
        : opts.parent === null
          ? await this.sql.all<SessionRow>("SELECT * FROM sessions WHERE parent_session_id IS NULL ORDER BY created_at DESC, id DESC LIMIT ?", [limit])
          : await this.sql.all<SessionRow>("SELECT * FROM sessions WHERE parent_session_id = ? ORDER BY created_at, id LIMIT ?", [opts.parent, limit]);
    for (const r of rows) this.parents.set(r.id, r.parent_session_id);
    return rows.map(toSession);
  }

  /**
   * The parent id stored for `id` (undefined when the session does not exist). Served from memory once the
   * session was read or written in this process (parent links never change); a miss is one query.
   */
  async parentOf(id: string): Promise<string | null | undefined> {
    const known = this.parents.get(id);
    if (known !== undefined) return known;
    const r = await this.sql.get<{ parent_session_id: string | null }>("SELECT parent_session_id FROM sessions WHERE id = ?", [id]);
    if (!r) return undefined;
    if (this.parents.size > 100_000) this.parents.clear();
    this.parents.set(id, r.parent_session_id);
    return r.parent_session_id;
  }

  /** The parent id of `id` when this process already knows it (no query); undefined when it does not. */
  knownParentOf(id: string): string | null | undefined {
    return this.parents.get(id);
  }

  // ---- turns ----------------------------------------------------------------------------

  /**
   * Starts a `running` turn owned by `owner` (default this process: pid + start identity), so start-up
   * recovery in another process leaves it alone while its owner lives. `id`: the turn's id when the caller
   * made it (to register the turn before it is stored), else a new `turn_` id.
   */
  async startTurn(sessionId: string, owner: Owner = currentOwner(), id: string = newId("turn")): Promise<Turn> {
    const at = now();
    await this.sql.transaction(async (tx) => {
      await tx.run("INSERT INTO turns (id, session_id, status, started_at, owner_pid, owner_start) VALUES (?, ?, 'running', ?, ?, ?)", [
        id,
        sessionId,
        at,
        owner.pid,
        owner.start,
      ]);
      await tx.run("UPDATE sessions SET updated_at = ? WHERE id = ?", [at, sessionId]);
    });
    return { id, session_id: sessionId, status: "running", answer: null, error: null, started_at: at, finished_at: null };
  }

  async finishTurn(turnId: string, status: Exclude<TurnStatus, "running">, opts: { answer?: string | null; error?: string | null } = {}): Promise<void> {
    await this.sql.run("UPDATE turns SET status = ?, answer = ?, error = ?, finished_at = ? WHERE id = ? AND status = 'running'", [
      status,
      opts.answer ?? null,
      opts.error ?? null,
      now(),
      turnId,
    ]);
  }

  async getTurn(id: string): Promise<Turn | null> {
    return this.sql.get<Turn>(`SELECT ${TURN_COLUMNS} FROM turns WHERE id = ?`, [id]);
  }

  async listTurns(sessionId: string): Promise<Turn[]> {
    return this.sql.all<Turn>(`SELECT ${TURN_COLUMNS} FROM turns WHERE session_id = ? ORDER BY started_at, id`, [sessionId]);
  }

  /**
   * The owners of the session's `running` turns (normally at most one): the process that runs each (pid and
   * start identity, store/owner.ts; pid null for a row from before owners were recorded).
   * @throws storage errors.
   */
  async runningTurnOwners(sessionId: string): Promise<{ id: string; owner_pid: number | null; owner_start: string | null }[]> {
    return this.sql.all("SELECT id, owner_pid, owner_start FROM turns WHERE session_id = ? AND status = 'running' ORDER BY started_at, id", [sessionId]);
  }

  /**
   * Crash recovery, run at start by every process: turns left `running` by a process that is gone (see
   * `ownerIsGone`) become `interrupted`, and each tool call of theirs that has no result gets an
   * `interrupted` error result, so the history stays valid for OpenAI's and Anthropic's pairing rules.
   * Runs of a gone process become `interrupted` too. Turns and runs of live processes (a `serve` beside
   * this `run`) are not touched. One transaction. Returns how many turns were marked.
   */
  async markInterruptedTurns(isGone: (o: { pid: number | null; start: string | null }) => boolean = ownerIsGone): Promise<number> {
    const at = now();
    const appended: Message[][] = [];
    const n = await this.sql.transaction(async (tx) => {
      const turns = (
        await tx.all<{ id: string; session_id: string; owner_pid: number | null; owner_start: string | null }>(
          "SELECT id, session_id, owner_pid, owner_start FROM turns WHERE status = 'running'",
        )
      ).filter((t) => isGone({ pid: t.owner_pid, start: t.owner_start }));
      for (const t of turns) {
        await tx.run(
          "UPDATE turns SET status = 'interrupted', finished_at = ?, error = 'interrupted: the process running this turn stopped' WHERE id = ? AND status = 'running'",
          [at, t.id],
        );
        const msgs = await this.answerInterruptedCalls(tx, t.session_id, t.id);
        if (msgs.length) appended.push(msgs);
      }
      const runs = (
        await tx.all<{ id: string; owner_pid: number | null; owner_start: string | null }>("SELECT id, owner_pid, owner_start FROM runs WHERE status = 'running'")
      ).filter((r) => isGone({ pid: r.owner_pid, start: r.owner_start }));
      for (const r of runs) {
        await tx.run(
          "UPDATE runs SET status = 'interrupted', finished_at = ?, reason = COALESCE(reason, 'the server stopped while this run was going') WHERE id = ? AND status = 'running'",
          [at, r.id],
        );
      }
      return turns.length;
    });
    for (const msgs of appended) for (const fn of this.appendListeners) fn(msgs);
    return n;
  }

  /** Appends (on `tx`) an `interrupted` error result for every tool call of the turn's assistant messages that has none; returns them. */
  private async answerInterruptedCalls(tx: Sql, sessionId: string, turnId: string): Promise<Message[]> {
    const msgs = (await tx.all<MessageRow>("SELECT * FROM messages WHERE session_id = ? AND turn_id = ? ORDER BY seq", [sessionId, turnId])).map(toMessage);
    const answered = new Set(msgs.filter((m) => m.role === "tool" && m.tool_call_id).map((m) => m.tool_call_id));
    const missing = msgs.flatMap((m) => (m.role === "assistant" ? (m.tool_calls ?? []) : [])).filter((c) => !answered.has(c.id));
    if (missing.length === 0) return [];
    return this.insertMessages(
      tx,
      missing.map((c) => ({
        session_id: sessionId,
        turn_id: turnId,
        role: "tool" as const,
        content: JSON.stringify({
          error: { code: "interrupted", message: "the process running this call stopped (crash or kill) before it returned; its effect is unknown, check before repeating it" },
        }),
        tool_call_id: c.id,
        name: c.name,
        is_error: true,
      })),
    );
  }

  // ---- messages -------------------------------------------------------------------------

  /** Called with each batch {@link appendMessages} stored (store/transcript.ts writes the session transcripts). */
  private appendListeners: ((msgs: readonly Message[]) => void)[] = [];

  /**
   * Calls `fn` with every batch of messages {@link appendMessages} stores, in order, right after its
   * transaction commits (crash recovery's results: after its transaction). `fn` must not throw: it runs on
   * the path of every message. Returns a function that removes it.
   */
  onMessagesAppended(fn: (msgs: readonly Message[]) => void): () => void {
    this.appendListeners.push(fn);
    return () => {
      this.appendListeners = this.appendListeners.filter((f) => f !== fn);
    };
  }

  /** The id of the message stored just before `messageId` in its session, system messages skipped, or null (the first, or unknown). */
  async previousMessageId(messageId: string): Promise<string | null> {
    const r = await this.sql.get<{ id: string }>(
      "SELECT p.id FROM messages m JOIN messages p ON p.session_id = m.session_id AND p.seq < m.seq AND p.role <> 'system' WHERE m.id = ? ORDER BY p.seq DESC LIMIT 1",
      [messageId],
    );
    return r?.id ?? null;
  }

  /**
   * Appends messages in one transaction; returns them as stored (and hands them to the {@link onMessagesAppended} listeners).
   * On PostgreSQL fenced by the turn (SPEC §5.8): a message of a turn whose row is no longer `running` (ended, or
   * swept `interrupted` while its worker was paused) is refused, the turn row locked for the transaction so a
   * sweep cannot slip in between. SQLite (one process) is unchanged.
   * @throws AirlockError `lease_lost` (nothing stored) when a message's turn exists and is not `running`; storage errors as thrown.
   */
  async appendMessages(msgs: NewMessage[]): Promise<Message[]> {
    const stored = await this.sql.transaction(async (tx) => {
      // PostgreSQL only (fleet): on SQLite one process owns the database and never ends a turn it still runs
      const fenced = tx.dialect === "postgres" ? msgs.map((m) => m.turn_id).filter((t): t is string => t !== null && t !== undefined) : [];
      for (const turnId of new Set(fenced)) {
        // a no-op write: it takes the turn row's lock (a concurrent sweep waits for this commit, or wins first and this matches nothing)
        if ((await tx.run("UPDATE turns SET status = status WHERE id = ? AND status = 'running'", [turnId])).changes === 1) continue;
        const row = await tx.get<{ status: string }>("SELECT status FROM turns WHERE id = ?", [turnId]);
        if (row) throw new AirlockError("lease_lost", `turn ${turnId} is no longer running (${row.status}): it lost its lease or ended, so its messages are not stored`);
      }
      return await this.insertMessages(tx, msgs);
    });
    for (const fn of this.appendListeners) fn(stored);
    return stored;
  }

  private async insertMessages(tx: Sql, msgs: NewMessage[]): Promise<Message[]> {
    const at = now();
    const out: Message[] = [];
    for (const m of msgs) {
      const id = newId("msg");
      await tx.run(
        "INSERT INTO messages (id, session_id, turn_id, role, content, tool_calls, tool_call_id, name, is_error, provider_state, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
          id,
          m.session_id,
          m.turn_id,
          m.role,
          m.content,
          m.tool_calls ? JSON.stringify(m.tool_calls) : null,
          m.tool_call_id ?? null,
          m.name ?? null,
          m.is_error === undefined ? null : m.is_error ? 1 : 0,
          m.provider_state ? JSON.stringify(m.provider_state) : null,
          at,
        ],
      );
      const o: Message = { id, session_id: m.session_id, turn_id: m.turn_id, role: m.role, content: m.content, created_at: at };
      if (m.tool_calls) o.tool_calls = m.tool_calls;
      if (m.tool_call_id) o.tool_call_id = m.tool_call_id;
      if (m.name) o.name = m.name;
      if (m.is_error !== undefined) o.is_error = m.is_error;
      if (m.provider_state) o.provider_state = m.provider_state;
      out.push(o);
    }
    return out;
  }

  async appendMessage(m: NewMessage): Promise<Message> {
    return (await this.appendMessages([m]))[0]!;
  }

  async listMessages(sessionId: string): Promise<Message[]> {
    return (await this.sql.all<MessageRow>("SELECT * FROM messages WHERE session_id = ? ORDER BY seq", [sessionId])).map(toMessage);
  }

  // ---- audit ----------------------------------------------------------------------------

  /**
   * Writes one audit row now (after the rows {@link auditSoon} buffered, which keep their order). `tx`: the
   * transaction to write it in (a caller inside `sql.transaction` must pass its own, or it waits for itself).
   */
  async audit(e: AuditEntry, tx: Sql = this.sql): Promise<void> {
    // rows keep their order: deferred ones first, in one transaction with this one (one commit on the caller's path,
    // not two: a card parked just after a call's end); no flush call, and its promise, when none wait: the common case
    if (this.auditBuffer.length > 0) return this.writeBuffered(tx, [now(), e]);
    await tx.run(INSERT_AUDIT, auditParams(now(), e));
  }

  /** Rows of {@link auditSoon} not yet written, with the time each was logged. */
  private auditBuffer: [at: string, e: AuditEntry][] = [];
  private auditTimer: ReturnType<typeof setTimeout> | undefined;

  /**
   * Logs a row without writing it now (the decision log's `call_judged` rows, one per tool call: an
   * autocommit insert costs ~80 µs on a file database). Buffered rows keep the time they were logged
   * (`at`) and are written together in one transaction within {@link AUDIT_FLUSH_MS} ms, when
   * {@link AUDIT_FLUSH_ROWS} are waiting, before any {@link audit} row, on every read of the log, and on
   * `close()`. A process killed outright loses at most the rows of its last {@link AUDIT_FLUSH_MS} ms.
   * Never throws: a failed write is reported on stderr.
   */
  auditSoon(e: AuditEntry): void {
    this.auditBuffer.push([now(), e]);
    if (this.auditBuffer.length >= AUDIT_FLUSH_ROWS) this.flushAudit().catch(reportAuditFailure);
    else if (!this.auditTimer) {
      this.auditTimer = setTimeout(() => {
        this.flushAudit().catch(reportAuditFailure);
      }, AUDIT_FLUSH_MS);
      this.auditTimer.unref?.();
    }
  }

  /**
   * Writes the rows {@link auditSoon} buffered, in one transaction (a savepoint of `on` when that is a transaction).
   * @throws what the engine throws (the rows are dropped then).
   */
  async flushAudit(on: Sql = this.sql): Promise<void> {
    // a write already under way (the timer's, or AUDIT_FLUSH_ROWS') took its rows out of the buffer: a read of the log
    // after this flush must see them too, so it waits for that write (on PostgreSQL the read may use another connection)
    if (on === this.sql && this.auditWrite) await this.auditWrite;
    await this.writeBuffered(on);
  }

  /** The write of buffered rows under way, if any (settled whatever its outcome); {@link flushAudit} waits for it. */
  private auditWrite: Promise<void> | undefined;

  /**
   * {@link flushAudit}, with `then` (a row of {@link audit}) written after the buffered rows in the same transaction.
   * When that transaction fails with `then` in it, the buffered rows are written again on their own (as a flush before
   * the direct row would have): a direct row the engine refuses (a full disk with room for the small rows, a value
   * PostgreSQL rejects) must not take the rows of calls already judged with it.
   * @throws what the engine throws (for `then`: its transaction's error, `then` not written; the buffered rows are
   *   dropped only when they cannot be written on their own either).
   */
  private async writeBuffered(on: Sql, then?: [at: string, e: AuditEntry]): Promise<void> {
    const write = this.writeBufferedNow(on, then);
    const settled = write.then(
      () => {},
      () => {},
    );
    // every write under way, not only the last one started
    const prev = this.auditWrite;
    const all = prev ? Promise.all([prev, settled]).then(() => {}) : settled;
    this.auditWrite = all;
    try {
      await write;
    } finally {
      if (this.auditWrite === all) this.auditWrite = undefined;
    }
  }

  /** {@link writeBuffered}'s work. */
  private async writeBufferedNow(on: Sql, then?: [at: string, e: AuditEntry]): Promise<void> {
    if (this.auditTimer) {
      clearTimeout(this.auditTimer);
      this.auditTimer = undefined;
    }
    if (this.auditBuffer.length === 0 && !then) return;
    const rows = this.auditBuffer;
    this.auditBuffer = [];
    let written = false;
    try {
      await on.transaction(async (tx) => {
        for (const [at, e] of rows) await this.insertAudit(tx, at, e);
        if (then) await this.insertAudit(tx, then[0], then[1]);
        written = true;
      });
    } catch (e) {
      // not again when every insert ran and PostgreSQL's commit failed: a lost answer to COMMIT may hide a commit that
      // happened (the rows would be there twice); SQLite's failed COMMIT (SQLITE_FULL) is a rollback, never in doubt
      if (then && rows.length > 0 && (!written || on.dialect === "sqlite")) {
        await on
          .transaction(async (tx) => {
            for (const [at, row] of rows) await this.insertAudit(tx, at, row);
          })
          .catch(reportAuditFailure);
      }
      throw e;
    }
  }

  private async insertAudit(tx: Sql, at: string, e: AuditEntry): Promise<void> {
    await insertAuditRow(tx, at, e);
  }

  /**
   * Every audit row, oldest first, or those of one request (and kind), `detail` parsed. For tests and
   * diagnostics: no runtime path reads it. By request it reads the whole table (schema version 13 indexes
   * `request_id` for `card_decision` rows only, the runtime's by-request reads; ~20 ms at 100,000 rows).
   */
  async listAudit(filter: { request_id?: string; kind?: string } = {}): Promise<AuditRow[]> {
    await this.flushAudit();
    const rows = filter.request_id
      ? await this.sql.all<AuditRow & { detail: string | null }>("SELECT * FROM audit WHERE request_id = ? ORDER BY id", [filter.request_id])
      : await this.sql.all<AuditRow & { detail: string | null }>("SELECT * FROM audit ORDER BY id");
    return rows
      .filter((r) => !filter.kind || r.kind === filter.kind)
      .map((r) => ({ ...r, detail: r.detail ? JSON.parse(r.detail as string) : null }));
  }
}

function reportAuditFailure(err: unknown): void {
  console.error("airlock: the audit log could not be written:", err);
}

/**
 * Inserts one audit row through `tx` (any executor or transaction): `at` ISO-8601, `detail` stored as JSON
 * text. The one INSERT of the `audit` table, for `Store.audit` and for writers that need the row inside their
 * own transaction (fleet/audit.ts).
 */
export async function insertAuditRow(tx: Sql, at: string, e: AuditEntry): Promise<void> {
  await tx.run(INSERT_AUDIT, auditParams(at, e));
}

/** The one INSERT of the `audit` table. */
const INSERT_AUDIT = "INSERT INTO audit (at, kind, request_id, session_id, home_session_id, decision, outcome, code, actor, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";

/** The parameters of {@link INSERT_AUDIT} for one row. */
function auditParams(at: string, e: AuditEntry): SqlValue[] {
  return [
    at,
    e.kind,
    e.request_id ?? null,
    e.session_id ?? null,
    e.home_session_id ?? null,
    e.decision ?? null,
    e.outcome,
    e.code ?? null,
    e.actor ?? null,
    e.detail === undefined ? null : JSON.stringify(e.detail),
  ];
}
