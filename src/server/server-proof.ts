/**
 * @module server/server-proof
 * The server proof (SPEC §6 `GET /server-proof`): what lets a client command that found a server only at the
 * config's `server.host:server.port` check, before it sends a token there, that what answers holds the data dir's
 * API token and listens on that address and port itself. A hook or `danger-full-access` process of the same user may
 * remove `serve.lock` and listen on the config's port, but cannot read the token (SPEC §9), so it cannot answer a
 * fresh nonce; and since the proof covers the address and port the server is bound to, a relay of the nonce to the
 * real server on another port (`--port 0`), or on the same port of another address (`::1` beside `127.0.0.1`, where
 * a name such as `localhost` may take the client), yields a proof for that address, not for the one dialled.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { z } from "zod";

/** The domain of every proof (so a proof is of no use elsewhere: not a token, not the `serve.lock` MAC). */
export const SERVER_PROOF_DOMAIN = "airlock server-proof v2";

/** A nonce: 32 to 128 lowercase hex characters (16 to 64 random bytes). */
export const SERVER_PROOF_NONCE = /^[0-9a-f]{32,128}$/;

/** The query of `GET /server-proof`: `nonce`, 32 to 128 lowercase hex characters (else 400 `bad_request`). */
export const ServerProofQuery = z.object({
  nonce: z.string().regex(SERVER_PROOF_NONCE, "32 to 128 lowercase hex characters"),
});

/**
 * The proof of `apiToken` for `nonce` on `address:port`: lowercase hex of HMAC-SHA-256 under the API token over
 * `airlock server-proof v2\n<address>\n<port>\n<nonce>` (64 characters). `address` is an IP address as the server's
 * bound socket gives it and as a URL's host normalises it, brackets dropped (`127.0.0.1`, `::1`, `0.0.0.0`, `::`).
 */
export function serverProof(apiToken: string, address: string, port: number, nonce: string): string {
  return createHmac("sha256", apiToken).update(`${SERVER_PROOF_DOMAIN}\n${address}\n${port}\n${nonce}`).digest("hex");
}

/** Constant-time check that `given` (any value, from the wire) is the 64-hex proof `expected`. */
export function proofMatches(given: unknown, expected: string): boolean {
  if (typeof given !== "string" || !/^[0-9a-f]{64}$/.test(given)) return false;
  return timingSafeEqual(Buffer.from(given, "hex"), Buffer.from(expected, "hex"));
}
