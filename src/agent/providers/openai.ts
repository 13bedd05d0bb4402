/**
 * @module agent/providers/openai
 * OpenAI Chat Completions (streamed) through the official `openai` SDK, for api.openai.com and any
 * OpenAI-compatible server (`base_url`: Ollama, vLLM, llama.cpp, OpenRouter, LM Studio, Groq).
 * Chunks are assembled by `openai-assemble.ts`; retries are ours (`retry.ts`).
 */
import OpenAI from "openai";
import { AirlockError, assertNever } from "../../errors.ts";
import type { Message } from "../../session/types.ts";
import type { ToolSpec } from "../../tool/tool.ts";
import { ChunkAssembler } from "./openai-assemble.ts";
import { isLoopbackUrl, LOOPBACK_PLACEHOLDER_KEY, type ModelRequest, type ModelTurn, type Provider, type ProviderConfig, type ProviderOptions } from "./provider.ts";
import { connectionError, httpStatusError, idleTimeout, malformedStream, otherError } from "./errors.ts";
import { attemptController, cancelledError, retryingComplete } from "./retry.ts";

export const OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1";
export const OPENAI_DEFAULT_MODEL = "gpt-4.1-mini";

/**
 * Builds the OpenAI provider. The API key is read at call time from `env[cfg.api_key_env ?? "OPENAI_API_KEY"]`;
 * a loopback `base_url` without a key gets a placeholder (local servers ignore it).
 * `complete` throws `provider_auth` when the key is missing for a remote server.
 */
