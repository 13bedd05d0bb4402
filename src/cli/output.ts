/**
 * @module cli/output
 * How the CLI writes: results on stdout and nothing else there; errors, logs and warnings on stderr
 * (SPEC §2). Writes are synchronous so nothing is lost when `main.ts` calls `process.exit`, and each
 * JSON line reaches a reader as soon as it is written.
 */
import { writeSync } from "node:fs";
import { toAirlockError, type AirlockError } from "../errors.ts";

const STDOUT = 1;
const STDERR = 2;

/**
 * Writes all of `text` to a file descriptor synchronously. A non-blocking pipe that is full
 * (`EAGAIN`) is waited on briefly and retried; a closed reader (`EPIPE`) ends the write silently.
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
      if (code === "EPIPE") return;
      throw e;
    }
  }
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

/** A line on stderr prefixed `airlock: warning: `. */
export function warn(message: string): void {
  writeAll(STDERR, `airlock: warning: ${message}\n`);
}

/**
 * Prints an error on stderr as `airlock: <code>: <message>` and returns it as an AirlockError
 * (anything not an AirlockError becomes `internal`; its stack is printed when `AIRLOCK_DEBUG` is set).
 */
export function printError(err: unknown): AirlockError {
  const e = toAirlockError(err);
  writeAll(STDERR, `airlock: ${e.code}: ${e.message}\n`);
  if (process.env.AIRLOCK_DEBUG && err instanceof Error && err.stack) writeAll(STDERR, `${err.stack}\n`);
  return e;
}
