/**
 * @module agent/context-size
 * How many input tokens a provider's model accepts, the raw token estimate of a text, and the share of the
 * context at which history shrinking starts (agent/compact.ts, which re-exports them). A module of its own,
 * free of the compactor, so `airlock run`'s early request (cli/early-request.ts) can check that shrinking
 * would leave its first request as it is without loading the compactor (docs/performance.md, issue 20).
 */
import type { ProviderConfig } from "../config/schema.ts";
// the defaults modules, not the adapters: importing an adapter would load its SDK at start
import { ANTHROPIC_DEFAULT_MODEL } from "./providers/anthropic-defaults.ts";
import { OPENAI_DEFAULT_MODEL } from "./providers/openai-defaults.ts";

/**
 * Input tokens of known model families, matched on the model's name, lower-cased, after any `vendor/`
 * prefix (OpenRouter's `openai/gpt-4o`). First match wins. Sources: each vendor's model pages
 * (OpenAI models docs: gpt-4o 128k, gpt-4.1 ~1M, gpt-5 272k input, o-series 200k; Anthropic models
 * overview: 200k; DeepSeek API docs: 128k). Local families (llama, qwen, …) get 8192: the context a
 * local server is usually started with, not the model's maximum (Ollama's `num_ctx`).
 */
const FAMILY_CONTEXT: readonly (readonly [RegExp, number])[] = [
  [/^gpt-4\.1/, 1_000_000],
  [/^gpt-5/, 272_000],
  [/^gpt-4o/, 128_000],
  [/^gpt-4-turbo/, 128_000],
  [/^gpt-4(-\d|$)/, 8_192],
  [/^gpt-3\.5/, 16_385],
  [/^o1-mini/, 128_000],
  [/^o\d/, 200_000],
  [/^claude-/, 200_000],
  [/^deepseek/, 128_000],
  [/^gemini/, 1_000_000],
  [/^(llama|meta-llama|qwen|mistral|mixtral|gemma|phi|codellama|granite|smollm|deepcoder|devstral)/, 8_192],
];

/** Input tokens for a model no family matches. */
export const UNKNOWN_MODEL_CONTEXT_TOKENS = 32_000;

/** The model each provider uses when `provider.model` is unset (its adapter's default). */
const DEFAULT_MODEL: Readonly<Record<string, string>> = { openai: OPENAI_DEFAULT_MODEL, anthropic: ANTHROPIC_DEFAULT_MODEL };

/**
 * The input tokens a provider config's model accepts: `context_tokens` when set; else the model
 * family's default (FAMILY_CONTEXT), else {@link UNKNOWN_MODEL_CONTEXT_TOKENS}; null for the scripted
 * provider (it has no context to overflow: never shrink).
 */
export function contextTokensFor(cfg: Pick<ProviderConfig, "name" | "model" | "context_tokens">): number | null {
  if (cfg.context_tokens !== undefined) return cfg.context_tokens;
  if (cfg.name === "scripted") return null;
  const model = (cfg.model ?? DEFAULT_MODEL[cfg.name] ?? "").toLowerCase();
  const bare = model.slice(model.lastIndexOf("/") + 1);
  for (const [re, n] of FAMILY_CONTEXT) if (re.test(bare) || re.test(model)) return n;
  return UNKNOWN_MODEL_CONTEXT_TOKENS;
}

/** History shrinking (agent/compact.ts) starts when the estimate passes this share of the context. */
export const TRIGGER_SHARE = 0.85;
/** Raw token estimate of a string: UTF-8 bytes / 4, rounded up (the calibration ratio corrects it per session). */
export function estimateTextTokens(s: string): number {
  return Math.ceil(Buffer.byteLength(s, "utf8") / 4);
}
