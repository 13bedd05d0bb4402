/**
 * @module cli/terminal-approver
 * The human surface of an interactive `airlock run`: a card surfaced at the run's root session is
 * shown on stderr and answered from the terminal (`/dev/tty`), one at a time. The person at the
 * terminal is present, so their "yes" carries user proof (the approver token of this data dir).
 * Used only when stdin and stderr are both TTYs; otherwise `airlock run` is headless (nobody can answer).
 */
import type { TypedEvent } from "../bus/bus.ts";
import type { Runtime } from "../runtime.ts";
import { mayBeTerminal } from "./output.ts";

/** Whether a person can answer on this terminal: stdin and stderr are both TTYs. */
export function terminalCanAsk(): boolean {
  // fstat first: the Node streams behind process.stdin/stderr are built only when both may be terminals
  return mayBeTerminal(0) && mayBeTerminal(2) && Boolean(process.stdin.isTTY && process.stderr.isTTY);
}

/** Asks one question on the terminal and resolves with the answer line. */
export type LineReader = (question: string) => Promise<string>;

/**
 * A line reader on the TTY stdin (non-blocking: the turn keeps running while it waits). `close()` releases stdin.
 * `node:readline` is loaded here, on first use: a headless run never needs it.
 */
export async function ttyLineReader(): Promise<LineReader & { close(): void }> {
  const { createInterface } = await import("node:readline");
  const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: true });
  const ask = ((question: string) => new Promise<string>((resolve) => rl.question(question, (a) => resolve(a.trim())))) as LineReader & { close(): void };
  ask.close = () => rl.close();
  return ask;
}

/**
 * Answers cards surfaced at `rootSessionId` from the terminal. Returns a stop function.
 * `y`/`yes` → `allow_once` (with user proof: the person is at the terminal); anything else → `deny`.
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
  const pump = async (): Promise<void> => {
    if (busy || stopped) return;
    const ev = queue.shift();
    if (!ev) return;
    busy = true;
    hold(true);
    try {
      const card = ev.data;
      const from = card.home_session_id === rootSessionId ? "" : ` (from subagent ${card.home_session_id})`;
      write(`\nairlock: ${card.tool}${from} needs your approval — ${card.inspector}: ${card.reason}\n  arguments: ${JSON.stringify(card.arguments)}\n`);
      const answer = await read("  allow once? [y/N] ");
      if (stopped) return;
      const allow = /^y(es)?$/i.test(answer);
      const r = await rt.cards.resolve(card.request_id, allow ? "allow_once" : "deny", {
        sessionId: rootSessionId,
        approverToken: rt.tokens.approverToken,
        actor: "terminal",
      });
      write(r.ok ? `  ${allow ? "allowed once" : "denied"}\n` : `  not applied: ${r.error.message}\n`);
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
