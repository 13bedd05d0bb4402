/**
 * @module cli/attach-format
 * What `airlock attach` prints, as pure functions: one line per event, labelled with the agent chain
 * (`[root›planner›researcher#2] → developer__shell {…}`) in one stable colour per session, and a card as a
 * framed block (chain, tool, reason, arguments, request id, expiry, the rule "allow for this session" adds).
 */
import picocolors from "picocolors";
import type { AnyEvent } from "../bus/bus.ts";
import type { ConsoleCard } from "../console/routes.ts";
import { assertNever } from "../errors.ts";
import { whyParts } from "./card-why.ts";
import { safe } from "./output.ts";

/** The colour functions of picocolors (all identity when colours are off). */
export type Colors = ReturnType<typeof picocolors.createColors>;

/** Colours for a stream: on only for a TTY, and never with `NO_COLOR` set (no-color.org) or `--plain`. */
export function colorsFor(opts: { tty: boolean; plain: boolean; env: Record<string, string | undefined> }): Colors {
  const on = opts.tty && !opts.plain && !opts.env.NO_COLOR;
  return picocolors.createColors(on);
}

/** The colours a session label may take, picked by a hash of the session id (stable across runs and reconnects). */
const PALETTE = ["cyan", "magenta", "yellow", "green", "blue", "red"] as const;

/** The colour of one session: the root is bold, every other session one of {@link PALETTE} by a hash of its id. */
export function sessionColor(c: Colors, sessionId: string, isRoot: boolean): (s: string) => string {
  if (isRoot) return c.bold;
  let h = 2166136261;
  for (let i = 0; i < sessionId.length; i++) h = Math.imul(h ^ sessionId.charCodeAt(i), 16777619) >>> 0;
  return c[PALETTE[h % PALETTE.length]!];
}

/** One link of a chain: a session id and its shown name (its title, else `root` / `subagent#N`). */
export interface Link {
  id: string;
  name: string;
}

/** `[root›planner›researcher#2]`: the names root first, joined by `›`, coloured by the last (acting) session. */
export function chainLabel(c: Colors, chain: readonly Link[]): string {
  const last = chain[chain.length - 1];
  const text = `[${chain.map((l) => safe(l.name)).join("›")}]`;
  return last ? sessionColor(c, last.id, chain.length === 1)(text) : text;
}

/** `text` on one line (line breaks and tabs as spaces, runs of blanks kept short) and at most `max` characters (cut with `…`). */
export function oneLine(text: string, max: number): string {
  const flat = text.replace(/[\r\n\t]+/g, " ").replace(/[\u0000-\u001f\u007f-\u009f]/g, "");
  return flat.length > max ? `${flat.slice(0, Math.max(0, max - 1))}…` : flat;
}

/** A value as compact JSON on one line of at most `max` characters (`undefined` → empty). */
export function shortJson(v: unknown, max: number): string {
  if (v === undefined) return "";
  let s: string;
  try {
    s = typeof v === "string" ? v : JSON.stringify(v);
  } catch {
    s = String(v);
  }
  return oneLine(s ?? "", max);
}

/** The text content of a stored message (string content, or the text parts of a content array). */
function messageText(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((p) => (p && typeof p === "object" && typeof (p as { text?: unknown }).text === "string" ? (p as { text: string }).text : "")).join(" ");
  return "";
}

/**
 * `← TOOL ok` for a call that returned; a subagent tool's call (`subagent__spawn`, `subagent__watch`) returns
 * the subagent's `status`, and a subagent whose turn did not complete is not called ok: `← subagent__spawn
 * cancelled` (red for `failed` and `cancelled`; `running`, `not_started` as they are).
 */
function resultWord(c: Colors, tool: string, result: unknown): string {
  const status = tool.startsWith("subagent__") && result && typeof result === "object" ? (result as { status?: unknown }).status : undefined;
  if (typeof status !== "string" || status === "completed") return `${c.green("←")} ${safe(tool)} ok`;
  const bad = status === "failed" || status === "cancelled";
  return `${bad ? c.red("←") : "←"} ${safe(tool)} ${bad ? c.red(safe(status)) : safe(status)}`;
}

