/**
 * @module agent/providers/openai-assemble
 * Pure assembly of streamed chat-completion chunks into one `ModelTurn`, tolerant of the quirks
 * of OpenAI-compatible servers listed in docs research `provider-streams.md` §1 and §3
 * (state keyed by index, calls finished only at stream end, names taken once, missing ids generated),
 * plus reasoning deltas (kept as `provider_state`, never answer text), refusals (answer text), the
 * legacy `delta.function_call`, and usage with cached and reasoning tokens. Shapes: docs/providers.md.
 */
import { AirlockError } from "../../errors.ts";
import { newId } from "../../ids.ts";
import type { ToolCallRequest } from "../../session/types.ts";
import type { ModelTurn, StopReason, TokenUsage } from "./provider.ts";

/** The `provider_state.data` the openai provider stores on an assistant message (DeepSeek-style reasoning). */
export interface OpenAIProviderState {
  /** The turn's reasoning text, joined from `delta.reasoning_content` (DeepSeek, xAI) or `delta.reasoning` (vLLM ≥ 0.10, OpenRouter). */
  reasoning_content: string;
}

/** Slot key of a legacy `delta.function_call` (finish_reason `function_call`), apart from every `tool_calls` index. */
const FUNCTION_CALL_INDEX = -1;

interface Slot {
  index: number | undefined;
  id: string | undefined;
  name: string;
  args: string;
  /** Arguments sent as a JSON object instead of a string (llama.cpp #20198, Ollama native). */
  argsObject: unknown;
}

/** Loose view of one `chat.completion.chunk` (servers differ; nothing is trusted). */
type AnyChunk = Record<string, any>;

/**
 * Feeds chunks one by one (`push`), then `finish()` returns the turn.
 * Rules: a call's state is keyed by `index`; a reused index with a *different* id starts a new call
 * (Ollama sends index 0 for every call, ollama#15457); deltas without `index` go to the call with
 * the same id, else open a new call when they carry an id or name, else continue the call at the
 * same position of the delta (term-llm#314); a name is taken once, never concatenated
 * (llama.cpp #12379 comment, LM Studio sends `""`); calls are parsed only at stream end
 * (vercel/ai#13137).
 */
export class ChunkAssembler {
  text = "";
  /** Reasoning text (never shown as the answer, never streamed through `onDelta`). */
  reasoning = "";
  finishReason: string | null = null;
  usage: ModelTurn["usage"];
  /** Set by the reader when the server sent `data: [DONE]`. */
  done = false;
  private slots: Slot[] = [];
  private byIndex = new Map<number, Slot>();

  constructor(private onDelta?: (text: string) => void) {}

  /**
   * True once the stream ended properly: a finish_reason arrived, or the server said `[DONE]` (some
   * servers never send a finish_reason, e.g. a choice whose last chunk has none; the turn is then read
   * as finished with `stop`). A stream cut before either is not finished.
   */
  get finished(): boolean {
    return this.finishReason !== null || this.done;
  }

  /** Anything produced so far (text or calls)? */
  get hasOutput(): boolean {
    return this.text.length > 0 || this.slots.length > 0;
  }

  /**
   * Takes one parsed chunk.
   * @throws AirlockError `provider_error` for an in-band error object (`{"object":"error"}` from vLLM, `finish_reason: "error"` from OpenRouter).
   */
  push(chunk: AnyChunk): void {
    if (!chunk || typeof chunk !== "object") return;
    if (chunk.object === "error" || (chunk.error && (typeof chunk.error === "object" || typeof chunk.error === "string"))) {
      const msg = chunk.message ?? (typeof chunk.error === "string" ? chunk.error : chunk.error?.message) ?? JSON.stringify(chunk);
      throw this.midStreamError(String(msg));
    }
    const usage = readUsage(chunk.usage);
    if (usage) this.usage = usage;
    const choices = Array.isArray(chunk.choices) ? chunk.choices : [];
    for (const choice of choices) {
      if (!choice || (typeof choice.index === "number" && choice.index !== 0)) continue;
      const delta = choice.delta && typeof choice.delta === "object" ? choice.delta : {};
      const reasoning = typeof delta.reasoning_content === "string" ? delta.reasoning_content : typeof delta.reasoning === "string" ? delta.reasoning : "";
      if (reasoning) this.reasoning += reasoning;
      if (typeof delta.content === "string" && delta.content.length > 0) {
        this.text += delta.content;
        this.onDelta?.(delta.content);
      }
      // a refusal (structured outputs) is what the person must read: it is the answer text
      if (typeof delta.refusal === "string" && delta.refusal.length > 0) {
        this.text += delta.refusal;
        this.onDelta?.(delta.refusal);
      }
      if (Array.isArray(delta.tool_calls)) this.pushToolCalls(delta.tool_calls);
      // the deprecated single-function shape (finish_reason "function_call"): one call, no id
      if (delta.function_call && typeof delta.function_call === "object") this.pushToolCalls([{ index: FUNCTION_CALL_INDEX, function: delta.function_call }]);
      if (typeof choice.finish_reason === "string" && choice.finish_reason) {
        if (choice.finish_reason === "error") throw this.midStreamError("the server ended the answer with finish_reason \"error\"");
        this.finishReason = choice.finish_reason;
      }
    }
  }

