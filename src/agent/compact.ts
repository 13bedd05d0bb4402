/**
 * @module agent/compact
 * Long sessions: when the history about to be sent nears the model's context (`provider.context_tokens`,
 * else a default per model family), what is SENT shrinks; the stored conversation keeps everything.
 * First old tool outputs are elided (a marker with their size), then older turns are replaced by a
 * summary the model writes, keeping the latest turns whole. The loop calls {@link HistoryCompactor.prepare}
 * before each model call (its `HistoryShrinker` port); `PreCompact` hooks fire before each shrink.
 */
import { AirlockError, assertNever } from "../errors.ts";
import { BoundedMap } from "../bounded.ts";
import type { Message } from "../session/types.ts";
import type { ToolSpec } from "../tool/tool.ts";
import type { HookDirective, HookTurn, HistoryShrinker } from "./loop.ts";
import type { Provider, TokenUsage } from "./providers/provider.ts";
import { estimateTextTokens, TRIGGER_SHARE } from "./context-size.ts";
import summaryPrompt from "./compact-summary.txt" with { type: "text" };

// the context sizes and the raw estimate live in context-size.ts, which `airlock run`'s early request loads without this module
export { contextTokensFor, estimateTextTokens, TRIGGER_SHARE, UNKNOWN_MODEL_CONTEXT_TOKENS } from "./context-size.ts";

/** A shrink (from `TRIGGER_SHARE` of the context on) brings the request down to this share, so the next calls need no new shrink (a stable prefix for prompt caches). */
export const TARGET_SHARE = 0.6;
/** Tool outputs at most this long (bytes) are never elided: the marker would not be shorter. */
export const MIN_ELIDE_BYTES = 256;
/** Provider states that only stay valid while nothing before their message changes (Anthropic thinking signatures). */
const PREFIX_PINNED_STATE: ReadonlySet<string> = new Set(["anthropic"]);
/** The `name` of the user-side message that holds the summary of older turns. */
export const SUMMARY_MESSAGE_NAME = "summary";

/** Raw tokens of a message holding only an elision marker. */
const MARKER_TOKENS = 4 + estimateTextTokens(elisionMarker(1_000_000));

/** What an elided tool output is replaced by: its size, and what to do (bytes: UTF-8). */
export function elisionMarker(bytes: number): string {
  return `[tool output elided: ${bytes} bytes; ask again if needed]`;
}

/** Raw token estimate of one message as a provider sends it: content, tool calls, provider state, plus framing. */
export function estimateMessageTokens(m: Message): number {
  let n = 4 + estimateTextTokens(m.content);
  if (m.tool_calls?.length) n += estimateTextTokens(JSON.stringify(m.tool_calls));
  if (m.provider_state) n += estimateTextTokens(JSON.stringify(m.provider_state.data) ?? "");
  return n;
}

/** The port to the `PreCompact` hooks (agent/hooks.ts `AgentHooks.preCompact`). */
export interface PreCompactHooks {
  preCompact(turn: HookTurn, trigger: "manual" | "auto", customInstructions: string): Promise<HookDirective>;
}

export interface CompactorDeps {
  /** The session's context in input tokens (`contextTokensFor` of its effective provider config); null = never shrink. */
  contextTokens(session: HookTurn["session"]): number | null;
  hooks?: PreCompactHooks;
}

/** What one session's shrinking has decided so far. Only grows, so what is sent stays the same between shrinks. */
interface SessionShrink {
  /** Reported input tokens / raw estimate of the last request (1 until a provider reports usage). */
  ratio: number;
  /** Raw estimate of the last request sent, for calibration. */
  lastRaw: number;
  /** Tool messages at stored index < this (and over MIN_ELIDE_BYTES) are sent as the elision marker. */
  elideBefore: number;
  /** Stored messages [0, before) are sent as one summary message. */
  summary: { before: number; text: string } | null;
  /** Messages at stored index < this are sent without a prefix-pinned provider state. */
  unpinBefore: number;
  /** Raw estimates by message id (stored messages never change). */
  sizes: Map<string, number>;
}

/** How many sessions' shrink state is kept (least recently used dropped; a dropped one starts afresh). */
const MAX_SESSIONS = 1024;

