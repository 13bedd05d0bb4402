/**
 * @module fleet/card-rows
 * Cards as rows (SPEC §5.8): the `cards` table is the truth every process reads. A worker parks a card
 * under its turn's lease (fenced: a stale epoch parks nothing); any process decides it in one
 * transaction — the conditional `UPDATE … WHERE status = 'pending'` and the audit row; on PostgreSQL the
 * row change itself sends the wake-up (a trigger, fleet/notify.ts) — so the first decision wins and every later one is refused `already_decided`.
 *
 * Who may decide (surfaces, user proof: card/authority.ts) is checked by the caller before `decide`;
 * this module owns only the row's state machine:
 * `pending` → `allowed` | `denied` (a person), `expired` (TTL), `worker_lost` (lease expired, fleet/sweeper.ts),
 * `cancelled` (the turn ended). Every end state but `allowed` refuses the call.
 */
import { AirlockError, assertNever } from "../errors.ts";
import type { Sql, SqlValue } from "../store/sql.ts";
import { insertAudit } from "./audit.ts";
import type { CardStatus } from "./schema.ts";

/** The lease a card is parked under (fleet/leases.ts). */
export interface LeaseRef {
  turnId: string;
  workerId: string;
  epoch: number;
}

/** A card to park. `surfaces`: the home session first, then the root it is relayed to (card/relay.ts). */
export interface CardRowInput {
  id: string;
  sessionId: string;
  rootSessionId: string;
  callId: string;
  surfaces: readonly string[];
  requiresUserProof: boolean;
  /** The card as published (`action_required`), stored as JSON. */
  card: unknown;
  /** When the card expires (ms since the Unix epoch): a pending card past it is refused `expired`. */
  expiresAt: number;
  /** Extra `card_parked` audit detail (tool, inspector …). */
  auditDetail?: Record<string, unknown>;
}

/** A card row as read back. Times: `expiresAt` ms since the Unix epoch, `createdAt`/`decidedAt` ISO-8601. */
export interface CardRow {
  id: string;
  sessionId: string;
  rootSessionId: string;
  turnId: string;
  callId: string;
  workerId: string;
  epoch: number;
  status: CardStatus;
  surfaces: string[];
  requiresUserProof: boolean;
  card: unknown;
  /** The outcome stored with the end state (decision, decided_in, reason, rule …); null while pending. */
  decision: Record<string, unknown> | null;
  createdAt: string;
  expiresAt: number;
  decidedAt: string | null;
  /**
   * Whether the lease the card was parked under (its turn and epoch) was live (held, not past its
   * expiry) at the moment of this read. Only `getMany` reads it (the waker's re-read: one statement
   * for the row and the lease); absent elsewhere.
   */
  leaseLive?: boolean;
}

/** A person's decision: `allowed` or `denied`, the outcome JSON kept on the row, and who sent it (for the audit row). */
export interface RowDecision {
  status: "allowed" | "denied";
  /** Stored as the row's `decision` JSON (the card outcome: decision, decided_in, reason, rule …). */
  outcome: Record<string, unknown>;
  /** The audit row's fields: the session it was posted from, the decision word, actor, whether it carried proof. */
  audit: { sessionId: string; decision: string; actor?: string | null; proof: boolean; reason?: string };
}

export type DecideResult = { ok: true; row: CardRow } | { ok: false; error: AirlockError; row: CardRow | null };

interface RawRow {
  id: string;
  session_id: string;
  root_session_id: string;
  turn_id: string;
  call_id: string;
  worker_id: string;
  epoch: number;
  status: CardStatus;
  surfaces: string;
  requires_user_proof: number | boolean;
  card: string;
  decision: string | null;
  created_at: string;
  expires_at: number;
  decided_at: string | null;
}

const COLUMNS = "id, session_id, root_session_id, turn_id, call_id, worker_id, epoch, status, surfaces, requires_user_proof, card, decision, created_at, expires_at, decided_at";

