/**
 * @module cli/actions
 * `airlock actions list | answer`: the pending cards (SPEC §5) of a running `airlock serve`, and
 * answering one. Cards live in the server's memory, so these commands talk to it over HTTP with the
 * API token (and the approver token for an `allow_once` that needs user proof).
 */
import type { ServerClientOptions } from "./server-client.ts";
import { cardWhy } from "./card-why.ts";
import { safe } from "./output.ts";

/** Options shared by the `actions` subcommands. */
export interface ActionsCommonOptions extends ServerClientOptions {
  /** `--json`: print JSON on stdout. */
  json?: boolean;
}

/** Options of `airlock actions list`. */
export interface ActionsListOptions extends ActionsCommonOptions {
  /** `--session ID`: only the cards this session may answer (`GET /sessions/:id/actions`); default: every session's. */
  session?: string;
}

/** Options of `airlock actions answer` (`main.ts` has checked that exactly one of --allow-once/--allow-session/--deny was given). */
export interface ActionsAnswerOptions extends ActionsCommonOptions {
  /** `--session ID`: the session answering; must be a surface of the card. Absent: the card's root surface (the session it was relayed to) answers. */
  session?: string;
  /** From `--allow-once` / `--allow-session` / `--deny`. */
  decision: "allow_once" | "allow_session" | "deny";
  /** `--reason TEXT`: recorded with the decision and shown to the model on deny. */
  reason?: string;
}

/**
 * One card as a line of text: id, tool, where it is homed and surfaced, why, whether allowing needs user proof,
 * the card it replaces (its allow went stale), one line per named file with its full sha256 (what an allow runs), and
 * why allowing will not help when the sandbox will still refuse the call's write (`will_fail`). Every text the model or
 * a hook could have written (tool, arguments, reason, paths, rule) is shown through `safe()`: it cannot drive the terminal.
 */
export function cardLine(c: Record<string, any>): string {
  const proof = c.requires_user_proof ? " [needs user proof]" : "";
  const suggested = c.suggested_rule ? `    allow for this session: ${safe(String(c.suggested_rule))} (--allow-session)\n` : "";
  const where = c.surfaced_in && c.surfaced_in !== c.home_session_id ? `home ${c.home_session_id}, surfaced in ${c.surfaced_in}` : `home ${c.home_session_id}`;
  const replaces = c.replaces ? `; replaces ${c.replaces}` : "";
  const files = Array.isArray(c.files) ? c.files.map((f: Record<string, any>) => `    file ${safe(String(f.path))}: ${safe(fileState(f))}\n`).join("") : "";
  const willFail = c.will_fail ? `    ! ${safe(String(c.will_fail))}\n` : "";
  return `${c.request_id}  ${safe(String(c.tool))} ${safe(JSON.stringify(c.arguments) ?? "")}\n    ${safe(cardWhy(String(c.inspector), String(c.reason)))}${proof}\n${willFail}    ${where}; expires ${c.expires_at}${replaces}\n${files}${suggested}`;
}

/** A card's file binding in words: `sha256 <hex> (N bytes)`, `missing`, `symlink -> target (sha256 <hex>)`, … */
function fileState(f: Record<string, any>): string {
  const hash = f.sha256 ? `sha256 ${f.sha256} (${f.size} bytes)` : "";
  switch (f.kind) {
    case "file":
      return hash;
    case "symlink":
      return `symlink -> ${f.link}${hash ? ` (${hash})` : ""}`;
    case "missing":
      return "missing";
    case "too_large":
      return `too large to hash (${f.size} bytes)`;
    default:
      return "not a regular file";
  }
}

/**
 * Lists pending cards: `GET /sessions/:id/actions` with `--session`, else `GET /actions` (every pending card).
 * Prints one block per card (or `{"actions": [...]}` with `--json`).
 * @returns 0. @throws AirlockError when the server cannot be reached or answers an error.
 */
