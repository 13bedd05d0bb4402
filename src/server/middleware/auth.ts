/**
 * @module server/middleware/auth
 * Bearer-token authentication for every route but `/health` and `/server-proof` (SPEC §6). The comparison is
 * constant-time: both sides are hashed to equal length, then compared with `timingSafeEqual`.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { MiddlewareHandler } from "hono";
import { AirlockError } from "../../errors.ts";

/** Constant-time string equality (time depends on neither content nor length of `given`). */
export function safeEqual(given: string, expected: string): boolean {
  const a = createHash("sha256").update(given).digest();
  const b = createHash("sha256").update(expected).digest();
  return timingSafeEqual(a, b) && given.length === expected.length;
}

/** Where to find the token, appended to every 401 message. */
const WHERE = "('airlock token' prints where it is)";

/**
 * Why `header` (the `Authorization` value, "" when absent) is refused, or null when it carries `expected`.
 * A header without the `Bearer ` scheme (a bare token, `Basic …`) is told so, without checking what it holds.
 */
export function authProblem(header: string, expected: string): string | null {
  if (header.trim() === "") return `missing Authorization header; send 'Authorization: Bearer <api-token>' ${WHERE}`;
  if (!/^Bearer(\s|$)/i.test(header)) return `the Authorization header is missing the 'Bearer ' prefix: send Authorization: Bearer <api-token> ${WHERE}`;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!m) return `the Authorization header has no token after 'Bearer ': send Authorization: Bearer <api-token> ${WHERE}`;
  if (!safeEqual(m[1]!, expected)) return `the bearer token is wrong; use the api-token from the data dir ${WHERE}`;
  return null;
}

/** Requires `Authorization: Bearer <token>`; `/health` and `/server-proof` are exempt. @throws AirlockError `unauthorized` (401) saying what was wrong. */
export function bearerAuth(token: () => string): MiddlewareHandler {
  return async function bearerAuthMiddleware(c, next) {
    if (c.req.path === "/health" || c.req.path === "/server-proof") return next();
    const problem = authProblem(c.req.header("authorization") ?? "", token());
    if (problem) throw new AirlockError("unauthorized", problem);
    await next();
  };
}
