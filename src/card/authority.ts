/**
 * @module card/authority
 * Who may decide a card (SPEC §5.6): only a surface of the card (`outside_scope` otherwise), and an
 * `allow_once` or `allow_session` on a card that needs user proof only with the approver token (`user_proof_required`);
 * `deny` never needs proof. Tokens are compared in constant time.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { AirlockError } from "../errors.ts";

/** A person's answer to a card: run it once, run it and add the card's `suggested_rule` for the session tree, or refuse it. */
export type Decision = "allow_once" | "allow_session" | "deny";

/** Header carrying the approver token on `POST /sessions/:id/actions/:request_id`. */
export const APPROVER_HEADER = "X-Airlock-Approver";

/** Constant-time equality of two secrets of any length (both are hashed first, so lengths leak nothing). */
export function tokensEqual(given: string | null | undefined, expected: string | null | undefined): boolean {
  if (!given || !expected) return false;
  const a = createHash("sha256").update(given).digest();
  const b = createHash("sha256").update(expected).digest();
  return timingSafeEqual(a, b);
}

/**
 * Checks one decision attempt on a pending card. Returns null when it is accepted, else the error
 * to answer with: `outside_scope` when `fromSession` is not one of `surfaces`; `user_proof_required`
 * when an `allow_once` or `allow_session` on a proof card comes without a valid approver token.
 */
export function checkAuthority(input: {
  requestId: string;
  surfaces: readonly string[];
  requiresUserProof: boolean;
  decision: Decision;
  fromSession: string;
  approverToken?: string | null;
  expectedApproverToken?: string | null;
}): AirlockError | null {
  if (!input.surfaces.includes(input.fromSession)) {
    return new AirlockError(
      "outside_scope",
      `session ${input.fromSession} is not a surface of ${input.requestId}; answer it from its home session or from the root session it was escalated to`,
    );
  }
  if (input.decision !== "deny" && input.requiresUserProof && !tokensEqual(input.approverToken, input.expectedApproverToken)) {
    return new AirlockError(
      "user_proof_required",
      `${input.requestId} needs user proof to allow: send the approver token in the ${APPROVER_HEADER} header ` +
        `(run 'airlock token' to see where it is; 'airlock actions answer ${input.requestId} --session ${input.fromSession} --allow-once' sends it for you). ` +
        `A deny needs no proof.`,
      { request_id: input.requestId },
    );
  }
  return null;
}
