/**
 * @module agent/providers/openai
 * OpenAI Chat Completions (streamed) for api.openai.com and any OpenAI-compatible server (`base_url`:
 * Ollama, vLLM, llama.cpp, OpenRouter, LM Studio, Groq, DeepSeek). The official `openai` SDK sends the
 * request and maps HTTP errors; the event stream is read here (`readChatStream`, on `eventsource-parser`)
 * so `[DONE]`, SSE comments and non-stream answers are seen; chunks are assembled by `openai-assemble.ts`;
 * retries are ours (`retry.ts`). Stream shapes covered: docs/providers.md ("openai").
 */
import OpenAI from "openai";
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { AirlockError } from "../../errors.ts";
import { ChunkAssembler } from "./openai-assemble.ts";
import { earlyAwareFetch } from "./early.ts";
import { chatCompletionsBody, replaysReasoningContent } from "./openai-request.ts";
import { isLoopbackUrl, LOOPBACK_PLACEHOLDER_KEY, type ModelRequest, type ModelTurn, type Provider, type ProviderConfig, type ProviderOptions } from "./provider.ts";
import { connectionError, htmlPageError, httpStatusError, idleTimeout, isHtmlAnswer, malformedStream, otherError } from "./errors.ts";
import { attemptController, cancelledError, retryingComplete } from "./retry.ts";

import { OPENAI_DEFAULT_BASE_URL, OPENAI_DEFAULT_KEY_ENV, OPENAI_DEFAULT_MODEL, OPENAI_USER_AGENT } from "./openai-defaults.ts";

export { OPENAI_DEFAULT_BASE_URL, OPENAI_DEFAULT_KEY_ENV, OPENAI_DEFAULT_MODEL, OPENAI_USER_AGENT };
export { chatCompletionsBody, chatCompletionsUrl, replaysReasoningContent, toOpenAIMessages, toOpenAITools } from "./openai-request.ts";

/**
 * Builds the OpenAI provider. The API key is read at call time from `env[cfg.api_key_env ?? "OPENAI_API_KEY"]`;
 * a loopback `base_url` without a key gets a placeholder (local servers ignore it).
 * DeepSeek's `reasoning_content` is stored with each turn (`provider_state`) and sent back when
 * {@link replaysReasoningContent} says the server is DeepSeek-like.
 * `complete` throws `provider_auth` when the key is missing for a remote server (the start-up check,
 * `ProviderSelector.checkConfigured`, reports that earlier as `config_invalid`).
 */
export function createOpenAIProvider(cfg: ProviderConfig, opts: ProviderOptions): Provider {
  const { baseURL, keyVar, getClient } = openAIClient(cfg, opts, "openai");
  const idleMs = cfg.timeout_s * 1000;
  const replayReasoning = replaysReasoningContent(cfg);
  const endpoint = `${baseURL.replace(/\/+$/, "")}/chat/completions`;

  async function attempt(req: ModelRequest, emitted: { value: boolean }): Promise<ModelTurn> {
    const c = getClient();
    const ctl = attemptController(req.signal, idleMs);
    const asm = new ChunkAssembler((t) => {
      emitted.value = true;
      req.onDelta?.(t);
    });
    try {
      const response = await c.sdk.chat.completions
        .create(
          // the one body builder, shared with `airlock run`'s early request (openai-request.ts)
          chatCompletionsBody({ model: req.model ?? cfg.model ?? OPENAI_DEFAULT_MODEL, system: req.system, messages: req.messages, tools: req.tools, replayReasoning }) as any,
          { signal: ctl.signal },
        )
        .asResponse();
      ctl.touch();
      const type = response.headers.get("content-type") ?? "";
      if (isHtmlAnswer(type, "")) {
        await response.body?.cancel().catch(() => {});
        throw htmlPageError(endpoint, response.status, baseURL);
      }
      if (/^application\/json/i.test(type)) {
        // a server that ignored `stream: true` and sent one whole chat.completion
        asm.push(completionAsChunk(await response.json()));
        asm.done = true;
      } else {
        const read = await readChatStream(response.body, asm, ctl.touch);
        // an HTML page under another content-type (a portal saying text/plain): no event at all, HTML text
        if (read.events === 0 && isHtmlAnswer("", read.head)) throw htmlPageError(endpoint, response.status, baseURL);
      }
      if (req.signal.aborted) throw cancelledError();
      if (ctl.timedOut()) throw idleTimeout(cfg.timeout_s, asm.text);
      if (!asm.finished) {
        throw new AirlockError("provider_error", `The model stream from ${baseURL} ended before the answer was finished (no finish_reason and no [DONE]); the connection was probably cut. Retry the turn.`, {
          partial_text: asm.text,
          retryable: true,
        });
      }
      return asm.finish();
    } catch (e) {
      if (req.signal.aborted) throw cancelledError();
      if (ctl.timedOut()) throw idleTimeout(cfg.timeout_s, asm.text);
      throw mapOpenAIError(e, baseURL, keyVar, asm.text, { keySent: c.keySent, endpoint });
    } finally {
      ctl.dispose();
    }
  }

  return { name: "openai", complete: retryingComplete(cfg.max_retries, opts.retry, attempt) };
}

