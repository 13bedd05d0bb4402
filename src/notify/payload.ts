/**
 * @module notify/payload
 * What a notification says (docs/notify.md): one {@link Notification} object per event — a card parked or
 * ended, a run finished or blocked — and the bodies the webhook formats send (`json`: the object itself;
 * `ntfy`: ntfy's JSON publish shape; `slack`: an incoming webhook's `{text}`). Pure. A card's notification
 * carries its chain label, tool, reason, request id, expiry and console link; never its arguments (they
 * may hold what the model read) and never a token.
 */
import { z } from "zod";
import { assertNever } from "../errors.ts";

/** One refused call of a run, as a run's notification lists it. */
export const NotifiedRefusal = z.strictObject({ tool: z.string(), code: z.string(), reason: z.string() });

/** The notification object: the `json` format's body and a `command`'s stdin (docs/notify.md). */
export const Notification = z.discriminatedUnion("event", [
  z.strictObject({
    event: z.literal("card_parked"),
    /** ISO time the notification was made. */
    at: z.string(),
    request_id: z.string(),
    /** The session whose call asked (the card's home). */
    session_id: z.string(),
    /** The root of its chain: where a person answers. */
    root_session_id: z.string(),
    /** The names of the chain, root first (`root`, `subagent#1`, or a session's title). */
    chain: z.array(z.string()),
    /** The chain joined with `›`: `root›subagent#1`. */
    chain_label: z.string(),
    tool: z.string(),
    inspector: z.string(),
    reason: z.string(),
    requires_user_proof: z.boolean(),
    expires_at: z.string(),
    /** The card in the console: `<console_url>/#/s/<root_session_id>/<request_id>`. */
    url: z.string(),
  }),
  z.strictObject({
    event: z.literal("card_resolved"),
    at: z.string(),
    request_id: z.string(),
    session_id: z.string(),
    root_session_id: z.string(),
    chain: z.array(z.string()),
    chain_label: z.string(),
    tool: z.string(),
    decision: z.enum(["allow_once", "allow_session", "deny", "expired", "cancelled"]),
    decided_in: z.string().optional(),
    url: z.string(),
  }),
  z.strictObject({
    event: z.enum(["run_finished", "run_blocked"]),
    at: z.string(),
    /** The run's root session (null when the run could not start). */
    session_id: z.string().nullable(),
    status: z.enum(["completed", "failed", "blocked", "cancelled"]),
    /** A scheduled run's id (`GET /runs/:id`) and schedule; absent for `airlock run`. */
    run_id: z.string().optional(),
    schedule_id: z.string().optional(),
    schedule_name: z.string().optional(),
    /** What the run was asked (its first 200 characters). */
    title: z.string().optional(),
    error: z.strictObject({ code: z.string(), message: z.string() }).nullable(),
    tool_calls: z.number(),
    refused_calls: z.array(NotifiedRefusal),
    duration_ms: z.number(),
    /** The run's session in the console (absent when there is none). */
    url: z.string().optional(),
  }),
]);
export type Notification = z.infer<typeof Notification>;

/** The separator of a chain label (`root›planner›researcher#2`), as `airlock attach` prints it. */
export const CHAIN_SEPARATOR = "›";

/**
 * The console link of a session, or of a card in it: `<base>/#/s/<session>` or `<base>/#/s/<session>/<request>`.
 * `base`: an http(s) URL (a trailing `/` is dropped). The console opens the session's page, where the root's cards are shown.
 */
export function consoleLink(base: string, sessionId: string, requestId?: string): string {
  const b = base.replace(/\/+$/, "");
  return `${b}/#/s/${encodeURIComponent(sessionId)}${requestId ? `/${encodeURIComponent(requestId)}` : ""}`;
}

/** A title line for a person: `airlock: root›subagent#1 asks for developer__shell`. */
export function titleOf(n: Notification): string {
  switch (n.event) {
    case "card_parked":
      return `airlock: ${n.chain_label} asks for ${n.tool}`;
    case "card_resolved":
      return `airlock: ${n.chain_label} ${n.tool}: ${n.decision.replace("_", " ")}`;
    case "run_finished":
    case "run_blocked":
      return `airlock: run ${n.status}${n.schedule_name ? ` (${n.schedule_name})` : ""}`;
    default:
      return assertNever(n, "notification");
  }
}

