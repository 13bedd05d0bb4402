/**
 * @module agent/providers/openai-responses-assemble
 * Pure assembly of OpenAI Responses API stream events (`POST /responses` with `stream: true`) into one
 * `ModelTurn`: output items keyed by `output_index` (never by `item_id`, which a proxy may rotate per
 * event), text from `response.output_text.delta`, calls finished only at stream end, reasoning items
 * kept whole for replay, usage from `response.completed` / `response.incomplete`. Event and item shapes:
 * OpenAI API reference, "Responses streaming events" (platform.openai.com/docs/api-reference/responses-streaming).
 */
import { AirlockError } from "../../errors.ts";
import { newId } from "../../ids.ts";
import type { ToolCallRequest } from "../../session/types.ts";
import { parseArguments } from "./openai-assemble.ts";
import type { ModelTurn, StopReason, TokenUsage } from "./provider.ts";

/** `Provider.name` of the Responses adapter; `provider_state` it stores carries this name. */
export const OPENAI_RESPONSES_PROVIDER = "openai-responses";

/** Between the texts of two message items of one response (a `commentary` then a `final_answer` message). */
export const MESSAGE_SEPARATOR = "\n\n";

/** Loose view of a stream event or an output item (servers differ; nothing is trusted). */
type Obj = Record<string, any>;

interface Slot {
  index: number;
  /** The item as `response.output_item.added` announced it (`type`, `call_id`, `name`, …). */
  added: Obj;
  /** The finished item from `response.output_item.done`; authoritative when present. */
  done: Obj | undefined;
  /** function_call: argument fragments joined; `argsDone` from `response.function_call_arguments.done`. */
  args: string;
  argsDone: string | undefined;
  /** message: text and refusal fragments, in order. */
  text: string;
  refused: boolean;
}

/**
 * What the Responses adapter keeps on an assistant message (`provider_state.data`): the model's output
 * items in the order they came — `reasoning` items whole (with `encrypted_content`), `message` items,
 * and `function_call` items as `{type, call_id, name, arguments}` — so a later request can give them
 * back in place. Hosted-tool items (web search, …) are not kept: airlock never asks for them.
 */
export interface ResponsesState {
  items: Obj[];
}

/**
 * Feeds parsed stream events one by one (`push`), then `finish()` returns the turn.
 * Rules: state is keyed by `output_index` (GitHub Copilot's endpoint sends a new `item_id` on every
 * event: vercel/ai `packages/openai/src/responses/__fixtures__/github-copilot-id-rotation.1.chunks.txt`);
 * the item of `response.output_item.done` wins over the `.added` one and over the joined deltas
 * (its `call_id` and reasoning `encrypted_content` can differ from the `.added` ones); calls are
 * parsed only at stream end; unknown event and item types are skipped.
 */
export class ResponsesAssembler {
  text = "";
  usage: TokenUsage | undefined;
  /** `completed`, `incomplete`, or undefined while the response has not ended. */
  status: "completed" | "incomplete" | undefined;
  /** `incomplete_details.reason` of a `response.incomplete` (`max_output_tokens`, `content_filter`). */
  incompleteReason: string | undefined;
  private slots = new Map<number, Slot>();
  /** The message slot whose text came last; text of the next message item is set apart by a blank line. */
  private lastTextSlot: Slot | undefined;

  constructor(private onDelta?: (text: string) => void) {}

  /** True once `response.completed` or `response.incomplete` arrived. */
  get finished(): boolean {
    return this.status !== undefined;
  }