/**
 * The OpenAI SDK client the `openai` and `openai-responses` providers share, built on first use:
 * `baseURL` is `cfg.base_url` (default {@link OPENAI_DEFAULT_BASE_URL}); the key is read at call time from
 * `env[cfg.api_key_env ?? "OPENAI_API_KEY"]`, a loopback `base_url` without a key getting a placeholder
 * (local servers ignore it). The SDK's own retries are off (ours are in `retry.ts`); `timeout` is
 * `cfg.timeout_s` in ms; `User-Agent` is {@link OPENAI_USER_AGENT}. `providerName` names the provider in error messages.
 * `getClient` returns the client and whether a key was sent (a 401 without one says the variable is unset);
 * it throws AirlockError `provider_auth` when the key is missing for a remote server.
 */
export function openAIClient(cfg: ProviderConfig, opts: ProviderOptions, providerName: string): { baseURL: string; keyVar: string; getClient: () => { sdk: OpenAI; keySent: boolean } } {
  const baseURL = cfg.base_url ?? OPENAI_DEFAULT_BASE_URL;
  const keyVar = cfg.api_key_env ?? OPENAI_DEFAULT_KEY_ENV;
  const env = opts.env ?? process.env;
  let client: { sdk: OpenAI; keySent: boolean } | undefined;
  function getClient(): { sdk: OpenAI; keySent: boolean } {
    if (client) return client;
    let apiKey = env[keyVar];
    const keySent = !!apiKey;
    if (!apiKey) {
      if (!isLoopbackUrl(baseURL)) {
        throw new AirlockError("provider_auth", `No API key for the ${providerName} provider at ${baseURL}: the environment variable ${keyVar} is unset (or empty). Set it, or name the variable that holds the key with provider.api_key_env.`, {
          key_env: keyVar,
        });
      }
      apiKey = LOOPBACK_PLACEHOLDER_KEY;
    }
    // `fetch`: the first chat-completions request may be adopted from `airlock run`'s early request (early.ts)
    client = { sdk: new OpenAI({ apiKey, baseURL, organization: null, project: null, maxRetries: 0, timeout: cfg.timeout_s * 1000, logLevel: "off", defaultHeaders: { "User-Agent": OPENAI_USER_AGENT }, ...(providerName === "openai" ? { fetch: earlyAwareFetch } : {}) }), keySent };
    return client;
  }
  return { baseURL, keyVar, getClient };
}

/**
 * Reads a chat-completions event stream (SSE) into `asm`, calling `onRead` on every network read (the idle
 * timer). Comments (`: OPENROUTER PROCESSING`), blank data and CRLF framing are skipped by the SSE parser;
 * `data: [DONE]` marks the stream done and stops reading; an `event: error` event or an error object is
 * thrown by the assembler as a mid-stream `provider_error`.
 * Returns how many SSE events arrived and the first 256 characters of the body (to name what came instead).
 * @throws SyntaxError when a data payload is not JSON (mapped to a malformed-stream `provider_error`).
 */
export async function readChatStream(body: ReadableStream<Uint8Array> | null, asm: ChunkAssembler, onRead?: () => void): Promise<{ events: number; head: string }> {
  const stats = { events: 0, head: "" };
  if (!body) return stats;
  const events: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (ev) => void events.push(ev) });
  const decoder = new TextDecoder();
  const reader = body.getReader();
  const drain = (): boolean => {
    stats.events += events.length;
    for (let i = 0; i < events.length; i++) {
      const ev = events[i]!;
      const data = ev.data.trim();
      if (data === "[DONE]") {
        asm.done = true;
        events.length = 0;
        return true;
      }
      if (data === "") continue;
      const chunk = JSON.parse(data) as Record<string, unknown>;
      if (ev.event === "error" && !("error" in chunk)) asm.push({ error: chunk });
      else asm.push(chunk);
    }
    events.length = 0;
    return false;
  };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      onRead?.();
      const text = decoder.decode(value, { stream: true });
      if (stats.head.length < 256) stats.head += text.slice(0, 256 - stats.head.length);
      parser.feed(text);
      if (drain()) return stats;
    }
    parser.feed(decoder.decode());
    parser.reset({ consume: true });
    drain();
    return stats;
  } finally {
    reader.cancel().catch(() => {});
  }
}

