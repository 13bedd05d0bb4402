/**
 * @module gate/decision-log
 * The decision log's record of one tool call (SPEC §6 `GET /audit`, `airlock audit`): what the gate learns
 * while it handles the call — the judgement and the verdict that decided it, the cards raised and how they
 * were answered, timings — written as ONE `call_judged` audit row when the call ends, refused or run.
 */
import { assertNever } from "../errors.ts";
import type { AuditEntry, Store } from "../store/store.ts";
import type { InspectorName, Judgement, Verdict } from "./verdict.ts";

/** The `decision` column of a `call_judged` row: the judgement, or `refused` when the call was refused before it was judged (unknown tool, bad arguments, no session). */
export type CallDecision = "allow" | "ask" | "deny" | "refused";

/** How a card raised for the call ended (from `Cards.park`): `decided_in` is the session the answer was posted from. */
export interface CardAnswer {
  request_id: string;
  decision: string;
  decided_in?: string;
}

/** What the gate records of one call while handling it. Times are `performance.now()` values (ms). */
export interface CallLog {
  readonly startedAt: number;
  sessionId?: string;
  turnId?: string;
  /** The first judgement of the call (a re-judgement after a stale approval does not replace it). */
  judgement?: Judgement;
  /** Every inspector's verdict behind {@link judgement}, in inspector order. */
  verdicts?: readonly Verdict[];
  judgedAt?: number;
  /** Total ms the call waited on cards. */
  parkedMs: number;
  /** Total ms the tool ran (its `execute`). */
  runMs: number;
  /** The request ids of the cards raised, in order. */
  cards: string[];
  /** How the last card ended. */
  answer?: CardAnswer;
  /** Whether the tool's `execute` ran. */
  ran: boolean;
  /**
   * Set when PreToolUse hooks rewrote the call's input (`updatedInput`): the hooks, how many rewrites, and the
   * sha256 of the arguments as the model or script sent them and as last rewritten (arguments are not
   * logged; the conversation holds the original under the call id).
   */
  rewritten?: { by: string[]; rounds: number; original_sha256: string; final_sha256: string };
}

/** A fresh log for a call starting now. */
export function newCallLog(): CallLog {
  return { startedAt: performance.now(), parkedMs: 0, runMs: 0, cards: [], ran: false };
}

/** The inspectors whose allow answers "may this run without asking?" (the floor's and elevation's allow only mean "no objection"). */
const ALLOW_DECIDERS: readonly InspectorName[] = ["tool_config", "mode"];

/** The permission rule a verdict names, if any. */
function ruleOf(v: Verdict | undefined): string | undefined {
  return v?.rule;
}

/**
 * The verdict that decided a judgement: the deny, the ask's primary, or — for an allow — the first
 * allow carrying a rule, else an allow that answers the mode's ask (a hook's), else the permission layer's allow ({@link ALLOW_DECIDERS}: the per-tool permission
 * or the mode, which decide whether a call may run without asking), else the first allow.
 * Undefined when nothing was judged or no inspector gave a verdict.
 */
export function decidingVerdict(judgement: Judgement | undefined, verdicts: readonly Verdict[] = []): Verdict | undefined {
  if (!judgement) return undefined;
  switch (judgement.kind) {
    case "deny":
      return judgement.verdict;
    case "ask":
      return judgement.primary;
    case "allow": {
      const allows = verdicts.filter((v) => v.kind === "allow");
      return (
        allows.find((v) => ruleOf(v) !== undefined) ??
        // a hook's explicit allow that answered the mode's ask decided the call, not the floor's "no objection"
        allows.find((v) => v.answersMode === true) ??
        allows.find((v) => ALLOW_DECIDERS.includes(v.inspector)) ??
        allows[0]
      );
    }
    default:
      return assertNever(judgement, "judgement");
  }
}

/** What the gate knows of the call itself when it writes the row. */
export interface LoggedCall {
  name: string;
  callId: string;
  fromScript: boolean;
  parentCallId?: string;
}

/** The call's end: ran (its result ok or not) or refused with a code. */
export type LoggedOutcome = { ok: true } | { ok: false; error: { code: string; message: string } };

const ms = (x: number) => Math.round(x * 1000) / 1000;

