/**
 * @module agent/providers/provider
 * The contract between the agent loop and a model: one `complete` call = one streamed model turn.
 * Providers (openai, openai-responses, anthropic, scripted) turn a history of stored messages into a `ModelTurn`,
 * or throw `AirlockError` (`provider_auth`, `provider_rate_limit`, `provider_error`, `cancelled`).
 */
import type { ProviderConfig } from "../../config/schema.ts";
import type { Message, ToolCallRequest } from "../../session/types.ts";
import type { ToolSpec } from "../../tool/tool.ts";

export type { ProviderConfig, Message, ToolCallRequest, ToolSpec };

/** One model call. */
export interface ModelRequest {
  session: { id: string; parent_session_id: string | null; spawn_index: number | null };
  /** Overrides the config's model. */
  model?: string;
  /** System prompt. */
  system?: string;
  /** The conversation so far (roles user / assistant with tool_calls / tool with tool_call_id, name, is_error). */
  messages: Message[];
  /** Tools offered to the model (name, description, JSON Schema parameters). */
  tools: ToolSpec[];
  /** Aborting cancels the HTTP stream; `complete` then rejects with `cancelled`. */
  signal: AbortSignal;
  /** Called with each streamed text fragment, in order. */
  onDelta?: (text: string) => void;
}

export type StopReason = "end_turn" | "tool_calls" | "length" | "content_filter" | "other";

/** What one model call produced. */
export interface ModelTurn {
  text: string;
  /** Arguments parsed; `invalid` holds the raw text when it was not JSON or was cut off (the loop then does not run the call). */
  tool_calls: ToolCallRequest[];
  /** `tool_calls` whenever calls were assembled, whatever the server's finish reason said. */
  stop_reason: StopReason;
  /** True when the output hit the length limit; any call in progress is then flagged `invalid`. */
  truncated: boolean;
  /** What this provider needs given back with this turn in later requests (stored on the assistant message: session/types.ts `Message.provider_state`). */
  provider_state?: { provider: string; data: unknown };
  /** Token usage of this call; undefined = unknown (never reported as zero). */
  usage?: TokenUsage;
}

/**
 * Tokens of one model call, as the provider reported them. `input_tokens` counts every input token
 * (cached ones included); `cached_input_tokens` is the part served from the provider's prompt cache
 * (Anthropic `cache_read_input_tokens`, OpenAI `prompt_tokens_details.cached_tokens`),
 * `cache_write_input_tokens` the part written to it (Anthropic `cache_creation_input_tokens`);
 * `reasoning_tokens` the part of `output_tokens` spent on reasoning (OpenAI
 * `completion_tokens_details.reasoning_tokens`). An optional field absent = not reported.
 */
export interface TokenUsage {
  input_tokens: number;
  output_tokens: number;
  cached_input_tokens?: number;
  cache_write_input_tokens?: number;
  reasoning_tokens?: number;
}

export interface Provider {
  readonly name: string;
  complete(req: ModelRequest): Promise<ModelTurn>;
}

/** Options every provider factory takes. */
export interface ProviderOptions {
  /** Directory of the config file; relative paths in the config (the script) resolve against it. */
  configDir: string;
  /** Where a relative `provider.script` came from, for error messages (e.g. `recipe nightly.yaml`); default the config file. */
  scriptOrigin?: string;
  /** Environment to read API keys from; default `process.env`. */
  env?: Record<string, string | undefined>;
  /** Retry pacing for 429/5xx: first backoff delay in ms (default 500), doubled per attempt, capped at `maxDelayMs` (default 20 000). Tests make it small. */
  retry?: { baseDelayMs?: number; maxDelayMs?: number };
  /** Anthropic only: `max_tokens` per call (default 8192). */
  maxTokens?: number;
}

/** True for base URLs that point at this machine (Ollama, llama.cpp, vLLM on loopback, test servers). */
export function isLoopbackUrl(url: string | undefined): boolean {
  if (!url) return false;
  let host: string;
  try {
    host = new URL(url).hostname.toLowerCase();
  } catch {
    return false;
  }
  if (host.startsWith("[") && host.endsWith("]")) host = host.slice(1, -1);
  return host === "localhost" || host.endsWith(".localhost") || host === "::1" || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** Key placeholder for loopback servers that ignore authentication (Ollama, llama.cpp). */
export const LOOPBACK_PLACEHOLDER_KEY = "airlock-no-key";
