/**
 * @module airlock-error
 * The error class and `assertNever`, apart from errors.ts's code list and its two tables (HTTP status, exit code),
 * which errors.ts re-exports with them: the modules `airlock run` evaluates before its early request (config/paths.ts,
 * cli/run-argv.ts, agent/providers/openai-request.ts) import these from here, so the tables are not evaluated on that
 * path (docs/performance.md, issue 20, eleventh session). Everyone else imports them from errors.ts; the class is one.
 */
import type { ErrorCode } from "./errors.ts";

/** The one error class. `code` is what callers switch on; `message` says what was wrong and what to do. */
export class AirlockError extends Error {
  override readonly name = "AirlockError";
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** Extra machine-readable fields rendered alongside `{error, message}` (e.g. `{path}` or `{inspector}`). */
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }

  /** The JSON shape used on the wire and in tool results: `{code, message, ...details}`. */
  toJSON(): { code: ErrorCode; message: string } & Record<string, unknown> {
    return { code: this.code, message: this.message, ...this.details };
  }
}

/** Normalises anything thrown into an AirlockError (unknown errors become `internal`). */
export function toAirlockError(e: unknown, fallback: ErrorCode = "internal"): AirlockError {
  if (e instanceof AirlockError) return e;
  if (e instanceof Error) return new AirlockError(fallback, e.message);
  return new AirlockError(fallback, String(e));
}

/**
 * The end of every exhaustive `switch` over a union: `tsc` refuses the call while a member is unhandled,
 * and a value that slips past the types at run time fails closed.
 * @throws AirlockError `internal` naming the unexpected value, always.
 */
export function assertNever(x: never, what = "value"): never {
  let shown: string;
  try {
    shown = JSON.stringify(x) ?? String(x);
  } catch {
    shown = String(x);
  }
  throw new AirlockError("internal", `unexpected ${what}: ${shown}; this is a bug in airlock, please report it`);
}