/**
 * Shrinks what is sent to the model as a session's history nears its context, once per need: a shrink
 * fires `PreCompact` (`trigger: "auto"`; Claude Code's PreCompact cannot block, so only its
 * `continue: false` matters: the turn stops, `hook_stopped`), then elides tool outputs oldest first
 * (never in the latest turns), then, if that is not enough, summarises older turns with one model call
 * per chunk, keeping the latest turns whole. Pairing rules hold: a summary replaces whole turns (the
 * kept part starts at a user or assistant message, never at a tool result), and an elided tool result
 * keeps its place and its `tool_call_id`. A provider state pinned to its prefix (Anthropic thinking
 * blocks, whose signatures cover what came before) is dropped from every message before the newest
 * shrink, consistently, so no thinking block is ever sent after a changed prefix. The estimate is
 * UTF-8 bytes / 4, calibrated by the provider's reported `input_tokens` of the session's last call.
 */
export class HistoryCompactor implements HistoryShrinker {
  private readonly sessions = new BoundedMap<string, SessionShrink>(MAX_SESSIONS);

  constructor(private readonly deps: CompactorDeps) {}

  /**
   * The messages to send for this model call: `req.messages` unchanged while the request fits, else the
   * shrunk copy (the store is not touched). May fire `PreCompact` and call `req.provider` for summaries.
   * @throws AirlockError `hook_stopped` (a PreCompact hook's `continue: false`), `cancelled`, or the
   * provider's error when a summary call fails.
   */
  async prepare(turn: HookTurn, req: { messages: Message[]; system: string; tools: ToolSpec[]; provider: Provider; model?: string }): Promise<Message[]> {
    const limit = this.deps.contextTokens(turn.session);
    if (limit === null) return req.messages;
    const st = this.state(turn.session.id);
    const fixed = estimateTextTokens(req.system) + estimateTextTokens(JSON.stringify(req.tools));
    const size = (m: Message): number => {
      let n = st.sizes.get(m.id);
      if (n === undefined) {
        n = estimateMessageTokens(m);
        st.sizes.set(m.id, n);
      }
      return n;
    };
    let sent = applyShrink(req.messages, st, turn.session.id);
    let raw = fixed + sumTokens(sent, st, size);
    if (raw * st.ratio > limit * TRIGGER_SHARE) {
      const d = await this.deps.hooks?.preCompact(turn, "auto", "");
      if (turn.signal.aborted) throw new AirlockError("cancelled", "the turn was cancelled");
      if (d?.stop !== undefined) throw new AirlockError("hook_stopped", `a PreCompact hook stopped the turn before the history was shrunk (continue: false): ${d.stop}`);
      await this.shrink(turn, req, st, limit, fixed, size);
      sent = applyShrink(req.messages, st, turn.session.id);
      raw = fixed + sumTokens(sent, st, size);
    }
    st.lastRaw = raw;
    return sent;
  }

  /** Calibrates the session's estimate with what the provider reported for the request just sent. */
  observe(sessionId: string, usage: TokenUsage | undefined): void {
    const st = this.sessions.get(sessionId);
    if (!st || !usage || !(usage.input_tokens > 0) || !(st.lastRaw > 0)) return;
    st.ratio = Math.min(4, Math.max(0.5, usage.input_tokens / st.lastRaw));
  }

  /** What a session's shrinking decided, for tests and `airlock` diagnostics: null when it never shrank. */
  describe(sessionId: string): { elided_before: number; summarised_before: number; ratio: number } | null {
    const st = this.sessions.get(sessionId);
    if (!st || (st.elideBefore === 0 && !st.summary)) return null;
    return { elided_before: st.elideBefore, summarised_before: st.summary?.before ?? 0, ratio: st.ratio };
  }

  private state(id: string): SessionShrink {
    let st = this.sessions.get(id);
    // to the newest place (a new session past MAX_SESSIONS forgets the least recently used)
    if (st) this.sessions.delete(id);
    else st = { ratio: 1, lastRaw: 0, elideBefore: 0, summary: null, unpinBefore: 0, sizes: new Map() };
    this.sessions.set(id, st);
    return st;
  }

