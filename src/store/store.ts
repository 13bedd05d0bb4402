/**
 * @module store/store
 * The repository over the database: sessions, turns, messages, audit, schedules, runs.
 * Every operation that writes more than one row runs in one transaction (no half state after a crash).
 */
import type { Database } from "bun:sqlite";
import { AirlockError } from "../errors.ts";
import { newId } from "../ids.ts";
import type { Message, MessageRole, NewSession, Session, ToolCallRequest } from "../session/types.ts";
import { openDatabase } from "./db.ts";
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

/** The store. Create with `Store.open(path)`; close with `close()`. */
export class Store {
  constructor(readonly db: Database) {}

  static open(path: string): Store {
    return new Store(openDatabase(path));
  }

  close(): void {
    try {
      this.flushAudit();
    } finally {
      this.db.close();
    }
  }

  [Symbol.dispose](): void {
    this.close();
  }

  // ---- sessions -------------------------------------------------------------------------

  /**
   * Creates a session. A child (`parent_session_id` set) gets its `spawn_index` from its root's
   * `spawn_count`, incremented in the same transaction. Throws `session_not_found` for an unknown parent.
   */
  createSession(input: NewSession, rootId?: string): Session {
    const id = newId("ses");
    const at = now();
    return this.db.transaction(() => {
      let spawnIndex: number | null = null;
      if (input.parent_session_id) {
        if (!this.getSession(input.parent_session_id)) {
          throw new AirlockError("session_not_found", `parent session ${input.parent_session_id} does not exist`);
        }
        const root = rootId ?? input.parent_session_id;
        const r = this.db
          .query<{ spawn_count: number }, [string]>("UPDATE sessions SET spawn_count = spawn_count + 1 WHERE id = ? RETURNING spawn_count")
          .get(root);
        if (!r) throw new AirlockError("session_not_found", `root session ${root} does not exist`);
        spawnIndex = r.spawn_count - 1;
      }
      this.db
        .query(
          `INSERT INTO sessions (id, parent_session_id, workspace, mode, sandbox, privacy, headless, provider, model, spawn_index, spawn_count, title, created_at, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?)`,
        )
        .run(
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
        );
      return this.getSession(id)!;
    }).immediate(); // IMMEDIATE: it reads then writes; a deferred one could fail at once (SQLITE_BUSY) beside another process's writer
  }

  getSession(id: string): Session | null {
    const r = this.db.query<SessionRow, [string]>("SELECT * FROM sessions WHERE id = ?").get(id);
    return r ? toSession(r) : null;
  }

  /** Returns the session or throws `session_not_found`. */
  requireSession(id: string): Session {
    const s = this.getSession(id);
    if (!s) throw new AirlockError("session_not_found", `no session ${id}; list sessions with GET /sessions or 'airlock sessions list'`);
    return s;
  }

  listSessions(opts: { limit?: number; parent?: string | null } = {}): Session[] {
    const limit = opts.limit ?? 200;
    const rows =
      opts.parent === undefined
        ? this.db.query<SessionRow, [number]>("SELECT * FROM sessions ORDER BY created_at DESC, id DESC LIMIT ?").all(limit)
        : opts.parent === null
          ? this.db.query<SessionRow, [number]>("SELECT * FROM sessions WHERE parent_session_id IS NULL ORDER BY created_at DESC LIMIT ?").all(limit)
          : this.db.query<SessionRow, [string, number]>("SELECT * FROM sessions WHERE parent_session_id = ? ORDER BY created_at LIMIT ?").all(opts.parent, limit);
    return rows.map(toSession);
  }

  /** The parent id stored for `id` (undefined when the session does not exist). */
  parentOf(id: string): string | null | undefined {
    const r = this.db.query<{ parent_session_id: string | null }, [string]>("SELECT parent_session_id FROM sessions WHERE id = ?").get(id);
    return r ? r.parent_session_id : undefined;
  }

  // ---- turns ----------------------------------------------------------------------------