export async function actionsList(opts: ActionsListOptions): Promise<number> {
  const { writeStdout, writeJson } = await import("./output.ts");
  const { connect, notFoundHint } = await import("./server-client.ts");
  const c = await connect(opts);
  const hint = notFoundHint("list the sessions with: airlock sessions list (or every pending card with: airlock actions list)");
  const answer = await c.send("GET", opts.session ? `/sessions/${encodeURIComponent(opts.session)}/actions` : "/actions", { hint });
  const cards = (answer.actions ?? []) as Record<string, any>[];
  if (opts.json) writeJson({ actions: cards });
  else if (cards.length === 0) writeStdout(opts.session ? `no pending cards for ${opts.session}\n` : "no pending cards\n");
  else writeStdout(cards.map(cardLine).join(""));
  return 0;
}

/**
 * Answers one card: `POST /sessions/:session/actions/:requestId {decision, reason}` with `--session`, else
 * `POST /actions/:requestId` (answered at the card's root surface, the session it was relayed to), sending the
 * approver token (read from the data dir) as `X-Airlock-Approver` for `allow_once` and `allow_session` — the CLI
 * user is the person at the keyboard. Errors keep the server's code and message (403 outside_scope /
 * user_proof_required / user_proof_invalid, 404, 409), with a hint naming the CLI command to run, and exit 1.
 * @returns 0 when the decision was accepted.
 */
export async function actionsAnswer(requestId: string, opts: ActionsAnswerOptions): Promise<number> {
  const { writeStdout, writeJson } = await import("./output.ts");
  const { connect } = await import("./server-client.ts");
  const c = await connect(opts);
  const headers: Record<string, string> = {};
  if (opts.decision !== "deny") {
    const { ensureTokens } = await import("../config/paths.ts");
    headers["X-Airlock-Approver"] = ensureTokens(c.dataDir).approverToken;
  }
  const body = { decision: opts.decision, ...(opts.reason ? { reason: opts.reason } : {}) };
  const id = encodeURIComponent(requestId);
  const path = opts.session ? `/sessions/${encodeURIComponent(opts.session)}/actions/${id}` : `/actions/${id}`;
  const outcome = await c.send("POST", path, { body, headers, hint: (r) => answerHint(r.body.error, requestId, opts.session, c.dataDir) });
  if (opts.json) writeJson(outcome);
  else {
    const rule = outcome.rule ? `; rule ${outcome.rule} (${outcome.rule_id}) now allows matching calls in the session tree` : "";
    writeStdout(`${requestId}: ${outcome.decision}${outcome.decided_in ? ` (from ${outcome.decided_in})` : ""}${rule}\n`);
  }
  return 0;
}

/**
 * The CLI command to run after a refused answer (the server's messages name HTTP routes, for API clients):
 * `not_found` → list the cards (this session may answer, with `session`); `outside_scope` → list every card
 * with its home and the session it was escalated to, or answer without `--session`; `session_not_found` → list
 * the sessions; `user_proof_invalid` → the token file this CLI sent (in `dataDir`) is not the server's: use the
 * server's data dir.
 */
export function answerHint(code: unknown, requestId: string, session: string | undefined, dataDir?: string): string | undefined {
  switch (code) {
    case "not_found":
      return session ? `list the cards you may answer with: airlock actions list --session ${session}` : "list the pending cards with: airlock actions list";
    case "outside_scope":
      return `see which sessions may answer ${requestId} (its home, and the root it was escalated to) with: airlock actions list; or leave out --session to answer at the root it was relayed to`;
    case "session_not_found":
      return "list the sessions with: airlock sessions list";
    case "user_proof_invalid":
      return `this command sent the approver token from ${dataDir ? `${dataDir}/approver-token` : "its data dir"} and the server refused it: the server runs with another data dir, or its token changed since it started; run this command with the server's --data-dir (or AIRLOCK_HOME)`;
    default:
      return undefined;
  }
}
