/**
 * @module card/authority
 * Who may decide a card (SPEC §5.6): only a surface of the card (`outside_scope` otherwise), and an
 * `allow_once` or `allow_session` on a card that needs user proof only with the approver token (`user_proof_required`
 * when none came, `user_proof_invalid` when a wrong one came); `deny` never needs proof. Tokens are compared in constant time.
 */
import { AirlockError } from "../errors.ts";

/** A person's answer to a card: run it once, run it and add the card's `suggested_rule` for the session tree, or refuse it. */
export type Decision = "allow_once" | "allow_session" | "deny";

/** Header carrying the approver token on `POST /sessions/:id/actions/:request_id`. */
export const APPROVER_HEADER = "X-Airlock-Approver";

/** Constant-time equality of two secrets of any length (both are hashed first, so lengths leak nothing). */
export function tokensEqual(given: string | null | undefined, expected: string | null | undefined): boolean {
  if (!given || !expected) return false;
  // Bun's hasher and the global crypto's timingSafeEqual: node:crypto is not loaded at start (docs/performance.md)
  const a = new Bun.CryptoHasher("sha256").update(given).digest();
  const b = new Bun.CryptoHasher("sha256").update(expected).digest();
  return crypto.timingSafeEqual(a, b);
}

/**
 * Checks one decision attempt on a pending card. Returns null when it is accepted, else the error
 * to answer with: `outside_scope` when `fromSession` is not one of `surfaces`; for an `allow_once` or
 * `allow_session` on a proof card, `user_proof_required` when no approver token came (absent or empty)
 * and `user_proof_invalid` when one came that is not the expected one.
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
    return proofRefusal(input.requestId, input.approverToken);
  }
  return null;
}

/**
 * The refusal of an allow on a proof card without valid proof, saying what to do: `user_proof_required`
 * (403) when `given` is absent or empty, `user_proof_invalid` (403) when a token came that is not the
 * server's. Both name where the token is (the `approver-token` file in the server's data dir; `airlock token`
 * prints where) and that a deny needs no proof; the given token is never echoed.
 */
export function proofRefusal(requestId: string, given: string | null | undefined): AirlockError {
  const where =
    `The approver token is the content of the approver-token file in the data dir the server runs with ('airlock token' prints where; ` +
    `'airlock actions answer ${requestId} --allow-once' reads it there and sends it for you). A deny needs no proof.`;
  if (!given) {
    return new AirlockError(
      "user_proof_required",
      `${requestId} needs user proof to allow, and no approver token came with this answer: send it in the ${APPROVER_HEADER} header. ${where}`,
      { request_id: requestId },
    );
  }
  return new AirlockError(
    "user_proof_invalid",
    `${requestId} needs user proof to allow, and the approver token sent in the ${APPROVER_HEADER} header is not this server's ` +
      `(a token from another data dir, or from before the file was replaced, does not count): send the current one. ${where}`,
    { request_id: requestId },
  );
}