  /**
   * Starts a `running` turn owned by `owner` (default this process: pid + start identity), so start-up
   * recovery in another process leaves it alone while its owner lives.
   */
  startTurn(sessionId: string, owner: Owner = currentOwner()): Turn {
    const id = newId("turn");
    const at = now();
    this.db.transaction(() => {
      this.db
        .query("INSERT INTO turns (id, session_id, status, started_at, owner_pid, owner_start) VALUES (?, ?, 'running', ?, ?, ?)")
        .run(id, sessionId, at, owner.pid, owner.start);
      this.db.query("UPDATE sessions SET updated_at = ? WHERE id = ?").run(at, sessionId);
    })();
    return { id, session_id: sessionId, status: "running", answer: null, error: null, started_at: at, finished_at: null };
  }

  finishTurn(turnId: string, status: Exclude<TurnStatus, "running">, opts: { answer?: string | null; error?: string | null } = {}): void {
    this.db
      .query("UPDATE turns SET status = ?, answer = ?, error = ?, finished_at = ? WHERE id = ? AND status = 'running'")
      .run(status, opts.answer ?? null, opts.error ?? null, now(), turnId);
  }

  getTurn(id: string): Turn | null {
    return this.db.query<Turn, [string]>(`SELECT ${TURN_COLUMNS} FROM turns WHERE id = ?`).get(id);
  }

  listTurns(sessionId: string): Turn[] {
    return this.db.query<Turn, [string]>(`SELECT ${TURN_COLUMNS} FROM turns WHERE session_id = ? ORDER BY started_at, rowid`).all(sessionId);
  }

  /**
   * Crash recovery, run at start by every process: turns left `running` by a process that is gone (see
   * `ownerIsGone`) become `interrupted`, and each tool call of theirs that has no result gets an
   * `interrupted` error result, so the history stays valid for OpenAI's and Anthropic's pairing rules.
   * Runs of a gone process become `interrupted` too. Turns and runs of live processes (a `serve` beside
   * this `run`) are not touched. One transaction. Returns how many turns were marked.
   */
  markInterruptedTurns(isGone: (o: { pid: number | null; start: string | null }) => boolean = ownerIsGone): number {
    const at = now();
    return this.db.transaction(() => {
      const turns = this.db
        .query<{ id: string; session_id: string; owner_pid: number | null; owner_start: string | null }, []>(
          "SELECT id, session_id, owner_pid, owner_start FROM turns WHERE status = 'running'",
        )
        .all()
        .filter((t) => isGone({ pid: t.owner_pid, start: t.owner_start }));
      for (const t of turns) {
        this.db
          .query("UPDATE turns SET status = 'interrupted', finished_at = ?, error = 'interrupted: the process running this turn stopped' WHERE id = ? AND status = 'running'")
          .run(at, t.id);
        this.answerInterruptedCalls(t.session_id, t.id);
      }
      const runs = this.db
        .query<{ id: string; owner_pid: number | null; owner_start: string | null }, []>("SELECT id, owner_pid, owner_start FROM runs WHERE status = 'running'")
        .all()
        .filter((r) => isGone({ pid: r.owner_pid, start: r.owner_start }));
      for (const r of runs) {
        this.db
          .query("UPDATE runs SET status = 'interrupted', finished_at = ?, reason = COALESCE(reason, 'the server stopped while this run was going') WHERE id = ? AND status = 'running'")
          .run(at, r.id);
      }
      return turns.length;
    }).immediate();
  }

