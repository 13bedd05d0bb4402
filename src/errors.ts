/**
 * @module errors
 * One error base for the whole runtime: `AirlockError` carries a `code` to switch on.
 * Two tables map codes to HTTP status and to CLI exit codes (SPEC §2, §6).
 */

/** Every named failure airlock can report. Add a code here, then to both tables below. */
export const ERROR_CODES = [
  // generic / API
  "bad_request",
  "unauthorized",
  "forbidden_host",
  "not_found",
  "conflict",
  "payload_too_large",
  "internal",
  "usage",
  /** The CLI could not reach a running `airlock serve` (nothing listening at the URL, or not airlock there). */
  "server_unreachable",
  "config_invalid",
  "recipe_invalid",
  /** The data dir cannot be used: read-only, full, or not a database (exit 2, a setup problem). */
  "data_dir_unusable",
  /** Another `airlock serve` already serves this data dir (its pid and port are in the message). */
  "data_dir_in_use",
  // sessions & agent loop
  "session_busy",
  "session_not_found",
  "session_graph_invalid",
  "privacy_violation",
  "max_iterations",
  "provider_error",
  "provider_auth",
  "provider_rate_limit",
  "cancelled",
  /** The process running a turn died (kill -9, crash, power loss); the turn's unanswered calls get this result. */
  "interrupted",
  // gate & approvals
  "gate_no_session",
  "no_human_surface",
  "denied",
  "expired",
  "outside_scope",
  "user_proof_required",
  "already_decided",
  "hook_timeout",
  "hook_error",
  "hook_output_invalid",
  "unknown_tool",
  "invalid_arguments",
  "mode_chat",
  /** A file an approved call names (its script, its write target) changed while the card waited: the call did not run. */
  "approval_stale",
  // launcher & tools
  "sandbox_unavailable",
  "external_backend",
  "path_outside_workspace",
  "timed_out",
  "elevation_invalid",
  "elevation_missing_justification",
  "elevation_not_wider",
  "tool_failed",
  "file_not_found",
  "edit_no_match",
  "read_only_policy",
  "protected_path",
  /** A file tool named a path in airlock's data dir (tokens, database): refused outright, no card. */
  "data_dir_refused",
  /**
   * A workspace-write call refused: the workspace has more folders than the repository-metadata scan
   * visits (`sandbox_scan_max_folders`), or an earlier call's check of it is still owed and cannot complete.
   */
  "metadata_scan_limit",
  /** A file tool met something that is not a regular file (a FIFO, device, socket) or a folder for list_dir. */
  "not_regular_file",
  // script sandbox
  "script_timeout",
  "script_memory_limit",
  "script_stack_overflow",
  "script_too_many_calls",
  "script_output_too_large",
  "script_error",
  /** The script's worker was replaced because another script on it stalled in a native call; retryable. */
  "script_worker_lost",
  // mcp
  "mcp_server_unavailable",
  "mcp_timeout",
  "mcp_tool_error",
  // console
  /** The console cannot preview a card's target file: outside the workspace, in the data dir, not a regular file, or too large. */
  "preview_refused",
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

/** The one error class. `code` is what callers switch on; `message` says what was wrong and what to do. */
export class AirlockError extends Error {
  override readonly name = "AirlockError";
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** Extra machine-readable fields rendered alongside `{error, message}` (e.g. `{path}` or `{inspector}`). */
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }

  /** The JSON shape used on the wire and in tool results: `{code, message, ...details}`. */
  toJSON(): { code: ErrorCode; message: string } & Record<string, unknown> {
    return { code: this.code, message: this.message, ...this.details };
  }
}

export function isAirlockError(e: unknown): e is AirlockError {
  return e instanceof AirlockError;
}

/** Normalises anything thrown into an AirlockError (unknown errors become `internal`). */
export function toAirlockError(e: unknown, fallback: ErrorCode = "internal"): AirlockError {
  if (e instanceof AirlockError) return e;
  if (e instanceof Error) return new AirlockError(fallback, e.message);
  return new AirlockError(fallback, String(e));
}

/** HTTP status for each code (SPEC §6). Codes not listed map to 500. */
export const HTTP_STATUS: Partial<Record<ErrorCode, number>> = {
  bad_request: 400,
  usage: 400,
  config_invalid: 400,
  recipe_invalid: 400,
  invalid_arguments: 400,
  privacy_violation: 400,
  elevation_invalid: 400,
  unauthorized: 401,
  outside_scope: 403,
  user_proof_required: 403,
  forbidden_host: 421,
  not_found: 404,
  session_not_found: 404,
  expired: 404,
  conflict: 409,
  session_busy: 409,
  already_decided: 409,
  approval_stale: 409,
  payload_too_large: 413,
  data_dir_in_use: 409,
  data_dir_unusable: 503,
  data_dir_refused: 403,
  server_unreachable: 503,
  script_worker_lost: 503,
  preview_refused: 403,
  metadata_scan_limit: 409,
};

export function httpStatus(code: ErrorCode): number {
  return HTTP_STATUS[code] ?? 500;
}

/** CLI exit codes (SPEC §2): 0 completed, 1 failed, 2 usage/config, 3 blocked (no human surface), 130 cancelled. */
export const EXIT = { ok: 0, failed: 1, usage: 2, blocked: 3, cancelled: 130 } as const;

export function exitCodeFor(code: ErrorCode): number {
  switch (code) {
    case "usage":
    case "config_invalid":
    case "recipe_invalid":
    case "bad_request":
    case "data_dir_unusable":
    case "data_dir_in_use":
      return EXIT.usage;
    case "no_human_surface":
      return EXIT.blocked;
    case "cancelled":
      return EXIT.cancelled;
    default:
      return EXIT.failed;
  }
}

/**
 * The end of every exhaustive `switch` over a union: `tsc` refuses the call while a member is unhandled,
 * and a value that slips past the types at run time fails closed.
 * @throws AirlockError `internal` naming the unexpected value, always.
 */
export function assertNever(x: never, what = "value"): never {
  let shown: string;
  try {
    shown = JSON.stringify(x) ?? String(x);
  } catch {
    shown = String(x);
  }
  throw new AirlockError("internal", `unexpected ${what}: ${shown}; this is a bug in airlock, please report it`);
}
