/**
 * @module errors
 * One error base for the whole runtime: `AirlockError` carries a `code` to switch on.
 * Two total tables map codes to HTTP status and to CLI exit codes (SPEC §2, §6); `assertNever` ends exhaustive switches.
 */

/** Every named failure airlock can report. Add a code here, then to both tables below (`tsc` fails until you do). */
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
  /** The configured PostgreSQL database (`storage:`) cannot be reached or used; the message carries the URL with its password redacted (exit 2). */
  "storage_unavailable",
  // sessions & agent loop
  "session_busy",
  "session_not_found",
  "session_graph_invalid",
  "privacy_violation",
  "max_iterations",
  /** A run's model calls (root and every subagent, input + output tokens) crossed `limits.max_tokens_per_run`. */
  "token_budget",
  "provider_error",
  "provider_auth",
  "provider_rate_limit",
  /** The session names a provider this process's config does not configure (nodes of one deployment with different `provider:` settings, or a config changed since the session was created). */
  "provider_unavailable",
  "cancelled",
  /** The process running a turn died (kill -9, crash, power loss); the turn's unanswered calls get this result. */
  "interrupted",
  /** A UserPromptSubmit hook blocked the prompt (exit 2, `decision: "block"`, or it failed): the prompt was not sent to the model. */
  "prompt_blocked",
  /** A hook answered `continue: false`: the turn stopped before the model's final answer (its `stopReason` in the message). */
  "hook_stopped",
  // gate & cards
  "gate_no_session",
  "no_human_surface",
  "denied",
  "expired",
  "outside_scope",
  "user_proof_required",
  /** An allow on a proof card came with an approver token that is not this server's (`user_proof_required`: none came). */
  "user_proof_invalid",
  "already_decided",
  /** A fleet write carried a lease (turn, fencing epoch) that is no longer the live one: the lease expired or was taken over; the write was refused. */
  "lease_lost",
  /** The process running a card's turn stopped renewing its lease: the turn is `interrupted` and its pending cards end `worker_lost` (a deny). */
  "worker_lost",
  /** Fleet: a turn an `api` node queued was claimed by no worker within `fleet.queue_timeout_seconds` (no `worker`/`all` node alive); it never started. */
  "no_worker",
  "hook_timeout",
  "hook_error",
  "hook_output_invalid",
  "unknown_tool",
  "invalid_arguments",
  "mode_chat",
  /** A file an approved call names (its script, its write target) changed while the card waited: the call did not run. */
  "approval_stale",
  /** `allow_session` on a card that offers no session rule (the security floor's, elevation's, a rule's or hook's ask): answer it once. */
  "session_rule_not_offered",
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
  /** A script's return value was not sent: it cannot be serialised as JSON, or serialising it made tool calls (never sent). */
  "script_result_invalid",
  /** The script's worker thread went away before the script ended (the pool closed, the thread died); retryable. */
  "script_worker_lost",
  // mcp
  "mcp_server_unavailable",
  "mcp_timeout",
  "mcp_tool_error",
  // console
  /** The console cannot preview a card's target file: outside the workspace, in the data dir, not a regular file, or too large. */
  "preview_refused",
  // release binary
  /** A file the compiled binary embeds (a side bundle, the QuickJS WASM) is not what was built: its SHA-256 or length differs (side/load.ts). */
  "binary_corrupt",
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

/** Normalises anything thrown into an AirlockError (unknown errors become `internal`). */
export function toAirlockError(e: unknown, fallback: ErrorCode = "internal"): AirlockError {
  if (e instanceof AirlockError) return e;
  if (e instanceof Error) return new AirlockError(fallback, e.message);
  return new AirlockError(fallback, String(e));
}

/** The HTTP statuses an error response can have (SPEC §6). */
export type HttpErrorStatus = 400 | 401 | 403 | 404 | 409 | 413 | 421 | 500 | 503;

/**
 * HTTP status for each code (SPEC §6; the table in docs/api.md). Total: a code without a row fails `tsc`.
 * Rendered by `errorResponse` (src/server/error-response.ts), the one HTTP renderer.
 */
export const HTTP_STATUS: Readonly<Record<ErrorCode, HttpErrorStatus>> = {
  bad_request: 400,
  unauthorized: 401,
  forbidden_host: 421,
  not_found: 404,
  conflict: 409,
  payload_too_large: 413,
  internal: 500,
  usage: 400,
  server_unreachable: 503,
  config_invalid: 400,
  recipe_invalid: 400,
  data_dir_unusable: 503,
  data_dir_in_use: 409,
  storage_unavailable: 503,
  session_busy: 409,
  session_not_found: 404,
  session_graph_invalid: 500,
  privacy_violation: 400,
  max_iterations: 500,
  token_budget: 500,
  provider_error: 500,
  provider_auth: 500,
  provider_rate_limit: 500,
  provider_unavailable: 503,
  cancelled: 500,
  interrupted: 500,
  prompt_blocked: 500,
  hook_stopped: 500,
  gate_no_session: 500,
  no_human_surface: 500,
  denied: 500,
  expired: 404,
  outside_scope: 403,
  user_proof_required: 403,
  user_proof_invalid: 403,
  already_decided: 409,
  lease_lost: 409,
  worker_lost: 503,
  no_worker: 503,
  hook_timeout: 500,
  hook_error: 500,
  hook_output_invalid: 500,
  unknown_tool: 500,
  invalid_arguments: 400,
  mode_chat: 500,
  approval_stale: 409,
  session_rule_not_offered: 409,
  sandbox_unavailable: 500,
  external_backend: 500,
  path_outside_workspace: 500,
  timed_out: 500,
  elevation_invalid: 400,
  elevation_missing_justification: 500,
  elevation_not_wider: 500,
  tool_failed: 500,
  file_not_found: 500,
  edit_no_match: 500,
  read_only_policy: 500,
  protected_path: 500,
  data_dir_refused: 403,
  metadata_scan_limit: 409,
  not_regular_file: 500,
  script_timeout: 500,
  script_memory_limit: 500,
  script_stack_overflow: 500,
  script_too_many_calls: 500,
  script_output_too_large: 500,
  script_error: 500,
  script_result_invalid: 500,
  script_worker_lost: 503,
  mcp_server_unavailable: 500,
  mcp_timeout: 500,
  mcp_tool_error: 500,
  preview_refused: 403,
  binary_corrupt: 500,
};

