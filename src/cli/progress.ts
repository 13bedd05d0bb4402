/**
 * @module cli/progress
 * The progress line `airlock run` draws on stderr while a turn goes on — only when stderr is a
 * terminal, never on stdout. One line, redrawn in place: elapsed time, tool calls so far, refusals,
 * and the last tool. Log lines written through `log` clear it first so they never mix with it.
 */
import type { AnyEvent } from "../bus/bus.ts";
import { mayBeTerminal, safe } from "./output.ts";

/** How many log lines are kept while held (a question on screen); more are counted, not printed. */
const MAX_HELD_LINES = 200;
/** How often the line is redrawn, ms. */
const TICK_MS = 250;
/** The line appears only after the run has taken this long, ms (short runs stay quiet). */
const SHOW_AFTER_MS = 1_000;
const FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

export interface Progress {
  /** Feed every event of the run. */
  onEvent(ev: AnyEvent): void;
  /**
   * Writes a log line on stderr (clearing the progress line first when one is drawn); its control characters are
   * shown escaped (output.ts `safe`). While held, the line waits and is written when the hold ends (or at stop).
   */
  log(line: string): void;
  /** Stops redrawing and clears the line. Idempotent. */
  stop(): void;
  /** Pauses redrawing and holds log lines while `true` (a question is asked on the terminal), resumes on `false`. */
  hold(on: boolean): void;
}

/**
 * Creates the progress line.
 * @param opts.tty whether stderr is a terminal (default `process.stderr.isTTY`, asked only when fd 2 may be one: output.ts `mayBeTerminal`); when false nothing is drawn.
 * @param opts.write how to write to stderr (synchronous).
 */
export function createProgress(opts: { tty?: boolean; write: (s: string) => void; now?: () => number }): Progress {
  const tty = opts.tty ?? (mayBeTerminal(2) && process.stderr.isTTY === true);
  const now = opts.now ?? (() => Date.now());
  const started = now();
  let calls = 0;
  let refused = 0;
  let last = "";
  let frame = 0;
  let drawn = false;
  const clear = () => {
    if (drawn) opts.write("\r\x1b[2K");
    drawn = false;
  };
  let held = false;
  /** Log lines written while held, printed when the hold ends (at most MAX_HELD_LINES; the rest counted). */
  const heldLines: string[] = [];
  let droppedLines = 0;
  const flushHeld = () => {
    if (heldLines.length === 0 && droppedLines === 0) return;
    clear();
    opts.write(heldLines.join("") + (droppedLines ? `airlock: … ${droppedLines} more log line(s) while a question was on screen\n` : ""));
    heldLines.length = 0;
    droppedLines = 0;
  };
  const draw = () => {
    if (held) return;
    const elapsed = now() - started;
    if (elapsed < SHOW_AFTER_MS) return;
    const cols = process.stderr.columns ?? 80;
    const text = `${FRAMES[frame++ % FRAMES.length]} ${(elapsed / 1000).toFixed(1)}s · ${calls} tool call${calls === 1 ? "" : "s"}${refused ? ` · ${refused} refused` : ""}${last ? ` · ${last}` : ""}`;
    opts.write(`\r\x1b[2K${text.slice(0, Math.max(10, cols - 1))}`);
    drawn = true;
  };
  const timer = tty ? setInterval(draw, TICK_MS) : undefined;
  timer?.unref?.();
  let stopped = false;
  return {
    onEvent(ev) {
      if (ev.type === "tool_request" && ev.data.rewritten_by === undefined) {
        calls++;
        last = safe(ev.data.tool); // the model's name for it: escaped, as every text the run shows
      } else if (ev.type === "tool_result" && ev.data.ok === false) {
        const code = ev.data.error?.code;
        if (code === "no_human_surface" || code === "denied") refused++;
      }
    },
    log(line) {
      // a log line carries model-written text (a path in an error message, a hook's message): its control
      // characters are shown escaped, so it cannot move the cursor over a card on screen or fake one
      const text = `${safe(line.endsWith("\n") ? line.slice(0, -1) : line)}\n`;
      // while a card is on screen nothing comes between it and its answer: a script's failing calls would
      // otherwise scroll the card away and leave the model's own text right above the question
      if (held && !stopped) {
        if (heldLines.length < MAX_HELD_LINES) heldLines.push(text);
        else droppedLines++;
        return;
      }
      clear();
      opts.write(text);
    },
    hold(on) {
      held = on;
      if (on) clear();
      else flushHeld();
    },
    stop() {
      if (stopped) return;
      stopped = true;
      if (timer) clearInterval(timer);
      clear();
      flushHeld();
    },
  };
}