/** The `surfaces` column: a JSON array of session ids. @throws Error when it is not one (a damaged row). */
function surfacesOf(text: string): string[] {
  const v = JSON.parse(text) as unknown;
  if (!Array.isArray(v) || !v.every((x) => typeof x === "string")) throw new Error("surfaces is not a JSON array of session ids");
  return v as string[];
}

/**
 * Rows read for a listing: a row this version cannot read (its JSON columns damaged, or another version's) is
 * logged and left out, never failing the listing of the others (the feed's catch-up, `GET /actions`, the waker).
 */
function readable<R extends RawRow>(rows: R[], map: (r: R) => CardRow = fromRaw): CardRow[] {
  const out: CardRow[] = [];
  for (const r of rows) {
    try {
      out.push(map(r));
    } catch (e) {
      console.error(`airlock: card row ${r.id} cannot be read; left out:`, e instanceof Error ? e.message : e);
    }
  }
  return out;
}

function fromRaw(r: RawRow): CardRow {
  return {
    id: r.id,
    sessionId: r.session_id,
    rootSessionId: r.root_session_id,
    turnId: r.turn_id,
    callId: r.call_id,
    workerId: r.worker_id,
    epoch: Number(r.epoch),
    status: r.status,
    surfaces: surfacesOf(r.surfaces),
    requiresUserProof: Boolean(Number(r.requires_user_proof)),
    card: JSON.parse(r.card) as unknown,
    decision: r.decision === null ? null : (JSON.parse(r.decision) as Record<string, unknown>),
    createdAt: r.created_at,
    expiresAt: Number(r.expires_at),
    decidedAt: r.decided_at,
  };
}

/** The error a decision on a card in `status` gets (it is not pending any more). */
export function endedError(row: CardRow): AirlockError {
  const s = row.status;
  switch (s) {
    case "pending":
      return new AirlockError("internal", `card ${row.id} is still pending`);
    case "expired":
      return new AirlockError("expired", `card ${row.id} expired before it was answered; the call was refused`, { request_id: row.id });
    case "worker_lost":
      return new AirlockError(
        "already_decided",
        `card ${row.id} was already decided (worker_lost: the process running its turn stopped, so the call was refused); a card is answered once`,
        { request_id: row.id },
      );
    case "allowed":
    case "denied":
    case "cancelled":
      return new AirlockError("already_decided", `card ${row.id} was already decided (${String(row.decision?.decision ?? s)}); a card is answered once`, {
        request_id: row.id,
      });
    default:
      return assertNever(s);
  }
}

/** The `cards` table. `now` (ms since the Unix epoch) is injectable for tests; every process of a fleet should keep its clock in sync (NTP): expiry compares these times. */
export class CardRows {
  constructor(
    private readonly sql: Sql,
    readonly now: () => number = Date.now,
  ) {}

  /**
   * Parks a card under `lease`, in one transaction: the row (only while the lease is live — a stale
   * epoch or an expired lease inserts nothing), its `card_parked` audit row and the wake-up.
   * @throws AirlockError `lease_lost` when `lease` is not the session's live lease.
   */
  async park(lease: LeaseRef, input: CardRowInput): Promise<CardRow> {
    const now = this.now();
    return await this.sql.transaction(async (tx) => {
      const params: SqlValue[] = [
        input.id,
        input.sessionId,
        input.rootSessionId,
        lease.turnId,
        input.callId,
        lease.workerId,
        lease.epoch,
        JSON.stringify(input.surfaces),
        input.requiresUserProof ? 1 : 0,
        JSON.stringify(input.card),
        new Date(now).toISOString(),
        input.expiresAt,
        lease.turnId,
        lease.workerId,
        lease.epoch,
        now,
      ];
      const ins = await tx.get<RawRow>(
        `INSERT INTO cards (id, session_id, root_session_id, turn_id, call_id, worker_id, epoch, status, surfaces, requires_user_proof, card, created_at, expires_at)
         SELECT ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?
         WHERE EXISTS (SELECT 1 FROM inflight WHERE turn_id = ? AND worker_id = ? AND epoch = ? AND expires_at >= ?)
         RETURNING ${COLUMNS}`,
        params,
      );
      if (!ins) {
        throw new AirlockError("lease_lost", `turn ${lease.turnId} no longer holds its lease (epoch ${lease.epoch}): card ${input.id} was not parked and its call does not run`, {
          request_id: input.id,
        });
      }
      await insertAudit(tx, {
        kind: "card_parked",
        outcome: "recorded",
        request_id: input.id,
        session_id: input.sessionId,
        home_session_id: input.sessionId,
        detail: { ...input.auditDetail, turn_id: lease.turnId, call_id: input.callId, surfaces: input.surfaces, worker_id: lease.workerId, epoch: lease.epoch },
      });
      return fromRaw(ins);
    });
  }