  /**
   * Takes one parsed event.
   * @throws AirlockError for `error` and `response.failed` events (see {@link responsesStreamError}).
   */
  push(ev: Obj): void {
    if (!ev || typeof ev !== "object") return;
    switch (ev.type) {
      case "response.output_item.added": {
        const s = this.slot(ev.output_index);
        if (ev.item && typeof ev.item === "object") s.added = { ...s.added, ...ev.item };
        break;
      }
      case "response.output_item.done": {
        const s = this.slot(ev.output_index);
        if (ev.item && typeof ev.item === "object") s.done = ev.item;
        if (s.done?.type === "message" && s.text === "") this.takeWholeMessage(s);
        break;
      }
      case "response.output_text.delta":
      case "response.refusal.delta":
        if (typeof ev.delta === "string" && ev.delta.length > 0) {
          const s = this.slot(ev.output_index, "message");
          s.text += ev.delta;
          if (ev.type === "response.refusal.delta") s.refused = true;
          this.emit(s, ev.delta);
        }
        break;
      case "response.output_text.done":
      case "response.refusal.done": {
        // a server that skipped the deltas still gives the whole text here
        const whole = ev.type === "response.output_text.done" ? ev.text : ev.refusal;
        const s = this.slot(ev.output_index, "message");
        if (s.text === "" && typeof whole === "string" && whole.length > 0) {
          s.text = whole;
          if (ev.type === "response.refusal.done") s.refused = true;
          this.emit(s, whole);
        }
        break;
      }
      case "response.function_call_arguments.delta":
        if (typeof ev.delta === "string") this.slot(ev.output_index, "function_call").args += ev.delta;
        break;
      case "response.function_call_arguments.done":
        if (typeof ev.arguments === "string") this.slot(ev.output_index, "function_call").argsDone = ev.arguments;
        break;
      case "response.completed":
      case "response.incomplete": {
        const r = ev.response ?? {};
        this.status = ev.type === "response.completed" ? "completed" : "incomplete";
        const reason = r.incomplete_details?.reason;
        if (this.status === "incomplete") this.incompleteReason = typeof reason === "string" ? reason : "unknown";
        this.usage = readUsage(r.usage);
        break;
      }
      case "response.failed": {
        const err = ev.response?.error ?? {};
        throw responsesStreamError({ code: err.code, type: err.type, message: err.message, partialText: this.text, what: "the response failed" });
      }
      case "error":
        throw responsesStreamError({ code: ev.code ?? ev.error?.code, type: ev.error?.type, message: ev.message ?? ev.error?.message, partialText: this.text, what: "error event" });
      default:
        break; // response.created, .in_progress, content_part.*, reasoning_summary_*, hosted-tool events, future events
    }
  }

  /** The assembled turn. A response cut off by `max_output_tokens` is `truncated`, its calls flagged `invalid` (never run). */
  finish(): ModelTurn {
    const truncated = this.status === "incomplete" && this.incompleteReason === "max_output_tokens";
    const ordered = [...this.slots.values()].sort((a, b) => a.index - b.index);
    const tool_calls: ToolCallRequest[] = [];
    const items: Obj[] = [];
    const seen = new Set<string>();
    let refused = false;
    for (const s of ordered) {
      const type = s.done?.type ?? s.added.type;
      if (type === "function_call") {
        const it = { ...s.added, ...(s.done ?? {}) };
        let id = str(it.call_id) ?? str(it.id) ?? newId("call");
        if (seen.has(id)) id = newId("call");
        seen.add(id);
        const args = typeof s.done?.arguments === "string" ? s.done.arguments : (s.argsDone ?? s.args);
        const name = str(it.name) ?? "";
        tool_calls.push({ id, name, ...parseArguments(args, undefined, truncated || (s.done === undefined && this.status === "incomplete")) });
        items.push({ type: "function_call", call_id: id, name, arguments: args });
      } else if (type === "reasoning") {
        // only a finished reasoning item can be given back (an unfinished one has no final encrypted_content)
        if (s.done) items.push(s.done);
      } else if (type === "message") {
        refused ||= s.refused;
        items.push(s.done ?? { type: "message", role: "assistant", content: [{ type: "output_text", text: s.text, annotations: [] }] });
      }
    }
    const keep = items.some((i) => i.type === "reasoning" || (i.type === "message" && i.phase != null));
    return {
      text: this.text,
      tool_calls,
      stop_reason: stopReason(this.status, this.incompleteReason, tool_calls.length > 0, refused),
      truncated,
      ...(keep ? { provider_state: { provider: OPENAI_RESPONSES_PROVIDER, data: { items } satisfies ResponsesState } } : {}),
      usage: this.usage,
    };
  }