/**
 * Builds the `call_judged` row of a call (pure but for the clock: `endedAt` defaults to now).
 * Columns: `session_id` = `home_session_id` = the calling session (null when there was none), `decision`
 * ({@link CallDecision}), `code` (the refusal's code when the call did not run, else null), `request_id` (the
 * last card's), `actor` (the session the card was answered from). `detail`: `{call_id, tool, from_script,
 * parent_call_id?, turn_id?, inspector?, rule?, session_rule? (true: the rule is the session tree's), reason?, ran, error?, cards?, answer?,
 * rewritten? ({by, rounds, original_sha256, final_sha256}: hooks rewrote the input; the judgement is the final input's), verdicts, ms: {judge?,
 * parked, run, total}}` — `ms` in milliseconds.
 */
export function callJudgedRow(log: CallLog, call: LoggedCall, outcome: LoggedOutcome, endedAt = performance.now()): AuditEntry {
  const judgement = log.judgement;
  const decision: CallDecision = judgement ? judgement.kind : "refused";
  const deciding = decidingVerdict(judgement, log.verdicts);
  const rule = ruleOf(deciding);
  const reason = deciding && deciding.kind !== "allow" ? deciding.reason : undefined;
  const refusedCode = !log.ran && !outcome.ok ? outcome.error.code : null;
  const detail: Record<string, unknown> = {
    call_id: call.callId,
    tool: call.name,
    from_script: call.fromScript,
    ...(call.parentCallId ? { parent_call_id: call.parentCallId } : {}),
    ...(log.turnId ? { turn_id: log.turnId } : {}),
    ...(deciding ? { inspector: deciding.inspector } : {}),
    ...(rule !== undefined ? { rule } : {}),
    ...(deciding?.kind === "allow" && deciding.session ? { session_rule: true } : {}),
    ...(reason !== undefined ? { reason } : {}),
    ran: log.ran,
    ...(!outcome.ok ? { error: { code: outcome.error.code, message: outcome.error.message } } : {}),
    ...(log.cards.length > 1 ? { cards: log.cards } : {}),
    ...(log.answer ? { answer: log.answer } : {}),
    ...(log.rewritten ? { rewritten: log.rewritten } : {}),
    verdicts: (log.verdicts ?? []).map((v) => ({
      inspector: v.inspector,
      kind: v.kind,
      ...(v.kind === "deny" ? { code: v.code } : {}),
      ...(ruleOf(v) !== undefined ? { rule: ruleOf(v) } : {}),
      ...("hook" in v && v.hook ? { hook: v.hook } : {}),
    })),
    ms: {
      ...(log.judgedAt !== undefined ? { judge: ms(log.judgedAt - log.startedAt) } : {}),
      parked: ms(log.parkedMs),
      run: ms(log.runMs),
      total: ms(endedAt - log.startedAt),
    },
  };
  return {
    kind: "call_judged",
    outcome: "recorded",
    session_id: log.sessionId ?? null,
    home_session_id: log.sessionId ?? null,
    decision,
    code: refusedCode,
    request_id: log.cards.at(-1) ?? null,
    actor: log.answer?.decided_in ?? null,
    detail,
  };
}

/**
 * Writes the call's `call_judged` row. When a person answered its last card, the answer's `proof` (did the
 * accepted attempt carry the approver token) is read from that card's accepted `card_decision` row.
 * The row is buffered (`Store.auditSoon`: written within 20 ms, in one transaction with its neighbours) so
 * the log costs the gate no synchronous write. Never throws: a failure is reported on stderr (the call has
 * already been decided; the log is a record, not a wall).
 */
export function writeCallJudged(store: Store, log: CallLog, call: LoggedCall, outcome: LoggedOutcome): void {
  const failed = (e: unknown) => console.error("airlock: the decision log could not record a call:", e);
  try {
    const row = callJudgedRow(log, call, outcome);
    const answer = log.answer;
    if (!answer?.decided_in) {
      store.auditSoon(row);
      return;
    }
    store.sql
      .get<{ detail: string | null; actor: string | null }>(
        "SELECT detail, actor FROM audit WHERE request_id = ? AND kind = 'card_decision' AND outcome = 'accepted' ORDER BY id DESC LIMIT 1",
        [answer.request_id],
      )
      .then((accepted) => {
        if (accepted) {
          const d = accepted.detail ? (JSON.parse(accepted.detail) as { proof?: unknown }) : {};
          (row.detail as Record<string, unknown>).answer = { ...answer, proof: d.proof === true, ...(accepted.actor ? { via: accepted.actor } : {}) };
        }
        store.auditSoon(row);
      })
      .catch(failed);
  } catch (e) {
    failed(e);
  }
}
