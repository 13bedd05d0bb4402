/**
 * @module tool/mcp/backoff
 * When a crashed (or never started, or hung) MCP server may be started again: a pure function of
 * the recent failure times, so restarts are bounded and never a tight loop.
 */

export interface BackoffPolicy {
  /** Wait before the n-th restart after n failures in the window (ms); the last entry repeats. */
  delaysMs: readonly number[];
  /** Failures within `windowMs` after which no restart is tried until the oldest leaves the window. */
  maxFailures: number;
  /** The window, ms. */
  windowMs: number;
}

/** Defaults: restart at once, then after 250 ms, 1 s, 4 s; at most 5 failures a minute. */
export const DEFAULT_BACKOFF: BackoffPolicy = { delaysMs: [0, 250, 1000, 4000], maxFailures: 5, windowMs: 60_000 };

export type RestartPlan = { start: true; waitMs: number } | { start: false; retryAtMs: number };

/**
 * What to do at `now` (ms since epoch) given the failure times `failures` (ms, any order):
 * `{start: true, waitMs}` — start after waiting `waitMs` (0 without a recent failure); or
 * `{start: false, retryAtMs}` — `maxFailures` failures in the window already; no start before `retryAtMs`.
 */
export function restartPlan(failures: readonly number[], now: number, policy: BackoffPolicy = DEFAULT_BACKOFF): RestartPlan {
  const recent = failures.filter((t) => now - t < policy.windowMs).sort((a, b) => a - b);
  if (recent.length === 0) return { start: true, waitMs: 0 };
  if (recent.length >= policy.maxFailures) {
    return { start: false, retryAtMs: recent[recent.length - policy.maxFailures]! + policy.windowMs };
  }
  const delay = policy.delaysMs[Math.min(recent.length - 1, policy.delaysMs.length - 1)] ?? 0;
  const last = recent[recent.length - 1]!;
  return { start: true, waitMs: Math.max(0, last + delay - now) };
}
