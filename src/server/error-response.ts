/**
 * @module server/error-response
 * The one HTTP error renderer (SPEC §6): anything thrown becomes `{"error": CODE, ...details, "message": TEXT}`
 * with the code's status from `HTTP_STATUS`. The app's `onError` and `notFound`, and the schedules routes
 * (which also run on their own in tests), all answer errors through it.
 */
import type { Context, ErrorHandler } from "hono";
import { AirlockError, httpStatus, toAirlockError } from "../errors.ts";
import { storageError } from "../store/db.ts";

/** Where the renderer may name the database: a SQLite failure there is `data_dir_unusable` (503), not a bare 500. */
export interface ErrorResponseOptions {
  /** Absolute path of `airlock.db` (named in the `data_dir_unusable` message); absent: SQLite failures stay `internal`. */
  dbPath?: string;
  /**
   * The store is shared by several nodes (PostgreSQL): a wrong bearer token (`unauthorized`) and a wrong
   * approver token (`user_proof_invalid`) also say that every node must have the same token files.
   */
  sharedStore?: boolean;
}

/** Appended to token refusals on a shared store (see `ErrorResponseOptions.sharedStore`). */
export const SHARED_TOKENS_HINT =
  " This server shares its PostgreSQL store with other airlock nodes: every node of one deployment must have the same api-token and approver-token files (copy them from the first node's data dir), so a token from another node's data dir is refused here until they match.";

/**
 * Renders `err` (any thrown value) as the JSON error response: status `HTTP_STATUS[code]` (400–503), body
 * `{error: code, ...details, message}`. Anything not an AirlockError is `internal` (500) and is logged on stderr;
 * a SQLite failure from a full or read-only data dir is `data_dir_unusable` when `opts.dbPath` is given; on a
 * shared store (`opts.sharedStore`) a wrong token's refusal says every node needs the same token files.
 * Never throws.
 */
export function errorResponse(c: Context, err: unknown, opts: ErrorResponseOptions = {}): Response {
  const sqlite = /^SQLITE_/.test(String((err as { code?: unknown } | null)?.code ?? ""));
  const e = (sqlite && opts.dbPath ? storageError(err, opts.dbPath) : null) ?? toAirlockError(err);
  if (e.code === "internal") console.error("airlock: request failed:", err);
  const tokenRefused = e.code === "user_proof_invalid" || (e.code === "unauthorized" && /token is wrong/.test(e.message));
  const message = opts.sharedStore && tokenRefused ? e.message + SHARED_TOKENS_HINT : e.message;
  return c.json({ error: e.code, ...e.details, message }, httpStatus(e.code));
}

/** An `onError` handler that answers through {@link errorResponse}. */
export function apiErrorHandler(opts: ErrorResponseOptions = {}): ErrorHandler {
  return function renderApiError(err, c) {
    return errorResponse(c, err, opts);
  };
}

/** The `notFound` handler: `404 not_found` naming the method and path, through {@link errorResponse}. */
export function notFoundResponse(c: Context): Response {
  return errorResponse(c, new AirlockError("not_found", `no route ${c.req.method} ${c.req.path}; see docs/api.md`));
}
