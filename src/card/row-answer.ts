/**
 * @module card/row-answer
 * Answering a card stored as a row (fleet, SPEC §5.8) from any process, under the same rules as an
 * in-process card (`Cards.resolve`, SPEC §5.6): only a surface of the card may answer (`outside_scope`),
 * an allow on a proof card needs the approver token (`user_proof_required` / `user_proof_invalid`), an
 * `allow_session` needs the card's `suggested_rule` (`session_rule_not_offered`) and stores it first;
 * then the row's one-transaction decision (fleet/card-rows.ts `decide`): the first decision wins, a later
 * one is `already_decided`. Every attempt, accepted or refused, leaves a `card_decision` audit row.
 */
import { AirlockError, toAirlockError } from "../errors.ts";
import { insertAudit } from "../fleet/audit.ts";
import type { CardRows } from "../fleet/card-rows.ts";
import type { Sql } from "../store/sql.ts";
import { checkAuthority, tokensEqual, type Decision } from "./authority.ts";
import { decidedOutcome, type CardOutcome, type DecisionFrom, type ResolveResult } from "./outcome.ts";

export interface RowAnswerDeps {
  sql: Sql;
  rows: CardRows;
  /** The approver token (user proof) of this deployment, or null: then no allow on a proof card is possible. */
  approverToken: string | null;
  /** Where `allow_session` stores the card's suggested rule (sync or async); without it every `allow_session` is refused. */
  /** Where a line about a rule that could not be stored goes (default: stderr). */
  log?: (line: string) => void;
  sessionRules?: { add(sessionId: string, rule: string, from: { request_id?: string; added_in?: string; actor?: string; proof?: boolean }): { rule: string; id: string } | Promise<{ rule: string; id: string }> };
}

/**
 * Decides the card row `requestId` from `from.sessionId` (see the module for the rules). Errors come back as
 * results: `not_found`, `outside_scope` (403), `user_proof_required`/`user_proof_invalid` (403),
 * `session_rule_not_offered` (409), `already_decided` (409), `expired` (404).
 */
export async function answerCardRow(deps: RowAnswerDeps, requestId: string, decision: Decision, from: DecisionFrom): Promise<ResolveResult> {
  const proof = tokensEqual(from.approverToken ?? null, deps.approverToken);
  const detail = { proof, ...(from.reason ? { reason: from.reason } : {}) };
  const row = await deps.rows.get(requestId);
  const refuse = async (e: AirlockError): Promise<ResolveResult> => {
    await insertAudit(deps.sql, {
      kind: "card_decision",
      outcome: "refused",
      request_id: requestId,
      session_id: from.sessionId,
      home_session_id: row?.sessionId ?? null,
      decision,
      code: e.code,
      actor: from.actor ?? null,
      detail,
    });
    return { ok: false, error: e };
  };
  if (!row) return await refuse(new AirlockError("not_found", `no card ${requestId}; list the cards you may answer with GET /sessions/${from.sessionId}/actions`));
  const scope = checkAuthority({ requestId, surfaces: row.surfaces, requiresUserProof: false, decision, fromSession: from.sessionId });
  if (scope) return await refuse(scope);
  const suggested = (row.card as { suggested_rule?: unknown }).suggested_rule;
  if (row.status === "pending" && decision === "allow_session" && (typeof suggested !== "string" || !deps.sessionRules)) {
    return await refuse(
      new AirlockError(
        "session_rule_not_offered",
        `card ${requestId} offers no rule for the session (the security floor's, elevation's, a permission rule's or a hook's asks need an answer each time): answer it with allow_once or deny`,
        { request_id: requestId },
      ),
    );
  }
  if (row.status === "pending") {
    const auth = checkAuthority({
      requestId,
      surfaces: row.surfaces,
      requiresUserProof: row.requiresUserProof,
      decision,
      fromSession: from.sessionId,
      approverToken: from.approverToken ?? null,
      expectedApproverToken: deps.approverToken,
    });
    if (auth) return await refuse(auth);
  }
  const outcome: CardOutcome = decidedOutcome(requestId, decision, from);
  const offersRule = row.status === "pending" && decision === "allow_session";
  if (offersRule) outcome.rule = suggested as string;
  // The decision is taken first; the session rule is stored only once this answer has won it. Storing it
  // before would leave a rule behind for an answer that lost (a deny first, the card expired, its worker
  // lost): a fail-open that outlives the card (found by an attack on two serves, 2026-12-02).
  // An ended card falls through to the row's own refusal (already_decided / expired), which audits it.
  const r = await deps.rows.decide(requestId, {
    status: decision === "deny" ? "denied" : "allowed",
    outcome: { ...outcome },
    audit: { sessionId: from.sessionId, decision, actor: from.actor ?? null, proof, ...(from.reason ? { reason: from.reason } : {}) },
  });
  if (!r.ok) return { ok: false, error: r.error };
  if (offersRule) {
    try {
      const stored = await deps.sessionRules!.add(row.sessionId, suggested as string, { request_id: requestId, added_in: from.sessionId, ...(from.actor ? { actor: from.actor } : {}), proof });
      outcome.rule = stored.rule;
      outcome.rule_id = stored.id;
    } catch (e) {
      // the call is allowed (this answer won); only the rule for later calls could not be stored: they ask again
      delete outcome.rule;
      (deps.log ?? ((l: string) => void process.stderr.write(`${l}\n`)))(`airlock: card ${requestId} was allowed, but its session rule could not be stored (later matching calls will ask): ${toAirlockError(e).message}`);
    }
  }
  return { ok: true, outcome };
}
