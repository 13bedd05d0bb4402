/**
 * @module cli/terminal-approver
 * The human surface of an interactive `airlock run`: a card surfaced at the run's root session is
 * shown on stderr and answered from the terminal (`/dev/tty`), one at a time. The person at the
 * terminal is present, so their allow (`y` once, `a` for the session) carries user proof (the approver token of this data dir).
 * Used only when stdin and stderr are both TTYs; otherwise `airlock run` is headless (nobody can answer).
 */
import type { TypedEvent } from "../bus/bus.ts";
import type { Runtime } from "../runtime.ts";
import { assertNever } from "../errors.ts";
import { mayBeTerminal, safe, writeStderr } from "./output.ts";
import { ARM_MS, terminalFlusher } from "./terminal-arm.ts";
import { cardWhy } from "./card-why.ts";

/** Whether a person can answer on this terminal: stdin and stderr are both TTYs. */
export function terminalCanAsk(): boolean {
  // fstat first: the Node streams behind process.stdin/stderr are built only when both may be terminals
  return mayBeTerminal(0) && mayBeTerminal(2) && Boolean(process.stdin.isTTY && process.stderr.isTTY);
}

/**
 * Asks one question on the terminal and resolves with the answer line (trimmed), or with `null` once the
 * terminal's input has ended (EOF: Ctrl-D at the prompt, a closed stdin, a terminal that went away): nobody
 * can answer there any more. Never rejects.
 */
export type LineReader = (question: string) => Promise<string | null>;

/** A {@link LineReader} on the terminal, with what `airlock run` needs around it. */
export interface TtyLineReader extends LineReader {
  /** Releases stdin (idempotent). */
  close(): void;
  /** Whether the input ended because the terminal went away (hung up), not because a person ended it (Ctrl-D). */
  gone(): boolean;
  /** Ends the line of a question on screen (writes a line break when one is shown), so the next output starts on a line of its own. */
  endLine(): void;
}

/**
 * A line reader on the TTY stdin (non-blocking: the turn keeps running while it waits). Once stdin has ended —
 * Ctrl-D at the prompt closes the readline, as does the end of stdin while no question is asked — the question
 * waiting (if any) and every later one resolve `null`. When it ended because the terminal went away
 * (stdin is no longer a terminal: the kernel fails `isatty` on a hung-up one), `onGone` is called first (once), and `gone()` is true from then on.
 * Type-ahead never answers a question: what was typed before it is dropped, the question is put only after
 * {@link ARM_MS} (keys typed meanwhile are dropped too, a line or a partial line), as `airlock attach` does.
 * `node:readline` is loaded here, on first use: a headless run never needs it.
 */
