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
  /** `allow_session`: the rule stored for the session tree, and its id (for `DELETE /sessions/:id/rules/:rule_id`). */
  rule?: string;
  rule_id?: string;
}

/** Who posts a decision: the session it is posted from, the approver token (if any), a label for the audit log. */
export interface DecisionFrom {
  sessionId: string;
  approverToken?: string | null;
  actor?: string;
  reason?: string;
}

export type ResolveResult = { ok: true; outcome: CardOutcome } | { ok: false; error: AirlockError };

