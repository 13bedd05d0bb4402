/**
 * @module agent/providers/anthropic-assemble
 * One streamed Anthropic Messages response → one `ModelTurn`, event by event, with no I/O: blocks kept
 * per `index`; text (`text_delta`), tool input (`input_json_delta`, parsed once at the end), thinking
 * (`thinking_delta` + `signature_delta`) and `redacted_thinking`; `ping`, unknown events, unknown block
 * types (`server_tool_use`, `web_search_tool_result`, `fallback`, …) and unknown delta types
 * (`citations_delta`, …) skipped. Usage from `message_start`, overridden field by field by the
 * cumulative `message_delta` usage; a second message spliced into the stream is an error. Shapes:
 * docs.claude.com/en/api/messages-streaming and the recorded streams named in docs/providers.md.
 */
import { AirlockError } from "../../errors.ts";
import type { ToolCallRequest } from "../../session/types.ts";
import { parseArguments } from "./openai-assemble.ts";
import type { ModelTurn, StopReason, TokenUsage } from "./provider.ts";

/** A content block as the Messages API takes it back in an assistant message. */
export type AnthropicContentBlock =
  | { type: "thinking"; thinking: string; signature: string }
  | { type: "redacted_thinking"; data: string }
  | { type: "text"; text: string }
  | { type: "tool_use"; id: string; name: string; input: unknown };

/**
 * `ModelTurn.provider_state.data` of an anthropic turn that had thinking: the assistant message's
 * content blocks in streamed order (thinking with its signature, redacted thinking, text, tool_use),
 * so the next request rebuilds the same content array.
 */
export interface AnthropicState {
  content: AnthropicContentBlock[];
}

interface OpenBlock {
  kind: "text" | "tool_use" | "thinking" | "redacted_thinking" | "other";
  id: string;
  name: string;
  json: string;
  text: string;
  thinking: string;
  signature: string;
  data: string;
  closed: boolean;
}

/** The wire's usage counters seen so far (undefined = not reported). */
interface WireUsage {
  input?: number;
  output?: number;
  cacheRead?: number;
  cacheWrite?: number;
  thinking?: number;
}

/**
 * Assembles one streamed response. Feed every parsed event to `push` (in order), then call `finish`.
 * `onText` gets each text fragment as it arrives (never thinking).
 */
export class AnthropicStreamAssembler {
  private readonly blocks = new Map<number, OpenBlock>();
  private readonly usage: WireUsage = {};
  /** The answer text so far. */
  text = "";
  /** `message_delta.delta.stop_reason`, raw. */
  stop: string | null = null;
  /** True once `message_stop` came. */
  stopped = false;
  private messageId: string | undefined;

  constructor(private readonly onText: (text: string) => void = () => {}) {}

  /**
   * Takes one event (`{type, …}` as parsed from an SSE `data:` line). Unknown types are ignored.
   * @throws AirlockError `provider_error` (retryable) when a second message starts in the stream.
   */
  push(ev: any): void {
    switch (ev?.type) {
      case "message_start":
        this.messageStart(ev.message ?? {});
        break;
      case "content_block_start":
        this.start(ev.index, ev.content_block ?? {});
        break;
      case "content_block_delta":
        this.delta(ev.index, ev.delta ?? {});
        break;
      case "content_block_stop": {
        const b = this.blocks.get(ev.index);
        if (b) b.closed = true;
        break;
      }
      case "message_delta":
        if (typeof ev.delta?.stop_reason === "string") this.stop = ev.delta.stop_reason;
        this.readUsage(ev.usage);
        break;
      case "message_stop":
        this.stopped = true;
        break;
      default:
        break; // ping, error (the SDK throws it), events added later
    }
  }

  /**
   * A repeated `message_start` of the same message before any content only updates usage. One that
   * starts another message (new id, or after content or `message_stop`) means a proxy spliced two
   * responses into one stream (vercel/ai#18331): fail, retryable, rather than merge two messages.
   */
  private messageStart(m: any): void {
    const id = typeof m.id === "string" ? m.id : undefined;
    if (this.messageId !== undefined && (id !== this.messageId || this.blocks.size > 0 || this.stopped)) {
      throw new AirlockError("provider_error", `The model stream held a second message (${id ?? "no id"} after ${this.messageId}); a proxy between airlock and the API probably spliced a retried response into it. Retry the turn.`, {
        retryable: true,
        partial_text: this.text,
      });
    }
    this.messageId = id ?? "";
    this.readUsage(m.usage);
  }

  private start(index: number, cb: any): void {
    const t = cb.type;
    const kind: OpenBlock["kind"] = t === "text" || t === "tool_use" || t === "thinking" || t === "redacted_thinking" ? t : "other";
    const b: OpenBlock = { kind, id: str(cb.id), name: str(cb.name), json: "", text: "", thinking: str(cb.thinking), signature: str(cb.signature), data: str(cb.data), closed: false };
    this.blocks.set(index, b);
    if (kind === "text" && typeof cb.text === "string" && cb.text) this.addText(b, cb.text);
  }