export async function ttyLineReader(onGone: () => void = () => {}): Promise<TtyLineReader> {
  const { createInterface } = await import("node:readline");
  const { isatty } = await import("node:tty");
  // whether the terminal of stdin went away: stdin, a TTY when the run began, is no longer one. On a hung-up
  // terminal (its window closed, ssh dropped, the PTY's master closed) the kernel fails TCGETS with EIO, so
  // isatty(0) is false; after Ctrl-D it is still a terminal
  const terminalGone = (): boolean => {
    try {
      return !isatty(0);
    } catch {
      return true;
    }
  };
  const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: true });
  let closed = false;
  let closing = false; // close() was called: the end of the input is ours, not the terminal's
  let wentAway = false;
  let onScreen = false; // a question is on screen, its line not ended
  let waiting: ((a: string | null) => void) | undefined;
  const endLine = () => {
    if (!onScreen) return;
    onScreen = false;
    writeStderr("\n");
  };
  // Ctrl-C at the prompt: the terminal is in raw mode, so readline sees the key, and with no listener it would
  // close itself (read as the end of stdin). It is the user's interrupt: sent on as SIGINT, which cancels the turn.
  rl.on("SIGINT", () => {
    endLine(); // what is said next (the held log lines, the cancellation) starts on a line of its own
    process.kill(process.pid, "SIGINT");
  });
  const ended = () => {
    if (!closed && !closing && terminalGone()) {
      // not a person ending the input: the terminal is gone, as on SIGHUP (which may come later, or never)
      wentAway = true;
      onScreen = false;
      onGone();
    }
    closed = true;
    const w = waiting;
    waiting = undefined;
    w?.(null);
  };
  rl.on("close", ended);
  // a terminal that hung up: readline's own writes (process.stderr) and its closing on the end of stdin
  // (restoring the mode: setRawMode EIO, re-emitted on the interface) fail, and an error nobody listens to ends
  // the process at once — before the turn's end is stored (left `running`, its card `pending`). Output there is
  // dropped; an input error is the end of the input.
  const onOutputError = () => {};
  process.stderr.on("error", onOutputError);
  rl.on("error", ended);
  const flushInput = await terminalFlusher(0);
  const ask = ((question: string) =>
    new Promise<string | null>((resolve) => {
      if (closed) return resolve(null);
      waiting = resolve;
      // type-ahead (a y + Enter meant for a shell, the second y of a double-typed answer, a reflex as the card
      // scrolled in) never answers: the unread input is dropped now and after ARM_MS, and a line typed
      // meanwhile reaches no question (readline drops it); a partial line is cleared before the question
      flushInput();
      setTimeout(() => {
        if (closed || waiting !== resolve) return;
        flushInput();
        // a partial line typed meanwhile is dropped without drawing anything (readline's line editing would redraw)
        Object.assign(rl, { line: "", cursor: 0 });
        try {
          onScreen = true;
          rl.question(question, (a) => {
            onScreen = false;
            waiting = undefined;
            resolve(a.trim());
          });
        } catch {
          // ERR_USE_AFTER_CLOSE: the readline closed before its close event reached us
          onScreen = false;
          closed = true;
          waiting = undefined;
          resolve(null);
        }
      }, ARM_MS);
    })) as TtyLineReader;
  ask.gone = () => wentAway;
  ask.endLine = endLine;
  ask.close = () => {
    process.stderr.off("error", onOutputError);
    if (closed) return;
    closing = true;
    closed = true;
    try {
      rl.close();
    } catch {
      // EIO: the terminal hung up; there is no mode left to restore
    }
  };
  return ask;
}

/** The one line said on stderr when the terminal's input ends during a run. */
export const STDIN_CLOSED_LINE =
  "airlock: stdin closed: nobody can answer on this terminal any more — the card waiting is denied and later calls that need a person are refused (no_human_surface)\n";

/** The reason a card is denied with when the terminal's input ended (nobody answered it: the outcome says `nobody`). */
export const STDIN_CLOSED_REASON = "stdin_closed: the terminal's input ended";

/** The most lines of a card's arguments shown before its question (`v` shows them all). */
export const CARD_ARG_LINES = 20;
/** The most characters of a card's arguments shown before its question (`v` shows them all). */
export const CARD_ARG_CHARS = 2000;
/** The most characters of a card's why (the inspector's reason: partly model-written, an elevation's justification) and of its `will_fail` (model-chosen paths) shown before its question (`v` shows them all). */
export const CARD_WHY_CHARS = 400;
/** Arguments whose compact JSON (escaped) is at most this many characters are shown on one line. */
const COMPACT_ARGS_MAX = 160;

/** A card as the terminal approver shows it (the `action_required` event's data). */
export type ShownCard = TypedEvent<"action_required">["data"];

/** What a person typed at a card's question means. */
export type CardAnswer =
  | { kind: "allow_once" }
  | { kind: "allow_session" }
  | { kind: "deny"; reason?: string }
  | { kind: "view" }
  /** `a` on a card that offers no rule for the session. */
  | { kind: "no_rule" }
  /** `n REASON` with a REASON over {@link DENY_REASON_MAX} characters (as `POST …/actions/…` refuses it). */
  | { kind: "reason_too_long" }
  | { kind: "unknown" };

/** The longest `n REASON` reason, characters: a decision's reason over HTTP is at most this long too (server/routes/actions.ts). */
export const DENY_REASON_MAX = 2000;