  private async shrink(
    turn: HookTurn,
    req: { messages: Message[]; provider: Provider; model?: string },
    st: SessionShrink,
    limit: number,
    fixed: number,
    size: (m: Message) => number,
  ): Promise<void> {
    const msgs = req.messages;
    const target = (limit * TARGET_SHARE) / st.ratio;
    const starts = turnStarts(msgs);
    // the latest turns stay whole: as many as fit in a third of the target, at least the last one
    let keepFrom = starts.at(-1) ?? msgs.length;
    for (let k = starts.length - 2; k >= 0; k--) {
      const from = starts[k]!;
      if (sumTokens(msgs.slice(from), st, size) > target / 3) break;
      keepFrom = from;
    }
    const estimate = (): number => fixed + sumTokens(applyShrink(msgs, st, turn.session.id), st, size);
    // 1. elide old tool outputs, oldest first, up to the kept turns
    let total = estimate();
    for (let i = st.elideBefore; i < keepFrom && total > target; i++) {
      const m = msgs[i]!;
      st.elideBefore = i + 1;
      if (m.role === "tool" && Buffer.byteLength(m.content, "utf8") > MIN_ELIDE_BYTES && i >= (st.summary?.before ?? 0)) {
        total -= size(m) - MARKER_TOKENS;
      }
    }
    st.unpinBefore = msgs.length;
    total = estimate();
    // 2. summarise older turns, keeping the latest whole
    if (total > target) {
      const from = st.summary?.before ?? 0;
      const budget = Math.max(256, Math.floor(target / 8));
      // tokens from each index to the end, as sent (elided outputs as their marker)
      const suffix = new Array<number>(msgs.length + 1).fill(0);
      for (let i = msgs.length - 1; i >= 0; i--) {
        const m = msgs[i]!;
        const elided = m.role === "tool" && i < st.elideBefore && Buffer.byteLength(m.content, "utf8") > MIN_ELIDE_BYTES;
        suffix[i] = suffix[i + 1]! + (elided ? MARKER_TOKENS : size(m));
      }
      let cut = keepFrom;
      for (const s of starts) {
        if (s <= from || s > keepFrom) continue;
        if (fixed + budget + suffix[s]! <= target) {
          cut = s;
          break;
        }
      }
      if (cut > from) {
        const text = await this.summarise(turn, req, st, msgs.slice(from, cut), from, budget, target);
        st.summary = { before: cut, text };
        st.elideBefore = Math.max(st.elideBefore, cut);
      }
      total = estimate();
    }
    // 3. still over the trigger (the kept turns alone are too big): elide inside them too, but the last turn's
    if (total * st.ratio > limit * TRIGGER_SHARE) {
      const last = starts.at(-1) ?? msgs.length;
      for (let i = st.elideBefore; i < last && total * st.ratio > limit * TARGET_SHARE; i++) {
        const m = msgs[i]!;
        st.elideBefore = i + 1;
        if (m.role === "tool" && Buffer.byteLength(m.content, "utf8") > MIN_ELIDE_BYTES) total -= size(m);
      }
    }
  }

  /**
   * Folds `older` (stored index `offset` on) into the session's summary with the model: chunks small
   * enough for one request each, the previous summary given first. Returns the text, cut to `budget`
   * tokens (bytes × 4) so a long-winded model cannot undo the shrink.
   */
  private async summarise(turn: HookTurn, req: { provider: Provider; model?: string }, st: SessionShrink, older: Message[], offset: number, budget: number, target: number): Promise<string> {
    const words = Math.max(100, Math.floor(budget * 0.6));
    const system = summaryPrompt.replace("WORD_LIMIT", String(words));
    const lines = older.map((m, i) => renderForSummary(m, offset + i < st.elideBefore));
    const chunkTokens = Math.max(1024, Math.floor(target / 2));
    let text = st.summary?.text ?? "";
    let chunk: string[] = [];
    let chunkSize = 0;
    const flush = async (): Promise<void> => {
      if (chunk.length === 0) return;
      const body = `${text ? `Summary of the part before this one:\n${text}\n\n` : ""}The conversation to summarise:\n\n${chunk.join("\n\n")}`;
      const now = new Date().toISOString();
      const turnOut = await req.provider.complete({
        session: { id: turn.session.id, parent_session_id: turn.session.parent_session_id, spawn_index: turn.session.spawn_index },
        ...(req.model ? { model: req.model } : {}),
        system,
        messages: [{ id: "msg_compact", session_id: turn.session.id, turn_id: turn.turnId, role: "user", content: body, created_at: now }],
        tools: [],
        signal: turn.signal,
      });
      const out = turnOut.text.trim();
      const maxBytes = budget * 4;
      text = Buffer.byteLength(out, "utf8") > maxBytes ? `${Buffer.from(out, "utf8").subarray(0, maxBytes).toString("utf8")}…` : out;
      chunk = [];
      chunkSize = 0;
    };
    for (const line of lines) {
      const n = estimateTextTokens(line);
      if (chunkSize + n > chunkTokens) await flush();
      chunk.push(n > chunkTokens ? line.slice(0, chunkTokens * 4) : line);
      chunkSize += Math.min(n, chunkTokens);
    }
    await flush();
    return text;
  }
}