export function createOpenAIProvider(cfg: ProviderConfig, opts: ProviderOptions): Provider {
  const { baseURL, keyVar, getClient } = openAIClient(cfg, opts, "openai");
  const idleMs = cfg.timeout_s * 1000;

  async function attempt(req: ModelRequest, emitted: { value: boolean }): Promise<ModelTurn> {
    const c = getClient();
    const ctl = attemptController(req.signal, idleMs);
    const asm = new ChunkAssembler((t) => {
      emitted.value = true;
      req.onDelta?.(t);
    });
    try {
      const stream = await c.chat.completions.create(
        {
          model: req.model ?? cfg.model ?? OPENAI_DEFAULT_MODEL,
          messages: toOpenAIMessages(req.system, req.messages) as any,
          ...(req.tools.length > 0 ? { tools: toOpenAITools(req.tools) } : {}),
          stream: true,
          stream_options: { include_usage: true },
        },
        { signal: ctl.signal },
      );
      ctl.touch();
      for await (const chunk of stream) {
        ctl.touch();
        asm.push(chunk as any);
      }
      if (req.signal.aborted) throw cancelledError();
      if (ctl.timedOut()) throw idleTimeout(cfg.timeout_s, asm.text);
      if (!asm.finished) {
        throw new AirlockError("provider_error", `The model stream from ${baseURL} ended before the answer was finished (no finish_reason); the connection was probably cut. Retry the turn.`, {
          partial_text: asm.text,
          retryable: true,
        });
      }
      return asm.finish();
    } catch (e) {
      if (req.signal.aborted) throw cancelledError();
      if (ctl.timedOut()) throw idleTimeout(cfg.timeout_s, asm.text);
      throw mapOpenAIError(e, baseURL, keyVar, asm.text);
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
 * `cfg.timeout_s` in ms. `providerName` names the provider in error messages.
 * `getClient` throws AirlockError `provider_auth` when the key is missing for a remote server.
 */
export function openAIClient(cfg: ProviderConfig, opts: ProviderOptions, providerName: string): { baseURL: string; keyVar: string; getClient: () => OpenAI } {
  const baseURL = cfg.base_url ?? OPENAI_DEFAULT_BASE_URL;
  const keyVar = cfg.api_key_env ?? "OPENAI_API_KEY";
  const env = opts.env ?? process.env;
  let client: OpenAI | undefined;
  function getClient(): OpenAI {
    if (client) return client;
    let apiKey = env[keyVar];
    if (!apiKey) {
      if (!isLoopbackUrl(baseURL)) {
        throw new AirlockError("provider_auth", `No API key for the ${providerName} provider at ${baseURL}: set the environment variable ${keyVar} (or name another one with provider.api_key_env).`);
      }
      apiKey = LOOPBACK_PLACEHOLDER_KEY;
    }
    client = new OpenAI({ apiKey, baseURL, organization: null, project: null, maxRetries: 0, timeout: cfg.timeout_s * 1000, logLevel: "off" });
    return client;
  }
  return { baseURL, keyVar, getClient };
}

/**
 * SDK / network error → AirlockError. 401/403 → `provider_auth` (never retried); 429 → `provider_rate_limit`
 * (retried unless `insufficient_quota`); 408/409/5xx and connection failures → retryable `provider_error`;
 * an error object inside the stream → retryable `provider_error` keeping the text so far; anything else → `provider_error`.
 */
export function mapOpenAIError(e: unknown, baseURL: string, keyVar: string, partialText: string): AirlockError {
  if (e instanceof AirlockError) return e;
  if (e instanceof OpenAI.APIConnectionError) return connectionError(baseURL, e.message, partialText);
  if (e instanceof OpenAI.APIError) {
    const body = (e.error ?? {}) as Record<string, any>;
    const detail = String(body.message ?? e.message);
    const extra = { status: e.status ?? null, type: e.type ?? null, provider_code: e.code ?? null, request_id: e.requestID ?? null, partial_text: partialText };
    if (e.status === undefined) {
      return new AirlockError("provider_error", `The model server reported an error mid-stream: ${detail}. Retry the turn; if it keeps failing, check the server.`, { ...extra, retryable: true });
    }
    if (e.status === 429 && (e.code === "insufficient_quota" || e.type === "insufficient_quota")) {
      return new AirlockError("provider_rate_limit", `The account behind ${keyVar} has no quota left (HTTP 429 insufficient_quota: ${detail}). Check the plan and billing; retrying will not help.`, { ...extra, retryable: false });
    }
    return httpStatusError({ status: e.status, detail, baseURL, keyVar, headers: e.headers, extra, rejectHint: "Check provider.model and the server's tool support." });
  }
  if (e instanceof SyntaxError) {
    return malformedStream(baseURL, e.message, partialText, "Check that provider.base_url points at an OpenAI-compatible /v1 endpoint.");
  }
  return otherError(baseURL, e, partialText);
}

/** Tool specs → `tools` of a chat-completions request. */
export function toOpenAITools(tools: ToolSpec[]) {
  return tools.map((t) => ({ type: "function" as const, function: { name: t.name, description: t.description, parameters: t.parameters } }));
}

/**
 * Stored history → chat-completions `messages`: the system prompt first; assistant messages with
 * `tool_calls` whose `arguments` are JSON **strings** (openclaw#97834: some servers reject objects);
 * one `role: "tool"` message per result, matched by `tool_call_id`.
 */
export function toOpenAIMessages(system: string | undefined, messages: Message[]): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  if (system) out.push({ role: "system", content: system });
  for (const m of messages) {
    switch (m.role) {
      case "system":
        out.push({ role: "system", content: m.content });
        break;
      case "user":
        out.push({ role: "user", content: m.content });
        break;
      case "assistant": {
        const calls = m.tool_calls ?? [];
        if (calls.length === 0) {
          out.push({ role: "assistant", content: m.content });
        } else {
          out.push({
            role: "assistant",
            content: m.content ? m.content : null,
            tool_calls: calls.map((c) => ({
              id: c.id,
              type: "function",
              function: { name: c.name, arguments: c.invalid !== undefined ? c.invalid || "{}" : JSON.stringify(c.arguments ?? {}) },
            })),
          });
        }
        break;
      }
      case "tool":
        out.push({ role: "tool", tool_call_id: m.tool_call_id ?? "", content: m.content });
        break;
      default:
        return assertNever(m.role, "message role");
    }
  }
  return out;
}
