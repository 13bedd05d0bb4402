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
}

/**
 * Renders `err` (any thrown value) as the JSON error response: status `HTTP_STATUS[code]` (400–503), body
 * `{error: code, ...details, message}`. Anything not an AirlockError is `internal` (500) and is logged on stderr;
 * a SQLite failure from a full or read-only data dir is `data_dir_unusable` when `opts.dbPath` is given.
 * Never throws.
 */
export function errorResponse(c: Context, err: unknown, opts: ErrorResponseOptions = {}): Response {
  const sqlite = /^SQLITE_/.test(String((err as { code?: unknown } | null)?.code ?? ""));
  const e = (sqlite && opts.dbPath ? storageError(err, opts.dbPath) : null) ?? toAirlockError(err);
  if (e.code === "internal") console.error("airlock: request failed:", err);
  return c.json({ error: e.code, ...e.details, message: e.message }, httpStatus(e.code));
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
