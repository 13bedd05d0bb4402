/**
 * @module store/audit-log
 * Reading the decision log (SPEC §6 `GET /audit`, `airlock audit`): the `audit` table filtered by a session's
 * tree, a start (ISO time or audit id) and a decision or code, newest first; and every row, oldest first,
 * for `airlock audit --export jsonl`. The same query serves the API and the CLI.
 */
import { z } from "zod";
import { AirlockError } from "../errors.ts";
import type { AuditRow, Store } from "./store.ts";

/** `limit` when none is given, and the most one query returns. */
export const AUDIT_DEFAULT_LIMIT = 100;
export const AUDIT_MAX_LIMIT = 1000;

/**
 * `since`: an audit id (digits; rows with a greater id, i.e. after it) or an ISO 8601 time with a date
 * (rows at or after it), normalised to `{id}` or `{at}` (UTC ISO string).
 */
export const AuditSince = z
  .string()
  .trim()
  .min(1)
  .transform((s, ctx): { id: number } | { at: string } => {
    if (/^\d{1,15}$/.test(s)) return { id: Number(s) };
    const t = /^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(s) ? Date.parse(s) : NaN;
    if (Number.isNaN(t)) {
      ctx.addIssue({ code: "custom", message: `expected an audit id (digits) or an ISO time such as 2026-12-01T03:00:00Z, got ${JSON.stringify(s)}` });
      return z.NEVER;
    }
    return { at: new Date(t).toISOString() };
  });
export type AuditSince = z.output<typeof AuditSince>;

/** `decision`: a decision (`allow`, `ask`, `deny`, `refused`, a card's `allow_once` …) or an error code (`no_human_surface`): lower-case letters and `_`. */
export const AuditDecision = z.string().regex(/^[a-z_]{1,64}$/, "expected a decision (allow, ask, deny, refused, allow_once, expired …) or an error code (no_human_surface …)");

/** `limit`: an integer from 1 to {@link AUDIT_MAX_LIMIT}, digits only. */
export const AuditLimit = z.string().regex(/^\d{1,7}$/, `expected an integer from 1 to ${AUDIT_MAX_LIMIT}`).transform(Number).pipe(z.number().int().min(1).max(AUDIT_MAX_LIMIT));

/** The query string of `GET /audit` (every value a string, as sent). */
export const AuditQueryParams = z.strictObject({
  session: z.string().min(1).optional(),
  since: AuditSince.optional(),
  decision: AuditDecision.optional(),
  limit: AuditLimit.optional(),
});
export type AuditQueryParams = z.output<typeof AuditQueryParams>;

/** A decision-log query. `limit` absent: {@link AUDIT_DEFAULT_LIMIT}; `null`: no limit (the export). */
export interface AuditQuery {
  /** Rows of this session and every session under it (matched on `session_id` or `home_session_id`). */
  session?: string;
  since?: AuditSince;
  /** Matches the `decision` column or the `code` column. */
  decision?: string;
  limit?: number | null;
}

type RawRow = Omit<AuditRow, "detail"> & { detail: string | null };

const toRow = (r: RawRow): AuditRow => ({ ...r, detail: r.detail ? (JSON.parse(r.detail) as unknown) : null });

/** Depth bound of the session tree walked for a `session` filter (sessions.parent_session_id). */
const TREE_MAX_DEPTH = 64;

/**
 * Builds the WHERE clause and its parameters for `q`.
 * @throws AirlockError `session_not_found` when `q.session` names no stored session.
 */
