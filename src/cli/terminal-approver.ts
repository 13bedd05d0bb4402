/**
 * @module cli/terminal-approver
 * The human surface of an interactive `airlock run`: a card surfaced at the run's root session is
 * shown on stderr and answered from the terminal (`/dev/tty`), one at a time. The person at the
 * terminal is present, so their "yes" carries user proof (the approver token of this data dir).
 * Used only when stdin and stderr are both TTYs; otherwise `airlock run` is headless (nobody can answer).
 */
import type { TypedEvent } from "../bus/bus.ts";
import type { Runtime } from "../runtime.ts";
import { mayBeTerminal, safe } from "./output.ts";
import { ARM_MS, terminalFlusher } from "./terminal-arm.ts";

/** Whether a person can answer on this terminal: stdin and stderr are both TTYs. */
export function terminalCanAsk(): boolean {
  // fstat first: the Node streams behind process.stdin/stderr are built only when both may be terminals
  return mayBeTerminal(0) && mayBeTerminal(2) && Boolean(process.stdin.isTTY && process.stderr.isTTY);
}

/**
 * Asks one question on the terminal and resolves with the answer line (trimmed), or with `null` once the
 * terminal's input has ended (EOF: Ctrl-D at the prompt, a closed stdin): nobody can answer there any more.
 * Never rejects.
 */
export type LineReader = (question: string) => Promise<string | null>;

/**
 * A line reader on the TTY stdin (non-blocking: the turn keeps running while it waits). `close()` releases stdin
 * (idempotent). Once stdin has ended — Ctrl-D at the prompt closes the readline, as does the end of stdin while
 * no question is asked — the question waiting (if any) and every later one resolve `null`.
 * Type-ahead never answers a question: what was typed before it is dropped, the question is put only after
 * {@link ARM_MS} (keys typed meanwhile are dropped too, a line or a partial line), as `airlock attach` does.
 * `node:readline` is loaded here, on first use: a headless run never needs it.
 */
export async function ttyLineReader(): Promise<LineReader & { close(): void }> {
  const { createInterface } = await import("node:readline");
  const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: true });
  let closed = false;
  let waiting: ((a: string | null) => void) | undefined;
  // Ctrl-C at the prompt: the terminal is in raw mode, so readline sees the key, and with no listener it would
  // close itself (read as the end of stdin). It is the user's interrupt: sent on as SIGINT, which cancels the turn.
  rl.on("SIGINT", () => process.kill(process.pid, "SIGINT"));
  const ended = () => {
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
          rl.question(question, (a) => {
            waiting = undefined;
            resolve(a.trim());
          });
        } catch {
          // ERR_USE_AFTER_CLOSE: the readline closed before its close event reached us
          closed = true;
          waiting = undefined;
          resolve(null);
        }
      }, ARM_MS);
    })) as LineReader & { close(): void };
  ask.close = () => {
    process.stderr.off("error", onOutputError);
    if (closed) return;
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

/**
 * Answers cards surfaced at `rootSessionId` from the terminal. Returns a stop function.
 * `y`/`yes` → `allow_once` (with user proof: the person is at the terminal); anything else → `deny`.
 * Fails closed when the terminal's input ends (`read` resolves `null`, or throws): {@link STDIN_CLOSED_LINE} is
 * written once, the card at the prompt and every card parked before are denied (no user proof, actor
 * `terminal`, reason `stdin_closed`) without asking, and every later ask of the run is refused at once with
 * `no_human_surface` as in a headless run (`rt.gate.surfaceGone`).
 */
export function startTerminalApprover(
  rt: Runtime,
  rootSessionId: string,
  read: LineReader,
  write: (s: string) => void,
  hold: (on: boolean) => void = () => {},
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
      const from = card.home_session_id === rootSessionId ? "" : ` (from subagent ${card.home_session_id})`;
      // the card's text is partly model-written (an elevation's justification, a path the floor names, the
      // arguments): shown through safe(), so it cannot hide the real arguments or fake a line (C1 too: JSON keeps them raw)
      write(`\nairlock: ${safe(`${card.tool}${from} needs your approval — ${card.inspector}: ${card.reason}`)}\n  arguments: ${safe(JSON.stringify(card.arguments))}\n`);
      let answer: string | null = null;
      if (!ended) answer = await read("  allow once? [y/N] ").catch(() => null);
      if (stopped) return;
      if (answer === null && !ended) {
        ended = true;
        rt.gate.surfaceGone(rootSessionId); // later asks of the run are refused at once, as headless
        write(`\n${STDIN_CLOSED_LINE}`);
      }
      const allow = answer !== null && /^y(es)?$/i.test(answer);
      const r = await rt.cards.resolve(
        card.request_id,
        allow ? "allow_once" : "deny",
        answer === null
          ? { sessionId: rootSessionId, actor: "terminal", reason: "stdin_closed (the terminal's input ended; nobody can answer there)" }
          : { sessionId: rootSessionId, approverToken: rt.tokens.approverToken, actor: "terminal" },
      );
      write(r.ok ? `  ${allow ? "allowed once" : answer === null ? "denied (stdin closed)" : "denied"}\n` : `  not applied: ${r.error.message}\n`);
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