  /** A `provider_error` that keeps the text streamed so far in `details.partial_text`. */
  midStreamError(what: string): AirlockError {
    return new AirlockError("provider_error", `The model server reported an error mid-stream: ${what}. Retry the turn; if it keeps failing, check the server.`, {
      partial_text: this.text,
      retryable: true,
    });
  }

  private pushToolCalls(deltas: AnyChunk[]): void {
    const noIndex = this.slots.filter((s) => s.index === undefined);
    deltas.forEach((tc, position) => {
      if (!tc || typeof tc !== "object") return;
      const fn = tc.function ?? {};
      const id = typeof tc.id === "string" && tc.id !== "" ? tc.id : undefined;
      const name = typeof fn.name === "string" ? fn.name : "";
      let slot: Slot | undefined;
      if (typeof tc.index === "number") {
        slot = this.byIndex.get(tc.index);
        if (slot && id && slot.id && id !== slot.id) slot = undefined; // index reused by another call
        if (!slot) {
          slot = this.open(tc.index, id);
          this.byIndex.set(tc.index, slot);
        }
      } else {
        slot = id ? this.slots.find((s) => s.id === id) : undefined;
        if (!slot && (id || name)) {
          slot = this.open(undefined, id);
        } else if (!slot) {
          slot = noIndex[position] ?? this.slots.at(-1);
          if (!slot) slot = this.open(undefined, undefined);
        }
      }
      if (!slot.id && id) slot.id = id;
      if (!slot.name && name) slot.name = name;
      if (typeof fn.arguments === "string") slot.args += fn.arguments;
      else if (fn.arguments && typeof fn.arguments === "object") slot.argsObject = fn.arguments;
    });
  }

  private open(index: number | undefined, id: string | undefined): Slot {
    const slot: Slot = { index, id, name: "", args: "", argsObject: undefined };
    this.slots.push(slot);
    return slot;
  }

  /** The assembled turn. Calls cut off by `length` are flagged `invalid` (never run) and `truncated` is set. */
  finish(): ModelTurn {
    const truncated = this.finishReason === "length";
    const seen = new Set<string>();
    const tool_calls: ToolCallRequest[] = [];
    for (const s of this.slots) {
      if (!s.name && !s.args && s.argsObject === undefined) continue;
      let id = s.id ?? newId("call");
      if (seen.has(id)) id = newId("call"); // llama.cpp #27966: parallel calls sharing one id
      seen.add(id);
      tool_calls.push({ id, name: s.name, ...parseArguments(s.args, s.argsObject, truncated) });
    }
    const finish = this.finishReason ?? (this.done ? "stop" : null);
    const turn: ModelTurn = { text: this.text, tool_calls, stop_reason: stopReason(finish, tool_calls.length > 0), truncated, usage: this.usage };
    if (this.reasoning) turn.provider_state = { provider: "openai", data: { reasoning_content: this.reasoning } satisfies OpenAIProviderState };
    return turn;
  }
}

/**
 * A chat-completions `usage` object → TokenUsage, or undefined when it lacks the two counts (`usage: null`
 * on every chunk but the last). `prompt_tokens` includes cached tokens (OpenAI's usage object reference);
 * the cached part is `prompt_tokens_details.cached_tokens`, else DeepSeek's `prompt_cache_hit_tokens`;
 * `completion_tokens_details.reasoning_tokens` is the reasoning part of `completion_tokens`. A detail
 * the server did not send stays absent (never reported as zero).
 */
export function readUsage(u: unknown): TokenUsage | undefined {
  if (!u || typeof u !== "object") return undefined;
  const r = u as Record<string, any>;
  if (typeof r.prompt_tokens !== "number" || typeof r.completion_tokens !== "number") return undefined;
  const out: TokenUsage = { input_tokens: r.prompt_tokens, output_tokens: r.completion_tokens };
  const cached = typeof r.prompt_tokens_details?.cached_tokens === "number" ? r.prompt_tokens_details.cached_tokens : r.prompt_cache_hit_tokens;
  if (typeof cached === "number") out.cached_input_tokens = cached;
  const reasoning = r.completion_tokens_details?.reasoning_tokens;
  if (typeof reasoning === "number") out.reasoning_tokens = reasoning;
  return out;
}

/**
 * Arguments text → value: `""` → `{}` (no-parameter tools, vllm#28806); an object sent as-is is kept;
 * text that is not JSON, or any call cut off by `length`, keeps `arguments: {}` and the raw text in `invalid`.
 */
export function parseArguments(raw: string, asObject: unknown, truncated: boolean): { arguments: unknown; invalid?: string } {
  if (raw.trim() === "" && asObject !== undefined) return truncated ? { arguments: asObject, invalid: JSON.stringify(asObject) } : { arguments: asObject };
  if (raw.trim() === "") return truncated ? { arguments: {}, invalid: "" } : { arguments: {} };
  if (truncated) return { arguments: {}, invalid: raw };
  try {
    return { arguments: JSON.parse(raw) };
  } catch {
    return { arguments: {}, invalid: raw };
  }
}

/** Judged from the assembled calls, not the server's reason (OpenAI sends `stop` for a named tool_choice, vllm#25054). */
function stopReason(finish: string | null, hasCalls: boolean): StopReason {
  switch (finish) {
    case "length":
      return "length";
    case "content_filter":
      return "content_filter";
    case "stop":
    case "tool_calls":
    case "function_call":
      return hasCalls ? "tool_calls" : "end_turn";
    default:
      return hasCalls ? "tool_calls" : "other";
  }
}
