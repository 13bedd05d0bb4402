/**
 * @module agent/providers/retry.test
 * The retry loop's rules (bounded, only retryable errors, not after output, honouring and capping
 * Retry-After, cancellable backoff) and `Retry-After` parsing.
 */
import { describe, expect, test } from "bun:test";
import { AirlockError } from "../../errors.ts";
import { backoffDelayMs, brokeAfterOutput, MAX_RETRY_AFTER_MS, retryAfterMs, withRetries } from "./retry.ts";

const opts = (extra: Partial<Parameters<typeof withRetries>[1]> = {}) => ({
  maxRetries: 2,
  baseDelayMs: 1,
  maxDelayMs: 2,
  signal: new AbortController().signal,
  canRetry: () => true,
  ...extra,
});

async function rejection(p: Promise<unknown>): Promise<AirlockError> {
  try {
    await p;
  } catch (e) {
    return e as AirlockError;
  }
  throw new Error("expected a rejection");
}

describe("withRetries", () => {
  test("retries a retryable error up to maxRetries, then throws it saying so", async () => {
    let calls = 0;
    const err = await rejection(
      withRetries(async () => {
        calls++;
        throw new AirlockError("provider_error", "HTTP 500.", { retryable: true });
      }, opts()),
    );
    expect(calls).toBe(3);
    expect(err.code).toBe("provider_error");
    expect(err.message).toBe("HTTP 500. (gave up after 2 retries)");
    expect(err.details.retries).toBe(2);
  });

  test("returns the first success", async () => {
    let calls = 0;
    const v = await withRetries(async (n) => {
      calls++;
      if (n < 1) throw new AirlockError("provider_rate_limit", "429", { retryable: true, retry_after_ms: 0 });
      return "ok";
    }, opts());
    expect(v).toBe("ok");
    expect(calls).toBe(2);
  });

  test("non-retryable errors, and any error once output was emitted, are thrown at once", async () => {
    let calls = 0;
    await rejection(withRetries(async () => (calls++, Promise.reject(new AirlockError("provider_auth", "401", { retryable: false }))), opts()));
    expect(calls).toBe(1);
    calls = 0;
    await rejection(withRetries(async () => (calls++, Promise.reject(new AirlockError("provider_error", "mid", { retryable: true }))), opts({ canRetry: () => false })));
    expect(calls).toBe(1);
  });

  test("a Retry-After beyond the cap ends the retries with a message naming the wait", async () => {
    let calls = 0;
    const err = await rejection(
      withRetries(async () => {
        calls++;
        throw new AirlockError("provider_rate_limit", "429.", { retryable: true, retry_after_ms: MAX_RETRY_AFTER_MS + 1000 });
      }, opts()),
    );
    expect(calls).toBe(1);
    expect(err.message).toContain("asked to wait 61 s");
  });

  test("aborting during a backoff wait rejects with cancelled", async () => {
    const ac = new AbortController();
    const err = await rejection(
      withRetries(async () => {
        queueMicrotask(() => ac.abort());
        throw new AirlockError("provider_error", "503", { retryable: true, retry_after_ms: 30_000 });
      }, opts({ signal: ac.signal })),
    );
    expect(err.code).toBe("cancelled");
  });
});

describe("retryAfterMs", () => {
  test("reads retry-after-ms, Retry-After seconds and HTTP dates", () => {
    expect(retryAfterMs(new Headers({ "retry-after-ms": "250" }))).toBe(250);
    expect(retryAfterMs(new Headers({ "retry-after": "2" }))).toBe(2000);
    const inTen = new Date(Date.now() + 10_000).toUTCString();
    const ms = retryAfterMs(new Headers({ "retry-after": inTen }))!;
    expect(ms).toBeGreaterThan(8_000);
    expect(ms).toBeLessThanOrEqual(10_000);
    expect(retryAfterMs(new Headers({ "retry-after": "soon-ish" }))).toBeUndefined();
    expect(retryAfterMs(new Headers())).toBeUndefined();
  });
});

describe("backoff and output already streamed", () => {
  test("the backoff doubles from the base, is capped, and is jittered within ±20 %", () => {
    expect(backoffDelayMs(0, 500, 20_000, () => 0.5)).toBe(500);
    expect(backoffDelayMs(3, 500, 20_000, () => 0.5)).toBe(4000);
    expect(backoffDelayMs(10, 500, 20_000, () => 0.5)).toBe(20_000);
    expect(backoffDelayMs(2, 500, 20_000, () => 0)).toBe(1600);
    expect(backoffDelayMs(2, 500, 20_000, () => 0.999999)).toBeCloseTo(2400, 0);
    const seen = new Set(Array.from({ length: 50 }, () => backoffDelayMs(1, 500, 20_000)));
    expect(seen.size).toBeGreaterThan(1);
    for (const d of seen) expect(d >= 800 && d < 1200).toBe(true);
  });

  test("a retryable error after output is not retried: provider_error saying the stream broke after output, details kept", async () => {
    let calls = 0;
    const err = await rejection(
      withRetries(async () => {
        calls++;
        throw new AirlockError("provider_rate_limit", "HTTP 429 mid-stream. Retry the turn.", { retryable: true, partial_text: "half" });
      }, opts({ canRetry: () => false })),
    );
    expect(calls).toBe(1);
    expect(err.code).toBe("provider_error");
    expect(err.message).toBe("The model stream broke after output had been streamed, so the request was not replayed (the answer would start over): HTTP 429 mid-stream. Retry the turn.");
    expect(err.details).toMatchObject({ partial_text: "half", after_output: true, cause_code: "provider_rate_limit" });
    expect(brokeAfterOutput(new AirlockError("provider_error", "x", {})).details.after_output).toBe(true);
  });
});