/** The HTTP status of `code` (400–503; see {@link HTTP_STATUS}). */
export function httpStatus(code: ErrorCode): HttpErrorStatus {
  return HTTP_STATUS[code];
}

/** CLI exit codes (SPEC §2): 0 completed, 1 failed, 2 usage/config, 3 blocked (no human surface), 130 cancelled. */
export const EXIT = { ok: 0, failed: 1, usage: 2, blocked: 3, cancelled: 130 } as const;

/** One of the CLI's exit codes (a value of {@link EXIT}). */
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/**
 * The exit code of the CLI for each code (SPEC §2; the table in docs/api.md). Total: a code without a row
 * fails `tsc`. Rendered by `reportError` (src/cli/output.ts), the one CLI renderer.
 */
export const EXIT_CODE: Readonly<Record<ErrorCode, ExitCode>> = {
  bad_request: EXIT.usage,
  unauthorized: EXIT.failed,
  forbidden_host: EXIT.failed,
  not_found: EXIT.failed,
  conflict: EXIT.failed,
  payload_too_large: EXIT.failed,
  internal: EXIT.failed,
  usage: EXIT.usage,
  server_unreachable: EXIT.failed,
  config_invalid: EXIT.usage,
  recipe_invalid: EXIT.usage,
  data_dir_unusable: EXIT.usage,
  data_dir_in_use: EXIT.usage,
  storage_unavailable: EXIT.usage,
  session_busy: EXIT.failed,
  session_not_found: EXIT.failed,
  session_graph_invalid: EXIT.failed,
  privacy_violation: EXIT.failed,
  max_iterations: EXIT.failed,
  token_budget: EXIT.failed,
  provider_error: EXIT.failed,
  provider_auth: EXIT.failed,
  provider_rate_limit: EXIT.failed,
  provider_unavailable: EXIT.usage,
  cancelled: EXIT.cancelled,
  interrupted: EXIT.failed,
  prompt_blocked: EXIT.failed,
  hook_stopped: EXIT.failed,
  gate_no_session: EXIT.failed,
  no_human_surface: EXIT.blocked,
  denied: EXIT.failed,
  expired: EXIT.failed,
  outside_scope: EXIT.failed,
  user_proof_required: EXIT.failed,
  user_proof_invalid: EXIT.failed,
  already_decided: EXIT.failed,
  lease_lost: EXIT.failed,
  worker_lost: EXIT.failed,
  no_worker: EXIT.failed,
  hook_timeout: EXIT.failed,
  hook_error: EXIT.failed,
  hook_output_invalid: EXIT.failed,
  unknown_tool: EXIT.failed,
  invalid_arguments: EXIT.failed,
  mode_chat: EXIT.failed,
  approval_stale: EXIT.failed,
  session_rule_not_offered: EXIT.failed,
  sandbox_unavailable: EXIT.failed,
  external_backend: EXIT.failed,
  path_outside_workspace: EXIT.failed,
  timed_out: EXIT.failed,
  elevation_invalid: EXIT.failed,
  elevation_missing_justification: EXIT.failed,
  elevation_not_wider: EXIT.failed,
  tool_failed: EXIT.failed,
  file_not_found: EXIT.failed,
  edit_no_match: EXIT.failed,
  read_only_policy: EXIT.failed,
  protected_path: EXIT.failed,
  data_dir_refused: EXIT.failed,
  metadata_scan_limit: EXIT.failed,
  not_regular_file: EXIT.failed,
  script_timeout: EXIT.failed,
  script_memory_limit: EXIT.failed,
  script_stack_overflow: EXIT.failed,
  script_too_many_calls: EXIT.failed,
  script_output_too_large: EXIT.failed,
  script_error: EXIT.failed,
  script_result_invalid: EXIT.failed,
  script_worker_lost: EXIT.failed,
  mcp_server_unavailable: EXIT.failed,
  mcp_timeout: EXIT.failed,
  mcp_tool_error: EXIT.failed,
  preview_refused: EXIT.failed,
  binary_corrupt: EXIT.failed,
};

/** The exit code of the CLI for `code` (0, 1, 2, 3 or 130; see {@link EXIT_CODE}). */
export function exitCodeFor(code: ErrorCode): ExitCode {
  return EXIT_CODE[code];
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
