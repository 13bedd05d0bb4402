/**
 * @module notify/webhook
 * One webhook delivery: POST the event's body (notify/payload.ts `webhookBody`) as JSON, retrying a
 * network error, a 5xx or a 429 with exponential backoff, a bounded number of times, all within one
 * deadline per event. Header values come from environment variables only (`headers_env`), so no secret
 * sits in the config or in the body. Never throws: the outcome says what happened.
 */
import type { NotifyWebhook } from "../config/schema.ts";
import { ntfyTarget, webhookBody, type Notification } from "./payload.ts";

/** How one delivery ended: `attempts` POSTs made; `why` (on failure) for the log line. */
export type DeliveryOutcome = { ok: true; attempts: number } | { ok: false; attempts: number; why: string };

/** The longest backoff between two attempts, ms (a Retry-After beyond it is cut to it). */
const MAX_BACKOFF_MS = 30_000;

/**
 * POSTs `n` to the webhook. Each attempt is aborted at the event's deadline (`timeoutMs` from the call); a
 * retry is made only when its wait still ends before the deadline. A 2xx is success; another 4xx fails at once.
 * @param env where `url_env` and `headers_env` are read (default `process.env`); a variable that is not set fails the delivery.
 * @param signal aborting it (the runtime closing) ends the delivery as failed.
 */
export async function deliverWebhook(
  hook: NotifyWebhook,
  n: Notification,
  timeoutMs: number,
  env: Record<string, string | undefined> = process.env,
  signal?: AbortSignal,
): Promise<DeliveryOutcome> {
  const deadline = Date.now() + timeoutMs;
  const url = hook.url ?? env[hook.url_env ?? ""];
  if (!url) return { ok: false, attempts: 0, why: `environment variable ${hook.url_env} (url_env) is not set` };
  const headers: Record<string, string> = { "content-type": "application/json", "user-agent": "airlock-notify" };
  for (const [name, variable] of Object.entries(hook.headers_env)) {
    const v = env[variable];
    if (v === undefined || v === "") return { ok: false, attempts: 0, why: `environment variable ${variable} (headers_env.${name}) is not set` };
    headers[name] = v;
  }
  let target: string;
  let body: string;
  try {
    target = hook.format === "ntfy" ? ntfyTarget(url).post : new URL(url).toString();
    body = JSON.stringify(webhookBody(hook.format, n, url));
  } catch {
    return { ok: false, attempts: 0, why: hook.url_env ? `environment variable ${hook.url_env} (url_env) does not hold a URL` : "the URL cannot be parsed" };
  }
  let attempts = 0;
  let why = "";
  for (;;) {
    const left = deadline - Date.now();
    if (left <= 0) return { ok: false, attempts, why: `no answer within ${timeoutMs / 1000} s${why ? ` (last: ${why})` : ""}` };
    attempts++;
    let retryAfterMs = 0;
    const attempt = AbortSignal.any([AbortSignal.timeout(left), ...(signal ? [signal] : [])]);
    try {
      const res = await fetch(target, { method: "POST", headers, body, signal: attempt, redirect: "error" });
      // the body is not read beyond what ends the exchange
      await res.body?.cancel().catch(() => {});
      if (res.ok) return { ok: true, attempts };
      why = `HTTP ${res.status}`;
      if (res.status !== 429 && res.status < 500) return { ok: false, attempts, why: `${why} (not retried)` };
      if (res.status === 429) retryAfterMs = retryAfter(res.headers.get("retry-after"));
    } catch (e) {
      if (signal?.aborted) return { ok: false, attempts, why: "stopped: airlock is shutting down" };
      if (Date.now() >= deadline) return { ok: false, attempts, why: `no answer within ${timeoutMs / 1000} s` };
      why = networkError(e);
    }
    if (attempts > hook.retries) return { ok: false, attempts, why: `${why}, after ${attempts} attempt(s)` };
    const wait = Math.min(MAX_BACKOFF_MS, Math.max(retryAfterMs, hook.retry_backoff_ms * 2 ** (attempts - 1)));
    if (Date.now() + wait >= deadline) return { ok: false, attempts, why: `${why}; no time left within ${timeoutMs / 1000} s for another attempt` };
    if (!(await sleep(wait, signal))) return { ok: false, attempts, why: "stopped: airlock is shutting down" };
  }
}

/** A Retry-After header in ms: delta-seconds or an HTTP date (RFC 9110 §10.2.3); 0 when absent or unreadable. */
function retryAfter(h: string | null): number {
  if (!h) return 0;
  if (/^\d+$/.test(h.trim())) return Number(h.trim()) * 1000;
  const t = Date.parse(h);
  return Number.isNaN(t) ? 0 : Math.max(0, t - Date.now());
}

function networkError(e: unknown): string {
  const err = e as { code?: string; message?: string; name?: string };
  if (err?.name === "TimeoutError") return "timed out";
  return err?.code ? `${err.code}: ${err.message ?? ""}`.trim() : (err?.message ?? String(e));
}

/** Waits `ms`; false when `signal` aborts first. */
function sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(false);
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      resolve(false);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
