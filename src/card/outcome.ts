/**
 * @module card/outcome
 * How a card ends and who answers it (SPEC §5.6): shared by in-process cards (card/pending.ts) and card
 * rows answered from any process (card/row-answer.ts); pending.ts re-exports them.
 */
import type { AirlockError } from "../errors.ts";
import type { Decision } from "./authority.ts";

/** How a card ended. `decided_in`: the session the decision was posted from. */
export interface CardOutcome {
  request_id: string;
  decision: Decision | "expired" | "cancelled";
  decided_in?: string;
  reason?: string;
  /** A `deny` that no person gave: nobody could answer (an attended run's terminal input ended); `reason` says why. */
  nobody?: true;
  /** `allow_session`: the rule stored for the session tree, and its id (for `DELETE /sessions/:id/rules/:rule_id`). */
  rule?: string;
  rule_id?: string;
}

/**
 * Who posts a decision: the session it is posted from, the approver token (if any), a label for the audit log,
 * the reason told to the model; `nobody`: a `deny` posted because nobody can answer (no person decided it;
 * kept in the outcome, ignored on an allow).
 */
export interface DecisionFrom {
  sessionId: string;
  approverToken?: string | null;
  actor?: string;
  reason?: string;
  nobody?: boolean;
}

/** The outcome of an accepted decision `decision` posted by `from` (the fields every card store keeps the same way). */
export function decidedOutcome(requestId: string, decision: Decision, from: DecisionFrom): CardOutcome {
  return {
    request_id: requestId,
    decision,
    decided_in: from.sessionId,
    ...(from.reason ? { reason: from.reason } : {}),
    ...(from.nobody && decision === "deny" ? { nobody: true as const } : {}),
  };
}

export type ResolveResult = { ok: true; outcome: CardOutcome } | { ok: false; error: AirlockError };

