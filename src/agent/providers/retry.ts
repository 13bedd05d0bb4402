/**
 * @module agent/providers/retry
 * Bounded retries with exponential backoff for model calls (our own loop; the SDKs' built-in
 * retries are switched off so `insufficient_quota` is never retried and tests can pace backoff).
 * Also: `Retry-After` parsing and an abortable sleep.
 */
import { AirlockError } from "../../errors.ts";
import type { ModelRequest, ModelTurn } from "./provider.ts";

/** The longest server-requested wait we honour, ms; a longer `Retry-After` ends the retries at once. */
export const MAX_RETRY_AFTER_MS = 60_000;

export interface RetryOptions {
  /** Retries after the first attempt (config `provider.max_retries`). */
  maxRetries: number;
  /** First backoff delay, ms; doubled per retry. */
  baseDelayMs: number;
  /** Cap of one computed backoff delay, ms. */
  maxDelayMs: number;
  signal: AbortSignal;
  /** False once output reached the caller (a retry would repeat it): errors are then thrown as they are. */
  canRetry: () => boolean;
}

/**
 * Runs `attempt` until it succeeds, retrying AirlockErrors whose `details.retryable` is true.
 * The wait is `details.retry_after_ms` when the server gave one (`Retry-After`), else
 * `baseDelayMs * 2^n` (±20 % jitter, capped at `maxDelayMs`).
 * @throws the last attempt's error, its message saying how many retries were made; `cancelled` when `signal` aborts.
 */
export async function withRetries<T>(attempt: (n: number) => Promise<T>, opts: RetryOptions): Promise<T> {
  for (let n = 0; ; n++) {
    try {
      return await attempt(n);
    } catch (e) {
      if (opts.signal.aborted) throw cancelledError();
      if (!(e instanceof AirlockError) || e.details.retryable !== true) throw e;
      if (!opts.canRetry()) throw brokeAfterOutput(e);
      const after = typeof e.details.retry_after_ms === "number" ? e.details.retry_after_ms : undefined;
      if (after !== undefined && after > MAX_RETRY_AFTER_MS) {
        throw new AirlockError(e.code, `${e.message} The server asked to wait ${Math.ceil(after / 1000)} s before retrying; try again later.`, {
          ...e.details,
          retries: n,
        });
      }
      if (n >= opts.maxRetries) {
        throw new AirlockError(e.code, n === 0 ? e.message : `${e.message} (gave up after ${n} ${n === 1 ? "retry" : "retries"})`, {
          ...e.details,
          retries: n,
        });
      }
      await abortableSleep(after ?? backoffDelayMs(n, opts.baseDelayMs, opts.maxDelayMs), opts.signal);
    }
  }
}

/**
 * A retryable failure that came after output had reached the caller: the request is not replayed (the
 * model would start its answer again, and the person has already seen the first one), so it fails as a
 * `provider_error` that says so, keeping the first error's details (`partial_text`; `retryable` still
 * says whether the failure itself was transient, so a person may retry the turn) plus `after_output: true`
 * and `cause_code` (the first error's code).
 */
export function brokeAfterOutput(e: AirlockError): AirlockError {
  return new AirlockError(
    "provider_error",
    `The model stream broke after output had been streamed, so the request was not replayed (the answer would start over): ${e.message.replace(/\s*Retry the turn[^.]*\.?/g, "").trim()} Retry the turn.`,
    { ...e.details, after_output: true, cause_code: e.code },
  );
}

/**
 * The wait before retry `n + 1`, ms: `baseDelayMs * 2^n`, capped at `maxDelayMs`, times a jitter factor in
 * [0.8, 1.2) so clients that failed together do not retry together. `random` returns [0, 1) (default `Math.random`).
 */
export function backoffDelayMs(n: number, baseDelayMs: number, maxDelayMs: number, random: () => number = Math.random): number {
  return Math.min(maxDelayMs, baseDelayMs * 2 ** n) * (0.8 + random() * 0.4);
}

/** The error every provider throws when the request's signal aborts. */
export function cancelledError(): AirlockError {
  return new AirlockError("cancelled", "The model call was cancelled.");
}

/** Resolves after `ms`; rejects with `cancelled` as soon as `signal` aborts. */
export function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(cancelledError());
    const onAbort = () => {
      clearTimeout(timer);
      reject(cancelledError());
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, Math.max(0, ms));
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * The wait a response asks for, ms: `retry-after-ms` (OpenAI), else `Retry-After` as seconds or an
 * HTTP date (RFC 9110 §10.2.3). Undefined when absent or unreadable.
 */
export function retryAfterMs(headers: Headers | undefined | null): number | undefined {
  if (!headers) return undefined;
  const ms = headers.get("retry-after-ms");
  if (ms && /^\d+(\.\d+)?$/.test(ms.trim())) return Number(ms);
  const ra = headers.get("retry-after");
  if (!ra) return undefined;
  if (/^\d+(\.\d+)?$/.test(ra.trim())) return Number(ra) * 1000;
  const date = Date.parse(ra);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/**
 * An AbortController for one attempt: aborted when the caller's signal aborts, or when no data
 * arrived for `idleMs` (then `timedOut()` is true). Call `touch()` on every chunk, `dispose()` at the end.
 */
export function attemptController(signal: AbortSignal, idleMs: number) {
  const ac = new AbortController();
  let timedOut = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const onAbort = () => ac.abort(signal.reason);
  if (signal.aborted) ac.abort(signal.reason);
  else signal.addEventListener("abort", onAbort, { once: true });
  const arm = () => {
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timedOut = true;
      ac.abort(new Error("idle timeout"));
    }, idleMs);
  };
  arm();
  return {
    signal: ac.signal,
    touch: arm,
    timedOut: () => timedOut,
    dispose() {
      if (timer) clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
    },
  };
}

/**
 * The `complete` of a streaming provider: runs `attempt` with bounded retries (`maxRetries`, backoff
 * 500 ms doubling to 20 s unless `retry` says otherwise), never retrying once text reached the caller
 * (`emitted.value`), since a retry would repeat it. @throws what the last attempt threw, or `cancelled`.
 */
export function retryingComplete(
  maxRetries: number,
  retry: { baseDelayMs?: number; maxDelayMs?: number } | undefined,
  attempt: (req: ModelRequest, emitted: { value: boolean }) => Promise<ModelTurn>,
): (req: ModelRequest) => Promise<ModelTurn> {
  return async function complete(req) {
    if (req.signal.aborted) throw cancelledError();
    const emitted = { value: false };
    return withRetries(() => attempt(req, emitted), {
      maxRetries,
      baseDelayMs: retry?.baseDelayMs ?? 500,
      maxDelayMs: retry?.maxDelayMs ?? 20_000,
      signal: req.signal,
      canRetry: () => !emitted.value,
    });
  };
}