  /** The row, or null. */
  async get(id: string): Promise<CardRow | null> {
    const r = await this.sql.get<RawRow>(`SELECT ${COLUMNS} FROM cards WHERE id = ?`, [id]);
    return r ? fromRaw(r) : null;
  }

  /** The rows with these ids (any order; unknown ids are left out), each with `leaseLive` read in the same statement. */
  async getMany(ids: readonly string[]): Promise<CardRow[]> {
    if (ids.length === 0) return [];
    const out: CardRow[] = [];
    const now = this.now();
    for (let i = 0; i < ids.length; i += 500) {
      const part = ids.slice(i, i + 500);
      const rows = await this.sql.all<RawRow & { lease_live: number | boolean }>(
        `SELECT ${COLUMNS}, CASE WHEN EXISTS (SELECT 1 FROM inflight i WHERE i.turn_id = cards.turn_id AND i.epoch = cards.epoch AND i.expires_at >= ?) THEN 1 ELSE 0 END AS lease_live
         FROM cards WHERE id IN (${part.map(() => "?").join(", ")})`,
        [now, ...part],
      );
      out.push(...readable(rows, (r) => ({ ...fromRaw(r), leaseLive: Number(r.lease_live) === 1 })));
    }
    return out;
  }

  /** The pending cards surfaced in `sessionId` (homed there, or relayed to it as their root), oldest first. */
  async listPending(sessionId: string): Promise<CardRow[]> {
    const rows = await this.sql.all<RawRow>(
      `SELECT ${COLUMNS} FROM cards WHERE status = 'pending' AND (session_id = ? OR root_session_id = ?) ORDER BY created_at, id`,
      [sessionId, sessionId],
    );
    return readable(rows);
  }

  /** Every pending card, oldest first. */
  async listAllPending(): Promise<CardRow[]> {
    return readable(await this.sql.all<RawRow>(`SELECT ${COLUMNS} FROM cards WHERE status = 'pending' ORDER BY created_at, id`));
  }

  /** The pending cards parked by `workerId` (a worker's catch-up after its listener reconnects). */
  async pendingOf(workerId: string): Promise<CardRow[]> {
    return readable(await this.sql.all<RawRow>(`SELECT ${COLUMNS} FROM cards WHERE status = 'pending' AND worker_id = ?`, [workerId]));
  }