  private delta(index: number, d: any): void {
    const b = this.blocks.get(index);
    if (!b) return;
    switch (d.type) {
      case "text_delta":
        if (b.kind === "text" && typeof d.text === "string") this.addText(b, d.text);
        break;
      case "input_json_delta":
        if (b.kind === "tool_use" && typeof d.partial_json === "string") b.json += d.partial_json;
        break;
      case "thinking_delta":
        if (b.kind === "thinking" && typeof d.thinking === "string") b.thinking += d.thinking;
        break;
      case "signature_delta":
        if (b.kind === "thinking" && typeof d.signature === "string") b.signature += d.signature;
        break;
      default:
        break; // citations_delta and delta types added later
    }
  }

  private addText(b: OpenBlock, t: string): void {
    b.text += t;
    this.text += t;
    this.onText(t);
  }

  private readUsage(u: any): void {
    if (!u || typeof u !== "object") return;
    if (typeof u.input_tokens === "number") this.usage.input = u.input_tokens;
    if (typeof u.output_tokens === "number") this.usage.output = u.output_tokens;
    if (typeof u.cache_read_input_tokens === "number") this.usage.cacheRead = u.cache_read_input_tokens;
    if (typeof u.cache_creation_input_tokens === "number") this.usage.cacheWrite = u.cache_creation_input_tokens;
    if (typeof u.output_tokens_details?.thinking_tokens === "number") this.usage.thinking = u.output_tokens_details.thinking_tokens;
  }

  /**
   * Usage in airlock's shape: `input_tokens` = uncached + cache read + cache write (Anthropic reports the
   * three apart), `cached_input_tokens` = `cache_read_input_tokens`, `cache_write_input_tokens` =
   * `cache_creation_input_tokens`, `reasoning_tokens` = `output_tokens_details.thinking_tokens`.
   * Undefined unless both input and output counts came.
   */
  tokenUsage(): TokenUsage | undefined {
    const u = this.usage;
    if (u.input === undefined || u.output === undefined) return undefined;
    return {
      input_tokens: u.input + (u.cacheRead ?? 0) + (u.cacheWrite ?? 0),
      output_tokens: u.output,
      ...(u.cacheRead !== undefined ? { cached_input_tokens: u.cacheRead } : {}),
      ...(u.cacheWrite !== undefined ? { cache_write_input_tokens: u.cacheWrite } : {}),
      ...(u.thinking !== undefined ? { reasoning_tokens: u.thinking } : {}),
    };
  }

  /**
   * The turn. A tool_use block cut off (no `content_block_stop`, or `max_tokens`) is flagged `invalid`
   * and not run. A `refusal` keeps its text but drops its tool calls and thinking (the refused output is
   * not continued). `provider_state` holds the content blocks when the turn had thinking.
   */
  finish(): ModelTurn {
    const truncated = this.stop === "max_tokens" || this.stop === "model_context_window_exceeded";
    const refused = this.stop === "refusal";
    const tool_calls: ToolCallRequest[] = [];
    const content: AnthropicContentBlock[] = [];
    let thinking = false;
    for (const [, b] of [...this.blocks.entries()].sort(([a], [z]) => a - z)) {
      switch (b.kind) {
        case "tool_use": {
          const call: ToolCallRequest = { id: b.id, name: b.name, ...parseArguments(b.json, undefined, truncated || !b.closed) };
          tool_calls.push(call);
          content.push({ type: "tool_use", id: b.id, name: b.name, input: call.invalid === undefined && isObject(call.arguments) ? call.arguments : {} });
          break;
        }
        case "text":
          if (b.text) content.push({ type: "text", text: b.text });
          break;
        case "thinking":
          if (b.signature) {
            content.push({ type: "thinking", thinking: b.thinking, signature: b.signature });
            thinking = true;
          }
          break;
        case "redacted_thinking":
          if (b.data) {
            content.push({ type: "redacted_thinking", data: b.data });
            thinking = true;
          }
          break;
        case "other":
          break;
        default:
          break;
      }
    }
    const calls = refused ? [] : tool_calls;
    const usage = this.tokenUsage();
    return {
      text: this.text,
      tool_calls: calls,
      stop_reason: mapStop(this.stop, calls.length > 0),
      truncated,
      ...(thinking && !refused ? { provider_state: { provider: "anthropic", data: { content } satisfies AnthropicState } } : {}),
      ...(usage ? { usage } : {}),
    };
  }
}

/**
 * Anthropic `stop_reason` → StopReason (platform.claude.com "Handling stop reasons"): a turn with calls
 * is `tool_calls` unless cut off; `end_turn`, `stop_sequence`, `tool_use` → `end_turn`; `max_tokens`,
 * `model_context_window_exceeded` → `length`; `refusal` → `content_filter`; `pause_turn` (a server tool
 * paused) and unknown → `other`.
 */
export function mapStop(stop: string | null, hasCalls: boolean): StopReason {
  const cut = stop === "max_tokens" || stop === "model_context_window_exceeded";
  if (hasCalls && !cut) return "tool_calls";
  switch (stop) {
    case "end_turn":
    case "stop_sequence":
    case "tool_use":
      return "end_turn";
    case "max_tokens":
    case "model_context_window_exceeded":
      return "length";
    case "refusal":
      return "content_filter";
    default:
      return "other";
  }
}

function str(v: unknown): string {
  return typeof v === "string" ? v : "";
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