/**
 * The line an event becomes (without its label), or null for events `attach` does not print (`delta`,
 * tool messages, assistant messages without text, the card events, which the caller prints itself, and a
 * `cancelled` error, which the `turn_finished` line after it says).
 * `width`: the most characters the detail may take.
 */
export function eventText(c: Colors, ev: AnyEvent, width: number): string | null {
  switch (ev.type) {
    case "turn_started":
      return c.dim("▶ turn started");
    case "turn_finished": {
      const d = ev.data;
      if (d.status === "completed") return `${c.green("■ turn completed")}${d.answer ? `: ${oneLine(d.answer, width)}` : ""}`;
      // the error's code when it says more than the status (a cancelled turn's error is `cancelled`: said once)
      return `${c.red(`■ turn ${d.status}`)}${d.error ? `: ${d.error.code === d.status ? "" : `${d.error.code}: `}${oneLine(d.error.message, width)}` : ""}`;
    }
    case "error":
      // a cancellation is said by the turn_finished line that follows every error event (agent/loop.ts, runtime.ts)
      if (ev.data.code === "cancelled") return null;
      return c.red(`✖ ${ev.data.code}: ${oneLine(ev.data.message, width)}`);
    case "tool_request":
      return `→ ${ev.data.from_script ? "(script) " : ""}${c.bold(safe(ev.data.tool))} ${shortJson(ev.data.arguments, width)}`;
    case "tool_result":
      return ev.data.ok
        ? `${resultWord(c, ev.data.tool, ev.data.result)} ${shortJson(ev.data.result, width)}`.trimEnd()
        : `${c.red("←")} ${safe(ev.data.tool)} ${c.red(ev.data.error?.code ?? "failed")}: ${oneLine(ev.data.error?.message ?? "", width)}`;
    case "message": {
      const text = messageText(ev.data.content).trim();
      if (!text || (ev.data.role !== "assistant" && ev.data.role !== "user")) return null;
      if (ev.data.role === "user" && ev.data.name === "hook") return c.dim(`hook: ${oneLine(text, width)}`);
      return ev.data.role === "assistant" ? `“${oneLine(text, width)}”` : c.dim(`user: ${oneLine(text, width)}`);
    }
    case "hook_message": {
      const d = ev.data;
      const what = `⚑ ${d.event} hook ${d.kind === "system_message" ? "says" : d.kind}${d.code ? ` (${d.code})` : ""}`;
      return `${d.kind === "system_message" ? c.dim(what) : c.red(what)}: ${oneLine(d.message, width)}`;
    }
    case "delta":
    case "action_required":
    case "action_resolved":
      return null;
    default:
      return assertNever(ev, "bus event");
  }
}

/** What each card outcome is called in attach's lines. */
export const OUTCOME: Record<"allow_once" | "allow_session" | "deny" | "expired" | "cancelled", string> = {
  allow_once: "allowed once",
  allow_session: "allowed for this session",
  deny: "denied",
  expired: "expired",
  cancelled: "withdrawn (the call was cancelled)",
};

