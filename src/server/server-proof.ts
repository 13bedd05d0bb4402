/**
 * @module server/server-proof
 * The server proof (SPEC §6 `GET /server-proof`): what lets a client command that found a server only at the
 * config's `server.host:server.port` check, before it sends a token there, that what answers holds the data dir's
 * API token and listens on that port itself. A hook or `danger-full-access` process of the same user may remove
 * `serve.lock` and listen on the config's port, but cannot read the token (SPEC §9), so it cannot answer a fresh
 * nonce; and since the proof covers the port the server listens on, a relay of the nonce to the real server on
 * another port (`--port 0`) yields a proof for that port, not for the config's.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { z } from "zod";

/** The domain of every proof (so a proof is of no use elsewhere: not a token, not the `serve.lock` MAC). */
export const SERVER_PROOF_DOMAIN = "airlock server-proof v1";

/** A nonce: 32 to 128 lowercase hex characters (16 to 64 random bytes). */
export const SERVER_PROOF_NONCE = /^[0-9a-f]{32,128}$/;

/** The query of `GET /server-proof`: `nonce`, 32 to 128 lowercase hex characters (else 400 `bad_request`). */
export const ServerProofQuery = z.object({
  nonce: z.string().regex(SERVER_PROOF_NONCE, "32 to 128 lowercase hex characters"),
});

/**
 * The proof of `apiToken` for `nonce` on `port`: lowercase hex of HMAC-SHA-256 under the API token over
 * `airlock server-proof v1\n<port>\n<nonce>` (64 characters).
 */
export function serverProof(apiToken: string, port: number, nonce: string): string {
  return createHmac("sha256", apiToken).update(`${SERVER_PROOF_DOMAIN}\n${port}\n${nonce}`).digest("hex");
}

/** Constant-time check that `given` (any value, from the wire) is the 64-hex proof `expected`. */
export function proofMatches(given: unknown, expected: string): boolean {
  if (typeof given !== "string" || !/^[0-9a-f]{64}$/.test(given)) return false;
  return timingSafeEqual(Buffer.from(given, "hex"), Buffer.from(expected, "hex"));
}