  /** Appends an `interrupted` error result for every tool call of the turn's assistant messages that has none. */
  private answerInterruptedCalls(sessionId: string, turnId: string): void {
    const msgs = this.db
      .query<MessageRow, [string, string]>("SELECT * FROM messages WHERE session_id = ? AND turn_id = ? ORDER BY seq")
      .all(sessionId, turnId)
      .map(toMessage);
    const answered = new Set(msgs.filter((m) => m.role === "tool" && m.tool_call_id).map((m) => m.tool_call_id));
    const missing = msgs.flatMap((m) => (m.role === "assistant" ? (m.tool_calls ?? []) : [])).filter((c) => !answered.has(c.id));
    if (missing.length === 0) return;
    this.appendMessages(
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
   * transaction (inside an enclosing one, such as crash recovery's, before that one commits). `fn` must
   * not throw: it runs on the path of every message. Returns a function that removes it.
   */
  onMessagesAppended(fn: (msgs: readonly Message[]) => void): () => void {
    this.appendListeners.push(fn);
    return () => {
      this.appendListeners = this.appendListeners.filter((f) => f !== fn);
    };
  }

  /** The id of the message stored just before `messageId` in its session, system messages skipped, or null (the first, or unknown). */
  previousMessageId(messageId: string): string | null {
    const r = this.db
      .query<{ id: string }, [string]>(
        "SELECT p.id FROM messages m JOIN messages p ON p.session_id = m.session_id AND p.seq < m.seq AND p.role <> 'system' WHERE m.id = ? ORDER BY p.seq DESC LIMIT 1",
      )
      .get(messageId);
    return r?.id ?? null;
  }

  /** Appends messages in one transaction; returns them as stored (and hands them to the {@link onMessagesAppended} listeners). */
  appendMessages(msgs: NewMessage[]): Message[] {
    const stored = this.insertMessages(msgs);
    for (const fn of this.appendListeners) fn(stored);
    return stored;
  }

  private insertMessages(msgs: NewMessage[]): Message[] {
    const at = now();
    const ins = this.db.query(
      "INSERT INTO messages (id, session_id, turn_id, role, content, tool_calls, tool_call_id, name, is_error, provider_state, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    );
    return this.db.transaction(() =>
      msgs.map((m) => {
        const id = newId("msg");
        ins.run(
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
        );
        const out: Message = { id, session_id: m.session_id, turn_id: m.turn_id, role: m.role, content: m.content, created_at: at };
        if (m.tool_calls) out.tool_calls = m.tool_calls;
        if (m.tool_call_id) out.tool_call_id = m.tool_call_id;
        if (m.name) out.name = m.name;
        if (m.is_error !== undefined) out.is_error = m.is_error;
        if (m.provider_state) out.provider_state = m.provider_state;
        return out;
      }),
    )();
  }

  appendMessage(m: NewMessage): Message {
    return this.appendMessages([m])[0]!;
  }

  listMessages(sessionId: string): Message[] {
    return this.db.query<MessageRow, [string]>("SELECT * FROM messages WHERE session_id = ? ORDER BY seq").all(sessionId).map(toMessage);
  }

  // ---- audit ----------------------------------------------------------------------------

  audit(e: AuditEntry): void {
    this.flushAudit(); // rows keep their order: deferred ones first
    this.insertAudit(now(), e);
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
   */
  auditSoon(e: AuditEntry): void {
    this.auditBuffer.push([now(), e]);
    if (this.auditBuffer.length >= AUDIT_FLUSH_ROWS) this.flushAudit();
    else if (!this.auditTimer) {
      this.auditTimer = setTimeout(() => {
        try {
          this.flushAudit();
        } catch (err) {
          console.error("airlock: the audit log could not be written:", err);
        }
      }, AUDIT_FLUSH_MS);
      this.auditTimer.unref?.();
    }
  }

  /** Writes the rows {@link auditSoon} buffered, in one transaction. @throws what SQLite throws (the rows are dropped then). */
  flushAudit(): void {
    if (this.auditTimer) {
      clearTimeout(this.auditTimer);
      this.auditTimer = undefined;
    }
    if (this.auditBuffer.length === 0) return;
    const rows = this.auditBuffer;
    this.auditBuffer = [];
    this.db.transaction(() => {
      for (const [at, e] of rows) this.insertAudit(at, e);
    })();
  }

  private insertAudit(at: string, e: AuditEntry): void {
    this.db
      .query("INSERT INTO audit (at, kind, request_id, session_id, home_session_id, decision, outcome, code, actor, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
      .run(
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
      );
  }

  listAudit(filter: { request_id?: string; kind?: string } = {}): AuditRow[] {
    this.flushAudit();
    const rows = filter.request_id
      ? this.db.query<AuditRow & { detail: string | null }, [string]>("SELECT * FROM audit WHERE request_id = ? ORDER BY id").all(filter.request_id)
      : this.db.query<AuditRow & { detail: string | null }, []>("SELECT * FROM audit ORDER BY id").all();
    return rows
      .filter((r) => !filter.kind || r.kind === filter.kind)
      .map((r) => ({ ...r, detail: r.detail ? JSON.parse(r.detail as string) : null }));
  }
}
