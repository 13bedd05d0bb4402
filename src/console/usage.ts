/**
 * @module console/usage
 * The token line of the session view: the session's own model calls and, when it has subagents, its
 * whole subtree (`GET /sessions/:id/usage`), read when the view opens and after each of its turns.
 * Unknown usage (no model call reported any) says so; it is never shown as zero.
 */

/** A usage summary as the API sends it (session/types.ts `UsageSummary`). */
export interface UsageSummary {
  input_tokens: number;
  output_tokens: number;
  cached_input_tokens?: number;
  cache_write_input_tokens?: number;
  reasoning_tokens?: number;
  model_calls: number;
  unreported_calls?: number;
}

/** `GET /sessions/:id/usage`. */
export interface SessionUsage {
  session: UsageSummary | null;
  subtree: UsageSummary | null;
}

const n = (x: number): string => x.toLocaleString("en-US");

/**
 * One summary as text: `1,234 in (1,000 cached) · 56 out (20 reasoning) · 3 model calls`, plus
 * `, 1 without usage` when some call reported none; `not reported` when none did.
 */
export function formatUsage(u: UsageSummary | null): string {
  if (!u) return "not reported";
  const input = `${n(u.input_tokens)} in${u.cached_input_tokens ? ` (${n(u.cached_input_tokens)} cached)` : ""}`;
  const output = `${n(u.output_tokens)} out${u.reasoning_tokens ? ` (${n(u.reasoning_tokens)} reasoning)` : ""}`;
  const calls = `${u.model_calls} model call${u.model_calls === 1 ? "" : "s"}${u.unreported_calls ? `, ${u.unreported_calls} without usage` : ""}`;
  return `${input} · ${output} · ${calls}`;
}

/** The session view's line: the session's tokens, and the subtree's when it differs (subagents). */
export function usageLine(u: SessionUsage | null): string | null {
  if (!u) return null;
  const own = `tokens: ${formatUsage(u.session)}`;
  const sameTree = JSON.stringify(u.session) === JSON.stringify(u.subtree);
  return sameTree ? own : `${own} — with subagents: ${formatUsage(u.subtree)}`;
}