/**
 * Reads an answer line (trimmed): `y`/`yes` allow once; `a` allow for the session (`no_rule` when the card offers
 * no rule); an empty line, `n` or `no` deny; `n REASON` (or `no REASON`) deny, REASON told to the model (`reason_too_long` past {@link DENY_REASON_MAX} characters); `v`/`view`
 * shows the whole arguments; anything else is `unknown` (asked again — never an allow). Case-insensitive. Pure.
 */
export function parseAnswer(line: string, offersRule: boolean): CardAnswer {
  const a = line.trim();
  if (a === "" || /^no?$/i.test(a)) return { kind: "deny" };
  if (/^y(es)?$/i.test(a)) return { kind: "allow_once" };
  if (/^a$/i.test(a)) return offersRule ? { kind: "allow_session" } : { kind: "no_rule" };
  if (/^v(iew)?$/i.test(a)) return { kind: "view" };
  const withReason = /^no?\s+(\S.*)$/is.exec(a);
  if (withReason) {
    const reason = withReason[1]!.trim();
    return reason.length > DENY_REASON_MAX ? { kind: "reason_too_long" } : { kind: "deny", reason };
  }
  return { kind: "unknown" };
}

/** The question asked at a card: the answers it takes (`[a]session` only when the card offers a rule). */
export function cardQuestion(offersRule: boolean): string {
  return `  allow? [y]once${offersRule ? " [a]session" : ""} [n]o (n REASON tells the model why) [v]iew › `;
}

/**
 * `lines` (escaped argument lines) cut to at most `maxLines` lines and `maxChars` characters (a line is cut
 * whole characters and escapes only); `moreBytes`: the UTF-8 bytes of the rest of the text (`lines` joined by
 * line breaks) not shown, 0 when all of it is. Pure.
 */
export function boundedLines(lines: readonly string[], maxLines: number = CARD_ARG_LINES, maxChars: number = CARD_ARG_CHARS): { shown: string[]; moreBytes: number } {
  const shown: string[] = [];
  let used = 0;
  for (const line of lines) {
    if (shown.length >= maxLines) break;
    if (used + line.length <= maxChars) {
      shown.push(line);
      used += line.length;
      continue;
    }
    let part = line.slice(0, Math.max(0, maxChars - used));
    if (/[\ud800-\udbff]$/.test(part)) part = part.slice(0, -1); // half a surrogate pair
    const escape = /\\u[0-9a-f]{0,3}$/.exec(part); // half an escape
    if (escape) part = part.slice(0, escape.index);
    if (part !== "") shown.push(part);
    break;
  }
  const all = Buffer.byteLength(lines.join("\n"));
  return { shown, moreBytes: all - Buffer.byteLength(shown.join("\n")) };
}

/**
 * A card as written before its question (ends with a line break): the agent that asks (`label`: its chain
 * prefix, cli/chain-prefix.ts, `[root›subagent#0] ` for a subagent's card, `""` for the root session's), the
 * tool, why it asks; its arguments — on one line when short, else pretty (`argLines`, escaped) and bounded by
 * {@link boundedLines}, with `… N more bytes`; why allowing will not help (`will_fail`); the rule `a` adds; then
 * right above the question the agent, the tool and what the call is about (`summary`, cli/call-summary.ts) again,
 * and why it asks cut to one line of `width` characters (the terminal's columns). Model-written text is shown through `safe()`.
 */