async function whereOf(store: Store, q: AuditQuery): Promise<{ cte: string; conds: string[]; params: (string | number)[] }> {
  const conds: string[] = [];
  const params: (string | number)[] = [];
  let cte = "";
  if (q.session !== undefined) {
    await store.requireSession(q.session);
    cte = `WITH RECURSIVE tree(id, depth) AS (SELECT ?, 0 UNION SELECT s.id, tree.depth + 1 FROM sessions s JOIN tree ON s.parent_session_id = tree.id WHERE tree.depth < ${TREE_MAX_DEPTH}) `;
    params.push(q.session);
    // a row whose home is its session is found by the first half; the second half's extra term is the one SQLite's
    // audit_home_session index holds (a partial index, schema version 14), and lets the planner use it
    conds.push("(session_id IN (SELECT id FROM tree) OR (home_session_id IN (SELECT id FROM tree) AND home_session_id IS DISTINCT FROM session_id))");
  }
  if (q.since) {
    if ("id" in q.since) {
      conds.push("id > ?");
      params.push(q.since.id);
    } else {
      conds.push("at >= ?");
      params.push(q.since.at);
    }
  }
  if (q.decision !== undefined) {
    conds.push("(decision = ? OR code = ?)");
    params.push(q.decision, q.decision);
  }
  return { cte, conds, params };
}

const whereText = (conds: string[]): string => (conds.length ? ` WHERE ${conds.join(" AND ")}` : "");

/** Rows read per query by {@link exportAudit}. */
const EXPORT_PAGE_ROWS = 500;

/**
 * The decision log's rows matching `q`, newest first (by id), at most `q.limit` (default 100).
 * Rows: `{id, at, kind, request_id, session_id, home_session_id, decision, outcome, code, actor, detail}` (detail parsed).
 * @throws AirlockError `session_not_found` for an unknown `q.session`.
 */
export async function queryAudit(store: Store, q: AuditQuery): Promise<AuditRow[]> {
  await store.flushAudit();
  const { cte, conds, params } = await whereOf(store, q);
  const limit = q.limit === undefined ? AUDIT_DEFAULT_LIMIT : q.limit;
  const sql = `${cte}SELECT * FROM audit${whereText(conds)} ORDER BY id DESC${limit === null ? "" : " LIMIT ?"}`;
  const all = limit === null ? params : [...params, limit];
  return (await store.sql.all<RawRow>(sql, all)).map(toRow);
}

/**
 * Every row matching `q` (its `limit` ignored), oldest first, one at a time (for `--export jsonl`: memory
 * stays flat; read in pages of 500 rows by id).
 * @throws AirlockError `session_not_found` for an unknown `q.session`.
 */
export async function* exportAudit(store: Store, q: Omit<AuditQuery, "limit"> = {}): AsyncGenerator<AuditRow> {
  await store.flushAudit();
  const { cte, conds, params } = await whereOf(store, q);
  let after = 0;
  for (;;) {
    const page = await store.sql.all<RawRow>(`${cte}SELECT * FROM audit${whereText([...conds, "id > ?"])} ORDER BY id LIMIT ?`, [...params, after, EXPORT_PAGE_ROWS]);
    for (const r of page) yield toRow(r);
    if (page.length < EXPORT_PAGE_ROWS) return;
    after = page[page.length - 1]!.id;
  }
}

/**
 * Parses the CLI's `--since` and `--decision` (absent stays absent), with the API's rules.
 * @throws AirlockError `usage` naming the flag and what it expects.
 */
export function parseAuditFlags(raw: { since?: string | undefined; decision?: string | undefined }): { since?: AuditSince; decision?: string } {
  const out: { since?: AuditSince; decision?: string } = {};
  if (raw.since !== undefined) {
    const r = AuditSince.safeParse(raw.since);
    if (!r.success) throw new AirlockError("usage", `--since: ${r.error.issues[0]?.message ?? "invalid"}`);
    out.since = r.data;
  }
  if (raw.decision !== undefined) {
    const r = AuditDecision.safeParse(raw.decision);
    if (!r.success) throw new AirlockError("usage", `--decision: ${r.error.issues[0]?.message ?? "invalid"} (got ${JSON.stringify(raw.decision)})`);
    out.decision = r.data;
  }
  return out;
}