/** Indices of the messages that start a turn of the model's history: every message that is not a tool result. */
function turnStarts(msgs: Message[]): number[] {
  const out: number[] = [];
  msgs.forEach((m, i) => {
    if (m.role !== "tool") out.push(i);
  });
  return out;
}

function sumTokens(msgs: Message[], _st: SessionShrink, size: (m: Message) => number): number {
  let n = 0;
  for (const m of msgs) n += m.id.startsWith("shrunk:") ? estimateMessageTokens(m) : size(m);
  return n;
}

/**
 * The messages as sent under the session's shrink state: the summary (a `user` message named
 * `summary`, marked in its text) in place of the summarised turns, elided tool outputs, prefix-pinned
 * provider states dropped before the last shrink. Changed messages get ids prefixed `shrunk:`.
 */
function applyShrink(msgs: Message[], st: Pick<SessionShrink, "summary" | "elideBefore" | "unpinBefore">, sessionId: string): Message[] {
  const from = st.summary ? Math.min(st.summary.before, msgs.length) : 0;
  const out: Message[] = [];
  if (st.summary && from > 0) {
    out.push({
      id: `shrunk:summary-${from}`,
      session_id: sessionId,
      turn_id: null,
      role: "user",
      name: SUMMARY_MESSAGE_NAME,
      content: `[Summary of the earlier conversation (${from} messages), written to fit the model's context; the full history is kept by airlock]\n${st.summary.text}`,
      created_at: msgs[from - 1]!.created_at,
    });
  }
  for (let i = from; i < msgs.length; i++) {
    let m = msgs[i]!;
    if (m.role === "tool" && i < st.elideBefore) {
      const bytes = Buffer.byteLength(m.content, "utf8");
      if (bytes > MIN_ELIDE_BYTES) m = { ...m, id: `shrunk:${m.id}`, content: elisionMarker(bytes) };
    }
    if (i < st.unpinBefore && m.provider_state && PREFIX_PINNED_STATE.has(m.provider_state.provider)) {
      const { provider_state: _dropped, ...rest } = m;
      m = { ...rest, id: m.id.startsWith("shrunk:") ? m.id : `shrunk:${m.id}` };
    }
    out.push(m);
  }
  return out;
}

/** One message as a line of the transcript the summariser reads (tool arguments and outputs cut at 2000 characters). */
function renderForSummary(m: Message, elided: boolean): string {
  const cut = (s: string, n = 2000) => (s.length > n ? `${s.slice(0, n)}… [${s.length - n} more characters]` : s);
  switch (m.role) {
    case "user":
      return m.name === "hook" ? `[hook note] ${cut(m.content)}` : `[person] ${m.content}`;
    case "system":
      return `[system] ${cut(m.content)}`;
    case "assistant": {
      const calls = (m.tool_calls ?? []).map((c) => `  → ${c.name}(${cut(c.invalid ?? JSON.stringify(c.arguments ?? {}), 1000)})`);
      return [`[agent] ${m.content}`, ...calls].join("\n");
    }
    case "tool": {
      const bytes = Buffer.byteLength(m.content, "utf8");
      const body = elided && bytes > MIN_ELIDE_BYTES ? elisionMarker(bytes) : cut(m.content);
      return `[result of ${m.name ?? "tool"}${m.is_error ? ", failed" : ""}] ${body}`;
    }
    default:
      return assertNever(m.role, "message role");
  }
}