/** `in 4m 05s` / `in 12s` / `now` until `expiresAt` (ISO), from `now` (ms since the epoch). */
export function timeLeft(expiresAt: string, now: number): string {
  const s = Math.max(0, Math.round((Date.parse(expiresAt) - now) / 1000));
  if (!Number.isFinite(s) || s === 0) return "now";
  if (s >= 3600) return `in ${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
  return s >= 60 ? `in ${Math.floor(s / 60)}m ${String(s % 60).padStart(2, "0")}s` : `in ${s}s`;
}

/** A value as pretty JSON (2-space indent). */
function pretty(v: unknown): string {
  try {
    return JSON.stringify(v, null, 2) ?? "null";
  } catch {
    return String(v);
  }
}

/**
 * A card's arguments as lines: pretty JSON (2-space indent), except that a top-level string holding line
 * breaks (a script, a command, a file's content) is shown as its lines, indented under `"key": (N lines)`,
 * so it can be read before it is allowed. Control characters other than tabs are shown escaped.
 */
export function argumentLines(args: unknown): string[] {
  if (!args || typeof args !== "object" || Array.isArray(args)) return pretty(args).split("\n").map(safe);
  const entries = Object.entries(args as Record<string, unknown>);
  if (entries.length === 0) return ["{}"];
  const out = ["{"];
  entries.forEach(([k, v], i) => {
    const comma = i < entries.length - 1 ? "," : "";
    if (typeof v === "string" && v.includes("\n")) {
      const lines = v.split("\n");
      out.push(`  ${safe(JSON.stringify(k))}: (${lines.length} lines)`);
      for (const l of lines) out.push(`    ${safe(l.replace(/\t/g, "  "))}`);
    } else {
      const body = pretty(v).split("\n").map(safe);
      out.push(`  ${safe(JSON.stringify(k))}: ${body[0]}`, ...body.slice(1).map((l) => `  ${l}`));
      out[out.length - 1] += comma;
    }
  });
  out.push("}");
  return out;
}

/** How a card block is drawn. */
export interface CardBlockOptions {
  /** The most argument lines shown before `… N more lines (v shows them all)`; Infinity shows them all. */
  maxArgLines: number;
  /** Now, ms since the epoch (for the time left). */
  now: number;
  /** Cards waiting behind this one. */
  morePending: number;
  /** Whether an allow needs the approver token and attach has none it can read (it will ask). */
  tokenMissing?: boolean;
}

/**
 * A card as a framed block of lines (no trailing newline on the last): the chain label and tool, the
 * inspector's reason, the arguments (cut at `maxArgLines`), the files an allow binds, the rule `a` adds,
 * the request id and expiry, and "N more pending".
 */
export function cardBlock(c: Colors, card: ConsoleCard, o: CardBlockOptions): string[] {
  const bar = c.yellow("│");
  const out: string[] = [];
  const home = card.chain[card.chain.length - 1];
  out.push(c.yellow(`┌─ card: a call waits for you `) + c.yellow("─".repeat(20)));
  out.push(`${bar} ${chainLabel(c, card.chain)} ${c.bold(safe(card.tool))}${home && card.chain.length > 1 ? c.dim(` (asked in ${safe(home.name)}, ${safe(home.id)})`) : ""}`);
  const why = whyParts(card.inspector, card.reason);
  out.push(`${bar} ${why.label === null ? "" : `${c.bold(safe(why.label))}: `}${safe(why.text)}`);
  if (card.replaces) out.push(`${bar} ${c.red(`a file changed after ${safe(card.replaces)} was allowed: this card asks about the new content`)}`);
  const args = argumentLines(card.arguments);
  const shown = args.length > o.maxArgLines ? args.slice(0, Math.max(1, o.maxArgLines)) : args;
  out.push(`${bar} arguments:`);
  for (const l of shown) out.push(`${bar}   ${l}`);
  if (shown.length < args.length) out.push(`${bar}   ${c.dim(`… ${args.length - shown.length} more lines (v shows them all)`)}`);
  for (const f of card.files ?? []) out.push(`${bar} file ${safe(f.path)}: ${f.kind === "file" ? `sha256 ${f.sha256} (${f.size} bytes)` : f.kind === "symlink" ? `symlink -> ${safe(f.link ?? "")}` : f.kind}`);
  if (card.suggested_rule) out.push(`${bar} allow for this session adds the rule ${c.bold(safe(card.suggested_rule))} (matching calls in this session tree then run without asking)`);
  if (card.requires_user_proof) out.push(`${bar} ${c.yellow(`allowing needs the approver token${o.tokenMissing ? " (attach will ask for it)" : " (sent from the data dir)"}`)}`);
  out.push(`${bar} request ${safe(card.request_id)} · expires ${safe(card.expires_at)} (${timeLeft(card.expires_at, o.now)})`);
  if (o.morePending > 0) out.push(`${bar} ${c.dim(`${o.morePending} more pending`)}`);
  out.push(c.yellow("└" + "─".repeat(49)));
  return out;
}

/** The chain of a session from the root down, from a map of known sessions (id → parent id and name); stops at an unknown parent or a cycle. */
export function chainOf(sessionId: string, known: ReadonlyMap<string, { parent: string | null; name: string }>): Link[] {
  const out: Link[] = [];
  const seen = new Set<string>();
  for (let id: string | null = sessionId; id && !seen.has(id) && out.length < 64; ) {
    seen.add(id);
    const s = known.get(id);
    out.unshift({ id, name: s?.name ?? id });
    id = s?.parent ?? null;
  }
  return out;
}