  private slot(index: unknown, type?: string): Slot {
    const i = typeof index === "number" ? index : -1;
    let s = this.slots.get(i);
    if (!s) {
      s = { index: i, added: type ? { type } : {}, done: undefined, args: "", argsDone: undefined, text: "", refused: false };
      this.slots.set(i, s);
    } else if (type && !s.added.type) {
      s.added.type = type;
    }
    return s;
  }

  /** Adds a message item's text to the turn's; the text of each further message item starts after a blank line ({@link MESSAGE_SEPARATOR}). */
  private emit(s: Slot, t: string): void {
    if (this.lastTextSlot && this.lastTextSlot !== s && this.text !== "") t = MESSAGE_SEPARATOR + t;
    this.lastTextSlot = s;
    this.text += t;
    this.onDelta?.(t);
  }

  /** A message item that arrived whole, with no text events before it. */
  private takeWholeMessage(s: Slot): void {
    for (const part of Array.isArray(s.done?.content) ? s.done.content : []) {
      const t = part?.type === "output_text" ? part.text : part?.type === "refusal" ? part.refusal : undefined;
      if (typeof t === "string" && t) {
        s.text += t;
        if (part.type === "refusal") s.refused = true;
        this.emit(s, t);
      }
    }
  }
}

/**
 * `response.usage` → TokenUsage: `input_tokens` (cached included), `input_tokens_details.cached_tokens`,
 * `output_tokens`, `output_tokens_details.reasoning_tokens`. Undefined when the response reported none.
 */
export function readUsage(u: unknown): TokenUsage | undefined {
  if (!u || typeof u !== "object") return undefined;
  const x = u as Obj;
  if (typeof x.input_tokens !== "number" || typeof x.output_tokens !== "number") return undefined;
  const cached = x.input_tokens_details?.cached_tokens;
  const reasoning = x.output_tokens_details?.reasoning_tokens;
  return {
    input_tokens: x.input_tokens,
    output_tokens: x.output_tokens,
    ...(typeof cached === "number" ? { cached_input_tokens: cached } : {}),
    ...(typeof reasoning === "number" ? { reasoning_tokens: reasoning } : {}),
  };
}

/**
 * An error reported inside a Responses stream (an `error` event, or `response.failed` with its
 * `response.error`) → AirlockError keeping the text so far: `rate_limit_exceeded` → retryable
 * `provider_rate_limit`; `insufficient_quota` → `provider_rate_limit`, not retried (billing);
 * `server_error` or no code → retryable `provider_error`; any other code (`invalid_prompt`, …) →
 * `provider_error`, not retried. The server's message is kept in the error's message.
 */
export function responsesStreamError(o: { code: unknown; type?: unknown; message: unknown; partialText: string; what: string }): AirlockError {
  const code = str(o.code) ?? str(o.type);
  const message = str(o.message) ?? "no message";
  const details = { provider_code: code ?? null, partial_text: o.partialText };
  if (code === "rate_limit_exceeded") {
    return new AirlockError("provider_rate_limit", `The model server is rate-limiting requests (${o.what}: ${message}). Wait and retry, or lower the request rate.`, { ...details, retryable: true });
  }
  if (code === "insufficient_quota") {
    return new AirlockError("provider_rate_limit", `The account has no quota left (${o.what}, insufficient_quota: ${message}). Check the plan and billing; retrying will not help.`, { ...details, retryable: false });
  }
  const retryable = code === undefined || code === "server_error";
  return new AirlockError("provider_error", `The model server reported an error mid-stream (${o.what}${code ? `, ${code}` : ""}: ${message}).${retryable ? " Retry the turn; if it keeps failing, check the server." : ""}`, {
    ...details,
    retryable,
  });
}

function str(v: unknown): string | undefined {
  return typeof v === "string" && v !== "" ? v : undefined;
}

/** Judged from the assembled calls first, then the response's status and incomplete reason. */
function stopReason(status: "completed" | "incomplete" | undefined, reason: string | undefined, hasCalls: boolean, refused: boolean): StopReason {
  if (status === "incomplete") {
    if (reason === "max_output_tokens") return "length";
    if (reason === "content_filter") return "content_filter";
    return hasCalls ? "tool_calls" : "other";
  }
  if (hasCalls) return "tool_calls";
  return refused ? "content_filter" : "end_turn";
}