export function cardText(card: ShownCard, label: string, argLines: readonly string[], summary: string, width: number = 80): string {
  // the card's text is partly model-written (an elevation's justification, a path the floor names, the
  // arguments): shown through safe(), so it cannot hide the real arguments or fake a line (C1 too: JSON keeps them raw)
  // the why is bounded too (an elevation's justification is the model's, of any length): a long one would
  // scroll the tool, the sandbox asked for and the arguments out of sight of the question
  const why = boundedWhy(card);
  let out = `\nairlock: ${label}${safe(`${card.tool} needs your approval — `)}${why.shown}${why.moreBytes > 0 ? ` … ${why.moreBytes.toLocaleString("en-US")} more bytes (v shows it all)` : ""}\n`;
  const compact = safe(JSON.stringify(card.arguments) ?? "null");
  if (compact.length <= COMPACT_ARGS_MAX) out += `  arguments: ${compact}\n`;
  else {
    const { shown, moreBytes } = boundedLines(argLines);
    out += `  arguments:\n${shown.map((l) => `    ${l}\n`).join("")}`;
    if (moreBytes > 0) out += `    … ${moreBytes.toLocaleString("en-US")} more bytes (v shows them all)\n`;
  }
  if (card.will_fail) {
    // it names the model's paths, of any length: bounded as the why is
    const { shown, moreBytes } = boundedLines([safe(card.will_fail)], 1, CARD_WHY_CHARS);
    out += `  ${shown.join("")}${moreBytes > 0 ? ` … ${moreBytes.toLocaleString("en-US")} more bytes (v shows it all)` : ""}\n`;
  }
  if (card.suggested_rule) out += `  a: allow for this session adds the rule ${safe(card.suggested_rule)} (matching calls in this session tree then run without asking)\n`;
  return out + restated(card, label, summary, width);
}

/** A card's why ({@link cardWhy}, escaped) cut to {@link CARD_WHY_CHARS} characters by {@link boundedLines}. */
function boundedWhy(card: Pick<ShownCard, "inspector" | "reason">): { shown: string; moreBytes: number } {
  const { shown, moreBytes } = boundedLines([safe(cardWhy(card.inspector, card.reason))], 1, CARD_WHY_CHARS);
  return { shown: shown.join(""), moreBytes };
}

/**
 * The two lines right above a card's question: the agent (`label`, its chain prefix), the tool and what the call
 * is about; then why it asks ({@link cardWhy}, escaped), cut to at most `width` characters (at least 20) with `…`,
 * so a card whose start scrolled away still says why it asks in sight of the question.
 */
function restated(card: ShownCard, label: string, summary: string, width: number): string {
  const why = safe(cardWhy(card.inspector, card.reason));
  const room = Math.max(20, Math.floor(width)) - 2; // the indent
  const { shown, moreBytes } = why.length <= room ? { shown: [why], moreBytes: 0 } : boundedLines([why], 1, room - 1);
  return `  ${label}${safe(card.tool)}${summary ? ` ${summary}` : ""}\n  ${shown.join("")}${moreBytes > 0 ? "…" : ""}\n`;
}

/**
 * Answers cards surfaced at `rootSessionId` from the terminal. Returns a stop function.
 * Each card is written bounded ({@link cardText}), then {@link cardQuestion} is asked until it gets an answer
 * ({@link parseAnswer}): `y` → `allow_once`, `a` → `allow_session` (both with user proof: the person is at the
 * terminal), an empty line or `n` → `deny`, `n REASON` → `deny` with REASON for the model, `v` writes the whole
 * arguments and asks again, anything else asks again.
 * Fails closed when the terminal's input ends (`read` resolves `null`, or throws): {@link STDIN_CLOSED_LINE} is
 * written once, the card at the prompt and every card parked before are denied (no user proof, actor
 * `terminal`, reason {@link STDIN_CLOSED_REASON}, `nobody`: no person answered) without asking, and every later
 * ask of the run is refused at once with `no_human_surface` as in a headless run (`rt.gate.surfaceGone`).
 * When the input ended because the terminal went away (`gone()`), the turn is being cancelled (as on SIGHUP):
 * its cards are withdrawn with it, and nothing is answered or written.
 * `chainLabel(sessionId)` names the agent a card came from as the stderr call lines do (cli/chain-prefix.ts:
 * `[root›subagent#0] `, `""` for the root session); `width()` is the terminal's columns (80 when unknown).
 */
