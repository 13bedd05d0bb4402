/**
 * @module cli/actions
 * `airlock actions list | answer`: the pending cards (SPEC §5) of a running `airlock serve`, and
 * answering one. Cards live in the server's memory, so these commands talk to it over HTTP with the
 * API token (and the approver token for an `allow_once` that needs user proof).
 */
import { AirlockError, ERROR_CODES, type ErrorCode } from "../errors.ts";
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

/** A small authenticated JSON client for the running server (api token from the data dir). */
async function client(opts: ActionsCommonOptions): Promise<{ base: string; dataDir: string; call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<{ status: number; body: Record<string, any> }> }> {
  const { resolveContext, serverUrl } = await import("./context.ts");
  const { ensureTokens } = await import("../config/paths.ts");
  const ctx = await resolveContext(opts);
  const base = opts.url ? serverUrl(ctx, opts.url) : process.env.AIRLOCK_URL ? serverUrl(ctx, process.env.AIRLOCK_URL) : serverUrl(ctx);
  const token = ensureTokens(ctx.dataDir).apiToken;
  return {
    base,
    dataDir: ctx.dataDir,
    async call(method, path, body, headers = {}) {
      let res: Response;
      try {
        res = await fetch(base + path, {
          method,
          headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
      } catch (e) {
        throw new AirlockError("internal", `cannot reach airlock serve at ${base} (${(e as Error).message}); start it with 'airlock serve' or pass --url`);
      }
      const text = await res.text();
      try {
        return { status: res.status, body: JSON.parse(text) as Record<string, any> };
      } catch {
        throw new AirlockError("internal", `${method} ${base}${path} answered ${res.status} with a body that is not JSON; is --url pointing at airlock serve?`);
      }
    },
  };
}

/** Turns an API error body into an AirlockError with its own code (exit codes follow `exitCodeFor`). */
function apiError(r: { status: number; body: Record<string, any> }): AirlockError {
  const code: ErrorCode = (ERROR_CODES as readonly string[]).includes(r.body.error) ? (r.body.error as ErrorCode) : "internal";
  const message =
    r.status === 401 ? `${r.body.message ?? "unauthorized"} (the API token in the data dir does not match the server's; pass the server's --data-dir)` : (r.body.message ?? `HTTP ${r.status}`);
  return new AirlockError(code, message);
}

/** One card as a line of text: id, tool, where it is homed and surfaced, why, and whether allowing needs user proof. */
function cardLine(c: Record<string, any>): string {
  const proof = c.requires_user_proof ? " [needs user proof]" : "";
  const where = c.surfaced_in && c.surfaced_in !== c.home_session_id ? `home ${c.home_session_id}, surfaced in ${c.surfaced_in}` : `home ${c.home_session_id}`;
  return `${c.request_id}  ${c.tool} ${JSON.stringify(c.arguments)}\n    ${c.inspector}: ${c.reason}${proof}\n    ${where}; expires ${c.expires_at}\n`;
}

/**
 * Lists pending cards: `GET /sessions/:id/actions` with `--session`, else `GET /actions` (every pending card).
 * Prints one block per card (or `{"actions": [...]}` with `--json`).
 * @returns 0. @throws AirlockError when the server cannot be reached or answers an error.
 */
export async function actionsList(opts: ActionsListOptions): Promise<number> {
  const { writeStdout, writeJson } = await import("./output.ts");
  const c = await client(opts);
  const r = await c.call("GET", opts.session ? `/sessions/${encodeURIComponent(opts.session)}/actions` : "/actions");
  if (r.status !== 200) throw apiError(r);
  const cards = (r.body.actions ?? []) as Record<string, any>[];
  if (opts.json) writeJson({ actions: cards });
  else if (cards.length === 0) writeStdout(opts.session ? `no pending cards for ${opts.session}\n` : "no pending cards\n");
  else writeStdout(cards.map(cardLine).join(""));
  return 0;
}

/**
 * Answers one card: `POST /sessions/:session/actions/:requestId {decision, reason}`, sending the approver
 * token (read from the data dir) as `X-Airlock-Approver` for `allow_once` — the CLI user is the person
 * at the keyboard. Errors keep the server's code and message (403 outside_scope / user_proof_required,
 * 404, 409) and exit 1.
 * @returns 0 when the decision was accepted.
 */
export async function actionsAnswer(requestId: string, opts: ActionsAnswerOptions): Promise<number> {
  const { writeStdout, writeJson } = await import("./output.ts");
  const c = await client(opts);
  const headers: Record<string, string> = {};
  if (opts.decision === "allow_once") {
    const { ensureTokens } = await import("../config/paths.ts");
    headers["X-Airlock-Approver"] = ensureTokens(c.dataDir).approverToken;
  }
  const body = { decision: opts.decision, ...(opts.reason ? { reason: opts.reason } : {}) };
  const r = await c.call("POST", `/sessions/${encodeURIComponent(opts.session)}/actions/${encodeURIComponent(requestId)}`, body, headers);
  if (r.status !== 200) throw apiError(r);
  if (opts.json) writeJson(r.body);
  else writeStdout(`${requestId}: ${r.body.decision}${r.body.decided_in ? ` (from ${r.body.decided_in})` : ""}\n`);
  return 0;
}