/** The body lines for a person (no link: each format places it). Bounded: the reason and the error message are cut at 500 characters. */
export function messageOf(n: Notification): string {
  switch (n.event) {
    case "card_parked":
      return [
        `${n.chain_label} asks to run ${n.tool}${n.requires_user_proof ? " (needs the approver token)" : ""}`,
        `reason: ${cut(n.reason, 500)}`,
        `request ${n.request_id}, expires ${n.expires_at}`,
      ].join("\n");
    case "card_resolved":
      return [`${n.chain_label}: ${n.tool} — ${n.decision}${n.decided_in ? ` (answered in ${n.decided_in})` : ""}`, `request ${n.request_id}`].join("\n");
    case "run_finished":
    case "run_blocked": {
      const lines = [`run ${n.status}${n.title ? `: ${cut(n.title, 120)}` : ""}`, `${n.tool_calls} tool call(s), ${n.refused_calls.length} refused, ${Math.round(n.duration_ms / 1000)} s`];
      if (n.error) lines.push(`${n.error.code}: ${cut(n.error.message, 500)}`);
      for (const r of n.refused_calls.slice(0, 3)) lines.push(`refused ${r.tool}: ${r.code}`);
      if (n.session_id) lines.push(`session ${n.session_id}`);
      return lines.join("\n");
    }
    default:
      return assertNever(n, "notification");
  }
}

/** The webhook body formats (`notify.notifiers[].webhook.format`). */
export type WebhookFormat = "json" | "ntfy" | "slack";

/**
 * The body a webhook POSTs for `n` in `format`.
 * - `json`: `n` itself.
 * - `ntfy`: ntfy's "publish as JSON" shape (docs.ntfy.sh/publish, "Publish as JSON"): `{topic, title, message,
 *   priority, tags, click}` — `topic` is the last path segment of the topic URL; priority 4 (high) for a parked
 *   card and a blocked run, 3 (default) otherwise.
 * - `slack`: Slack's incoming-webhook `{text}`, the link in Slack's `<url|label>` form.
 * @param topicUrl the configured URL (ntfy reads its topic from it).
 */
export function webhookBody(format: WebhookFormat, n: Notification, topicUrl: string): Record<string, unknown> {
  switch (format) {
    case "json":
      return n;
    case "ntfy": {
      const body: Record<string, unknown> = {
        topic: ntfyTarget(topicUrl).topic,
        title: titleOf(n),
        message: messageOf(n),
        priority: n.event === "card_parked" || n.event === "run_blocked" ? 4 : 3,
        tags: [ntfyTag(n)],
      };
      if (n.url) body.click = n.url;
      return body;
    }
    case "slack":
      return { text: `*${escapeSlack(titleOf(n))}*\n${escapeSlack(messageOf(n))}${n.url ? `\n<${n.url}|Open in the airlock console>` : ""}` };
    default:
      return assertNever(format, "webhook format");
  }
}

/**
 * ntfy's JSON publishing goes to the server's root with the topic in the body: `https://ntfy.sh/my-topic` →
 * POST `https://ntfy.sh/` with `topic: "my-topic"` (a server under a path prefix keeps its prefix).
 */
export function ntfyTarget(topicUrl: string): { post: string; topic: string } {
  const u = new URL(topicUrl);
  const parts = u.pathname.split("/").filter(Boolean);
  const topic = decodeURIComponent(parts.pop() ?? "");
  u.pathname = `/${parts.join("/")}${parts.length ? "/" : ""}`;
  u.search = "";
  return { post: u.toString(), topic };
}

function ntfyTag(n: Notification): string {
  switch (n.event) {
    case "card_parked":
      return "lock";
    case "card_resolved":
      return n.decision === "allow_once" || n.decision === "allow_session" ? "white_check_mark" : "no_entry";
    case "run_finished":
      return n.status === "completed" ? "heavy_check_mark" : "warning";
    case "run_blocked":
      return "rotating_light";
    default:
      return assertNever(n, "notification");
  }
}

/** Slack's three control characters in text (api.slack.com, "Formatting text": escape &, <, >). */
function escapeSlack(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

function cut(s: string, n: number): string {
  return s.length > n ? `${s.slice(0, n - 1)}…` : s;
}