export function startTerminalApprover(
  rt: Runtime,
  rootSessionId: string,
  read: LineReader,
  write: (s: string) => void,
  hold: (on: boolean) => void = () => {},
  gone: () => boolean = () => false,
  chainLabel: (sessionId: string) => string = (id) => (id === rootSessionId ? "" : `[root›${safe(id)}] `),
  width: () => number = () => process.stderr.columns || 80,
): () => void {
  const queue: TypedEvent<"action_required">[] = [];
  let busy = false;
  let stopped = false;
  let ended = false; // the terminal's input ended: nobody can answer here any more
  const pump = async (): Promise<void> => {
    if (busy || stopped) return;
    const ev = queue.shift();
    if (!ev) return;
    busy = true;
    hold(true);
    try {
      const card = ev.data;
      // loaded when a card is shown (never on a run that asks nobody)
      const [{ argumentLines }, { callSummary }] = await Promise.all([import("./attach-format.ts"), import("./call-summary.ts")]);
      const argLines = argumentLines(card.arguments);
      const summary = callSummary(card.tool, card.arguments);
      const label = chainLabel(card.home_session_id);
      write(cardText(card, label, argLines, summary, width()));
      let answer: CardAnswer | null = null;
      while (!ended) {
        const line = await read(cardQuestion(Boolean(card.suggested_rule))).catch(() => null);
        if (stopped) return;
        if (line === null) break;
        const a = parseAnswer(line, Boolean(card.suggested_rule));
        if (a.kind === "view") {
          if (boundedWhy(card).moreBytes > 0) write(`  why (all of it): ${safe(cardWhy(card.inspector, card.reason))}\n`);
          if (card.will_fail && safe(card.will_fail).length > CARD_WHY_CHARS) write(`  ${safe(card.will_fail)}\n`);
          write(`  arguments (all of them):\n${argLines.map((l) => `    ${l}\n`).join("")}${restated(card, label, summary, width())}`);
          continue;
        }
        if (a.kind === "no_rule") {
          write("  this card offers no rule for the session: answer y, n, n REASON or v\n");
          continue;
        }
        if (a.kind === "reason_too_long") {
          write(`  a reason is at most ${DENY_REASON_MAX.toLocaleString("en-US")} characters: answer n with a shorter one, or n\n`);
          continue;
        }
        if (a.kind === "unknown") {
          write(`  answer y (allow once)${card.suggested_rule ? ", a (allow for this session)" : ""}, n (deny), n REASON (deny, telling the model why) or v (view the arguments)\n`);
          continue;
        }
        answer = a;
        break;
      }
      if (answer === null && gone()) return; // the terminal went away: the turn is cancelled, its cards with it
      if (answer === null && !ended) {
        ended = true;
        rt.gate.surfaceGone(rootSessionId); // later asks of the run are refused at once, as headless
        write(`\n${STDIN_CLOSED_LINE}`);
      }
      const decision = answer === null ? "deny" : answer.kind;
      const reason = answer?.kind === "deny" ? answer.reason : undefined;
      const r = await rt.cards.resolve(
        card.request_id,
        decision,
        answer === null
          ? { sessionId: rootSessionId, actor: "terminal", reason: STDIN_CLOSED_REASON, nobody: true }
          : { sessionId: rootSessionId, approverToken: rt.tokens.approverToken, actor: "terminal", ...(reason ? { reason } : {}) },
      );
      write(r.ok ? `  ${answered(decision, answer === null, reason, r.outcome.rule)}\n` : `  not applied: ${r.error.message}\n`);
    } catch (e) {
      // never an unhandled rejection (a raw stack trace, the turn left running): the card stays to its TTL or the turn's end
      write(`  not applied: ${e instanceof Error ? e.message : String(e)}\n`);
    } finally {
      hold(false);
      busy = false;
      void pump();
    }
  };
  const off = rt.bus.subscribe(rootSessionId, (ev) => {
    if (ev.type !== "action_required") return;
    queue.push(ev);
    void pump();
  });
  return () => {
    stopped = true;
    off();
  };
}

/** The line written once a card is answered. */
function answered(decision: "allow_once" | "allow_session" | "deny", stdinClosed: boolean, reason: string | undefined, rule: string | undefined): string {
  switch (decision) {
    case "allow_once":
      return "allowed once";
    case "allow_session":
      return `allowed for this session${rule ? ` (rule ${safe(rule)})` : ""}`;
    case "deny":
      return stdinClosed ? "denied (stdin closed)" : reason ? `denied (the model is told: ${safe(reason)})` : "denied";
    default:
      return assertNever(decision, "card decision");
  }
}
