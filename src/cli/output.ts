/**
 * @module cli/output
 * How the CLI writes: results on stdout and nothing else there; errors, logs and warnings on stderr
 * (SPEC §2). Writes are synchronous so nothing is lost when `main.ts` calls `process.exit`, and each
 * JSON line reaches a reader as soon as it is written.
 */
import { fstatSync, writeSync } from "node:fs";
import { exitCodeFor, toAirlockError, type AirlockError, type ErrorCode, type ExitCode } from "../errors.ts";

const STDOUT = 1;
const STDERR = 2;

/**
 * Writes all of `text` to a file descriptor synchronously. A non-blocking pipe that is full
 * (`EAGAIN`) is waited on briefly and retried; a closed reader (`EPIPE`, or `EIO` from a terminal that hung up)
 * ends the write silently.
 */
export function writeAll(fd: number, text: string): void {
  let buf = Buffer.from(text, "utf8");
  while (buf.length > 0) {
    try {
      const n = writeSync(fd, buf);
      buf = buf.subarray(n);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === "EAGAIN") {
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 2);
        continue;
      }
      if (code === "EPIPE" || code === "EIO") return; // EIO: a terminal that hung up (nobody reads it any more)
      throw e;
    }
  }
}

/**
 * Whether file descriptor `fd` may be a terminal: false when it surely is not (it can be stat'ed and is
 * not a character device: a pipe, a file, a socket), true otherwise (a terminal, /dev/null, a failed stat).
 * One `fstat`: asking `process.stdin/stdout/stderr.isTTY` builds a Node stream, several ms at start
 * (docs/performance.md), so callers ask this first and the stream only when it says true.
 */
export function mayBeTerminal(fd: number): boolean {
  try {
    return fstatSync(fd).isCharacterDevice();
  } catch {
    return true;
  }
}

/**
 * Characters a terminal acts on or that reorder what is shown: C0 and C1 controls and DEL (ESC, BEL, CR,
 * line breaks …), the Unicode line and paragraph separators, and the bidirectional marks, embeddings,
 * overrides and isolates (text that reads differently from what it is).
 */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/**
 * `text` safe to print on a terminal: every character of {@link UNSAFE} shown as a visible `\uXXXX` escape, so
 * text a model, a hook or a server wrote (a command, a hook's reason, an elevation's justification, a path in an
 * error message, a session title) cannot move the cursor, hide or recolour what follows, retitle the window,
 * write the clipboard (OSC 52), fake a line or read differently from what it is. The one escape of every text
 * surface (`airlock run`'s lines and cards, `attach`, `acp`'s titles).
 */
export function safe(text: string): string {
  return text.replace(UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** Writes text to stdout (the result channel). */
export function writeStdout(text: string): void {
  writeAll(STDOUT, text);
}

/** Writes text to stderr (logs, progress, warnings). */
export function writeStderr(text: string): void {
  writeAll(STDERR, text);
}

/** Writes one JSON value as one line on stdout (NDJSON), flushed before returning. */
export function writeJsonLine(value: unknown): void {
  writeAll(STDOUT, `${JSON.stringify(value)}\n`);
}

/** Writes a JSON value pretty-printed on stdout (for `--json` listings meant for people and `jq`). */
export function writeJson(value: unknown): void {
  writeAll(STDOUT, `${JSON.stringify(value, null, 2)}\n`);
}

/**
 * The CLI's one text table: a header row and rows of cells (each shown with `String`), columns padded to
 * their widest cell and joined by two spaces, trailing spaces trimmed, one line per row ending in `\n`.
 */
export function table(head: readonly string[], rows: readonly (readonly unknown[])[]): string {
  const all = [head, ...rows].map((r) => r.map((cell) => String(cell)));
  const widths = head.map((_, i) => Math.max(...all.map((r) => r[i]!.length)));
  return all.map((r) => r.map((cell, i) => cell.padEnd(widths[i]!)).join("  ").trimEnd()).join("\n") + "\n";
}

/** The CLI's error line, `airlock: <code>: <message>\n` (SPEC §2). */
export function errorLine(code: ErrorCode, message: string): string {
  return `airlock: ${code}: ${message}\n`;
}

/**
 * Prints an error on stderr as `airlock: <code>: <message>` and returns it as an AirlockError
 * (anything not an AirlockError becomes `internal`; its stack is printed when `AIRLOCK_DEBUG` is set).
 */
export function printError(err: unknown): AirlockError {
  const e = toAirlockError(err);
  writeAll(STDERR, errorLine(e.code, e.message));
  if (process.env.AIRLOCK_DEBUG && err instanceof Error && err.stack) writeAll(STDERR, `${err.stack}\n`);
  return e;
}

/**
 * The one CLI error renderer: prints `err` (any thrown value) as {@link printError} does and returns the
 * exit code of its code (`EXIT_CODE` in errors.ts: 1 failed, 2 usage/config, 3 blocked, 130 cancelled).
 */
export function reportError(err: unknown): ExitCode {
  return exitCodeFor(printError(err).code);
}