  /**
   * Decides a pending card in one transaction: `UPDATE … WHERE status = 'pending'` (and not past its
   * expiry), the accepted `card_decision` audit row, and the wake-up. The first decision wins; a later one
   * (from this process or any other) changes nothing and is refused — `already_decided` (409) for a card
   * already decided, lost or cancelled, `expired` (404) for one past its TTL (the row is marked `expired`),
   * `not_found` for an unknown id — with a refused audit row.
   */
  async decide(id: string, d: RowDecision): Promise<DecideResult> {
    const now = this.now();
    const won = await this.sql.transaction(async (tx) => {
      const upd = await tx.get<RawRow>(`UPDATE cards SET status = ?, decision = ?, decided_at = ? WHERE id = ? AND status = 'pending' AND expires_at >= ? RETURNING ${COLUMNS}`, [
        d.status,
        JSON.stringify(d.outcome),
        new Date(now).toISOString(),
        id,
        now,
      ]);
      if (!upd) return false;
      const row = fromRaw(upd);
      await insertAudit(tx, {
        kind: "card_decision",
        outcome: "accepted",
        request_id: id,
        session_id: d.audit.sessionId,
        home_session_id: row.sessionId,
        decision: d.audit.decision,
        actor: d.audit.actor ?? null,
        detail: { proof: d.audit.proof, ...(d.audit.reason ? { reason: d.audit.reason } : {}) },
      });
      return row;
    });
    if (won) return { ok: true, row: won };
    await this.expireIfDue(id);
    const row = await this.get(id);
    const error = row ? endedError(row) : new AirlockError("not_found", `no card ${id}; list the cards you may answer with GET /sessions/${d.audit.sessionId}/actions`);
    await insertAudit(this.sql, {
      kind: "card_decision",
      outcome: "refused",
      request_id: id,
      session_id: d.audit.sessionId,
      home_session_id: row?.sessionId ?? null,
      decision: d.audit.decision,
      code: error.code,
      actor: d.audit.actor ?? null,
      detail: { proof: d.audit.proof, ...(d.audit.reason ? { reason: d.audit.reason } : {}) },
    });
    return { ok: false, error, row };
  }

  /** Marks the card `expired` if it is pending and past its expiry (audited, woken). True when this call expired it. */
  async expireIfDue(id: string): Promise<boolean> {
    const now = this.now();
    return await this.end(id, "expired", { decision: "expired" }, "ttl", "AND expires_at < ?", [now]);
  }

  /** Withdraws a pending card (`cancelled`: its turn ended or was cancelled). True when this call withdrew it. */
  async cancel(id: string, why: string): Promise<boolean> {
    return await this.end(id, "cancelled", { decision: "cancelled" }, why, "", []);
  }

  private async end(id: string, status: "expired" | "cancelled", outcome: Record<string, unknown>, why: string, extra: string, extraParams: SqlValue[]): Promise<boolean> {
    return await this.sql.transaction(async (tx) => {
      const upd = await tx.run(`UPDATE cards SET status = ?, decision = ?, decided_at = ? WHERE id = ? AND status = 'pending' ${extra}`, [
        status,
        JSON.stringify({ request_id: id, ...outcome }),
        new Date(this.now()).toISOString(),
        id,
        ...extraParams,
      ]);
      if (upd.changes !== 1) return false;
      const home = await tx.get<{ session_id: string }>("SELECT session_id FROM cards WHERE id = ?", [id]);
      await insertAudit(tx, { kind: "card_decision", outcome: "recorded", request_id: id, home_session_id: home?.session_id ?? null, decision: status, detail: { why } });
      return true;
    });
  }
}

/**
 * Ends every pending card of `turnId` as `worker_lost` through `tx` (a deny: the turn's process stopped),
 * with a recorded audit row and a wake-up each. Returns their ids. Run inside the transaction that
 * takes the turn's expired lease away (fleet/sweeper.ts, fleet/leases.ts takeover).
 */
export async function loseTurnCards(tx: Sql, turnId: string, now: number): Promise<string[]> {
  const rows = await tx.all<{ id: string; session_id: string }>("SELECT id, session_id FROM cards WHERE turn_id = ? AND status = 'pending'", [turnId]);
  const lost: string[] = [];
  for (const r of rows) {
    const upd = await tx.run("UPDATE cards SET status = 'worker_lost', decision = ?, decided_at = ? WHERE id = ? AND status = 'pending'", [
      JSON.stringify({ request_id: r.id, decision: "worker_lost", reason: "the process running this turn stopped renewing its lease; the call was refused" }),
      new Date(now).toISOString(),
      r.id,
    ]);
    if (upd.changes !== 1) continue;
    await insertAudit(tx, {
      kind: "card_decision",
      outcome: "recorded",
      request_id: r.id,
      home_session_id: r.session_id,
      decision: "worker_lost",
      code: "worker_lost",
      detail: { why: "lease expired", turn_id: turnId },
    });
    lost.push(r.id);
  }
  return lost;
}