/** A whole (non-streamed) `chat.completion` → one chunk the assembler reads: its message as the delta. */
function completionAsChunk(body: unknown): Record<string, unknown> {
  const b = (body ?? {}) as Record<string, any>;
  if (b.error || b.object === "error") return b;
  const choice = Array.isArray(b.choices) ? b.choices[0] : undefined;
  return { usage: b.usage, choices: choice ? [{ index: 0, delta: choice.message ?? {}, finish_reason: choice.finish_reason ?? "stop" }] : [] };
}

/**
 * SDK / network error → AirlockError. 401/403 → `provider_auth` (never retried; when no key was sent because
 * `keyVar` is unset, it says so); 429 → `provider_rate_limit` (retried unless `insufficient_quota`);
 * 408/409/5xx and connection failures → retryable `provider_error`; an HTML page (a proxy, a captive portal)
 * → `provider_error` "HTML page from <endpoint>", never retried; a 404 from a `base_url` without `/v1` →
 * `provider_error` suggesting `/v1`; an error object inside the stream → retryable `provider_error`
 * keeping the text so far; anything else → `provider_error`.
 */
export function mapOpenAIError(
  e: unknown,
  baseURL: string,
  keyVar: string,
  partialText: string,
  o: { keySent?: boolean; endpoint?: string } = {},
): AirlockError {
  if (e instanceof AirlockError) return e;
  const endpoint = o.endpoint ?? `${baseURL.replace(/\/+$/, "")}/chat/completions`;
  if (e instanceof OpenAI.APIConnectionError) return connectionError(baseURL, e.message, partialText);
  if (e instanceof OpenAI.APIError) {
    const body = (e.error ?? {}) as Record<string, any>;
    const detail = String(body.message ?? e.message);
    const extra = { status: e.status ?? null, type: e.type ?? null, provider_code: e.code ?? null, request_id: e.requestID ?? null, partial_text: partialText };
    if (e.status === undefined) {
      return new AirlockError("provider_error", `The model server reported an error mid-stream: ${detail}. Retry the turn; if it keeps failing, check the server.`, { ...extra, retryable: true });
    }
    if (e.error === undefined && isHtmlAnswer(e.headers?.get("content-type") ?? "", e.message)) return htmlPageError(endpoint, e.status, baseURL, extra);
    if ((e.status === 401 || e.status === 403) && o.keySent === false) {
      return new AirlockError(
        "provider_auth",
        `The model server at ${baseURL} wants an API key (HTTP ${e.status}: ${detail}), but the environment variable ${keyVar} is unset, so none was sent. Set ${keyVar}, or name the variable that holds the key with provider.api_key_env.`,
        { ...extra, retryable: false, key_env: keyVar },
      );
    }
    if (e.status === 404 && !hasV1Path(baseURL)) {
      return new AirlockError(
        "provider_error",
        `The model server answered HTTP 404 for ${endpoint} (${detail}): provider.base_url ${baseURL} does not end in /v1, and OpenAI-compatible servers (Ollama, vLLM, llama.cpp, LM Studio) serve the API under /v1. Try provider.base_url: ${suggestV1(baseURL)} (if the path is right for this server, check provider.model).`,
        { ...extra, retryable: false },
      );
    }
    if (e.status === 429 && (e.code === "insufficient_quota" || e.type === "insufficient_quota")) {
      return new AirlockError("provider_rate_limit", `The account behind ${keyVar} has no quota left (HTTP 429 insufficient_quota: ${detail}). Check the plan and billing; retrying will not help.`, { ...extra, retryable: false });
    }
    const rejectHint = e.status === 404 ? `Check provider.model (the server may not have that model) and provider.base_url.` : "Check provider.model and the server's tool support.";
    return httpStatusError({ status: e.status, detail, baseURL, keyVar, headers: e.headers, extra, rejectHint });
  }
  if (e instanceof SyntaxError) {
    return malformedStream(baseURL, e.message, partialText, "Check that provider.base_url points at an OpenAI-compatible /v1 endpoint.");
  }
  return otherError(baseURL, e, partialText);
}

/** True when the URL's path ends in a `/v1` segment (`…/v1`, `…/api/v1/`). */
function hasV1Path(url: string): boolean {
  try {
    return /\/v1\/?$/.test(new URL(url).pathname);
  } catch {
    return false;
  }
}

/** `http://h:11434` → `http://h:11434/v1`. */
function suggestV1(url: string): string {
  return `${url.replace(/\/+$/, "")}/v1`;
}

