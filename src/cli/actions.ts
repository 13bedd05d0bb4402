/**
 * @module cli/actions
 * `airlock actions list | answer`: the pending cards (SPEC §5) of a running `airlock serve`, and
 * answering one. Cards live in the server's memory, so these commands talk to it over HTTP with the
 * API token (and the approver token for an `allow_once` that needs user proof).
 */
import type { CommonOptions } from "./context.ts";

/** Options shared by the `actions` subcommands. */
export interface ActionsCommonOptions extends CommonOptions {
  /** `--url URL`: the running server; default `http://<server.host>:<server.port>` from the config (see `serverUrl`). */
  url?: string;
  /** `--json`: print JSON on stdout. */
  json?: boolean;
}

/** Options of `airlock actions list`. */
export interface ActionsListOptions extends ActionsCommonOptions {
  /** `--session ID`: only the cards this session may answer (`GET /sessions/:id/actions`); default: every session's. */
  session?: string;
}

/** Options of `airlock actions answer` (`main.ts` has checked that exactly one of --allow-once/--deny was given). */
export interface ActionsAnswerOptions extends ActionsCommonOptions {
  /** `--session ID` (required): the session answering; must be a surface of the card. */
  session: string;
  /** From `--allow-once` / `--deny`. */
  decision: "allow_once" | "deny";
  /** `--reason TEXT`: recorded with the decision and shown to the model on deny. */
  reason?: string;
}

/**
 * Lists pending cards.
 * TODO(server engineer): GET from `serverUrl(ctx, opts.url)` with `Authorization: Bearer <api token>`.
 * Server not running → a message saying to start `airlock serve` (exit 1).
 * @returns 0.
 */
export async function actionsList(opts: ActionsListOptions): Promise<number> {
  const { resolveContext, notImplemented } = await import("./context.ts");
  await resolveContext(opts);
  return notImplemented("actions list");
}

/**
 * Answers one card: `POST /sessions/:session/actions/:requestId {decision, reason}`, sending the approver
 * token as `X-Airlock-Approver` for `allow_once` (the CLI user is the person at the keyboard).
 * TODO(server engineer): map 403 `outside_scope`/`user_proof_required`, 404, 409 to their messages (exit 1).
 * @returns 0 when the decision was accepted.
 */
export async function actionsAnswer(requestId: string, opts: ActionsAnswerOptions): Promise<number> {
  const { resolveContext, notImplemented } = await import("./context.ts");
  await resolveContext(opts);
  void requestId;
  return notImplemented("actions answer");
}
