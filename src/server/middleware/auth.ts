/**
 * @module server/middleware/auth
 * Bearer-token authentication for every route but `/health` (SPEC §6). The comparison is
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

/** Requires `Authorization: Bearer <token>`; `/health` is exempt. */
export function bearerAuth(token: () => string): MiddlewareHandler {
  return async function bearerAuthMiddleware(c, next) {
    if (c.req.path === "/health") return next();
    const header = c.req.header("authorization") ?? "";
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!m || !safeEqual(m[1]!, token())) {
      throw new AirlockError(
        "unauthorized",
        header
          ? "the bearer token is wrong; use the api-token from the data dir ('airlock token' prints where it is)"
          : "missing Authorization header; send 'Authorization: Bearer <api-token>' ('airlock token' prints where it is)",
      );
    }
    await next();
  };
}
