/**
 * @module agent/providers/anthropic
 * Anthropic Messages (streamed) through the official `@anthropic-ai/sdk`: text and tool_use blocks
 * assembled per block index, `ping` and unknown events ignored, `event: error` mapped to a
 * retryable `provider_error`. Tool results go back as one user message of `tool_result` blocks.
 */
import Anthropic from "@anthropic-ai/sdk";
import { AirlockError, assertNever } from "../../errors.ts";
import type { Message, ToolCallRequest } from "../../session/types.ts";
import { parseArguments } from "./openai-assemble.ts";
import { isLoopbackUrl, LOOPBACK_PLACEHOLDER_KEY, type ModelRequest, type ModelTurn, type Provider, type ProviderConfig, type ProviderOptions, type StopReason } from "./provider.ts";
import { connectionError, httpStatusError, idleTimeout, malformedStream, otherError } from "./errors.ts";
import { attemptController, cancelledError, retryingComplete } from "./retry.ts";

export const ANTHROPIC_DEFAULT_BASE_URL = "https://api.anthropic.com";
export const ANTHROPIC_DEFAULT_MODEL = "claude-sonnet-4-5";

interface Block {
  kind: "text" | "tool_use" | "other";
  id: string;
  name: string;
  json: string;
  text: string;
}

/**
 * Builds the Anthropic provider. The key is read at call time from `env[cfg.api_key_env ?? "ANTHROPIC_API_KEY"]`
 * (a loopback `base_url` without a key gets a placeholder). `base_url` is the API root, without `/v1`.
 */
export function createAnthropicProvider(cfg: ProviderConfig, opts: ProviderOptions): Provider {
  const baseURL = cfg.base_url ?? ANTHROPIC_DEFAULT_BASE_URL;
  const keyVar = cfg.api_key_env ?? "ANTHROPIC_API_KEY";
  const env = opts.env ?? process.env;
  const idleMs = cfg.timeout_s * 1000;
  let client: Anthropic | undefined;

  function getClient(): Anthropic {
    if (client) return client;
    let apiKey = env[keyVar];
    if (!apiKey) {
      if (!isLoopbackUrl(baseURL)) {
        throw new AirlockError("provider_auth", `No API key for the anthropic provider at ${baseURL}: set the environment variable ${keyVar} (or name another one with provider.api_key_env).`);
      }
      apiKey = LOOPBACK_PLACEHOLDER_KEY;
    }
    client = new Anthropic({ apiKey, baseURL, maxRetries: 0, timeout: idleMs, logLevel: "off" });
    return client;
  }

  async function attempt(req: ModelRequest, emitted: { value: boolean }): Promise<ModelTurn> {
    const c = getClient();
    const ctl = attemptController(req.signal, idleMs);
    const blocks = new Map<number, Block>();
    let text = "";
    let stop: string | null = null;
    let stopped = false;
    let input: number | undefined;
    let output: number | undefined;
    try {
      const { system, messages } = toAnthropicMessages(req.system, req.messages);
      const stream = await c.messages.create(
        {
          model: req.model ?? cfg.model ?? ANTHROPIC_DEFAULT_MODEL,
          max_tokens: opts.maxTokens ?? 8192,
          ...(system ? { system } : {}),
          messages: messages as any,
          ...(req.tools.length > 0 ? { tools: req.tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters as any })) } : {}),
          stream: true,
        },
        { signal: ctl.signal },
      );
      ctl.touch();
      for await (const ev of stream as AsyncIterable<any>) {
        ctl.touch();
        switch (ev?.type) {
          case "message_start": {
            const u = ev.message?.usage ?? {};
            if (typeof u.input_tokens === "number") input = u.input_tokens + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0);
            if (typeof u.output_tokens === "number") output = u.output_tokens;
            break;
          }
          case "content_block_start": {
            const cb = ev.content_block ?? {};
            const kind = cb.type === "text" ? "text" : cb.type === "tool_use" ? "tool_use" : "other";
            blocks.set(ev.index, { kind, id: cb.id ?? "", name: cb.name ?? "", json: "", text: "" });
            if (kind === "text" && typeof cb.text === "string" && cb.text) {
              blocks.get(ev.index)!.text += cb.text;
              text += cb.text;
              emitted.value = true;
              req.onDelta?.(cb.text);
            }
            break;
          }
          case "content_block_delta": {
            const b = blocks.get(ev.index);
            const d = ev.delta ?? {};
            if (!b) break;
            if (d.type === "text_delta" && typeof d.text === "string" && b.kind === "text") {
              b.text += d.text;
              text += d.text;
              emitted.value = true;
              req.onDelta?.(d.text);
            } else if (d.type === "input_json_delta" && typeof d.partial_json === "string") {
              b.json += d.partial_json;
            }
            break;
          }
          case "message_delta": {
            if (ev.delta?.stop_reason) stop = ev.delta.stop_reason;
            const u = ev.usage ?? {};
            if (typeof u.output_tokens === "number") output = u.output_tokens; // cumulative
            if (typeof u.input_tokens === "number") input = u.input_tokens + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0);
            break;
          }
          case "message_stop":
            stopped = true;
            break;
          default:
            break; // content_block_stop, ping, unknown future events
        }
      }
      if (req.signal.aborted) throw cancelledError();
      if (ctl.timedOut()) throw idleTimeout(cfg.timeout_s, text);
      if (!stopped) {
        throw new AirlockError("provider_error", `The model stream from ${baseURL} ended before message_stop; the connection was probably cut. Retry the turn.`, {
          partial_text: text,
          retryable: true,
        });
      }
      const truncated = stop === "max_tokens";
      const tool_calls: ToolCallRequest[] = [...blocks.entries()]
        .sort(([a], [b]) => a - b)
        .filter(([, b]) => b.kind === "tool_use")
        .map(([, b]) => ({ id: b.id, name: b.name, ...parseArguments(b.json, undefined, truncated) }));
      return {
        text,
        tool_calls,
        stop_reason: mapStop(stop, tool_calls.length > 0),
        truncated,
        usage: input !== undefined && output !== undefined ? { input_tokens: input, output_tokens: output } : undefined,
      };
    } catch (e) {
      if (req.signal.aborted) throw cancelledError();
      if (ctl.timedOut()) throw idleTimeout(cfg.timeout_s, text);
      throw mapAnthropicError(e, baseURL, keyVar, text);
    } finally {
      ctl.dispose();
    }
  }

  return { name: "anthropic", complete: retryingComplete(cfg.max_retries, opts.retry, attempt) };
}

function mapStop(stop: string | null, hasCalls: boolean): StopReason {
  if (hasCalls && stop !== "max_tokens") return "tool_calls";
  switch (stop) {
    case "end_turn":
    case "stop_sequence":
    case "tool_use":
      return "end_turn";
    case "max_tokens":
      return "length";
    case "refusal":
      return "content_filter";
    default:
      return "other";
  }
}

/**
 * SDK error → AirlockError: 401/403 → `provider_auth`; 429 → retryable `provider_rate_limit`;
 * 408/409/5xx/529 and connection failures → retryable `provider_error`; an `event: error` in the stream
 * (`overloaded_error`, `api_error`) → retryable `provider_error` keeping the text so far.
 */
export function mapAnthropicError(e: unknown, baseURL: string, keyVar: string, partialText: string): AirlockError {
  if (e instanceof AirlockError) return e;
  if (e instanceof Anthropic.APIConnectionError) return connectionError(baseURL, e.message, partialText);
  if (e instanceof Anthropic.APIError) {
    const detail = e.apiMessage ?? e.message;
    const extra = { status: e.status ?? null, type: e.type ?? null, request_id: e.requestID ?? null, partial_text: partialText };
    if (e.status === undefined) {
      const retryable = e.type === "overloaded_error" || e.type === "api_error" || e.type === "rate_limit_error" || e.type === null;
      return new AirlockError("provider_error", `The model server reported an error mid-stream (${e.type ?? "error"}: ${detail}). Retry the turn${e.type === "overloaded_error" ? " in a moment; the API is overloaded" : ""}.`, {
        ...extra,
        retryable,
      });
    }
    return httpStatusError({ status: e.status, detail, baseURL, keyVar, headers: e.headers, extra, rejectHint: "Check provider.model and the conversation." });
  }
  if (e instanceof SyntaxError) return malformedStream(baseURL, e.message, partialText);
  return otherError(baseURL, e, partialText);
}

type Block_ = Record<string, unknown>;

/**
 * Stored history → Messages API `system` + `messages`. Assistant messages become text plus `tool_use`
 * blocks (`input` an object; unparsable arguments are sent as `{}`); consecutive `tool` messages become
 * ONE user message of `tool_result` blocks (`is_error: true` for failures), which a following user
 * text joins, so every `tool_use` is answered in the very next user message (openai-agents-python#1797).
 * Empty assistant messages are skipped and same-role neighbours merged (the API wants alternation).
 */
export function toAnthropicMessages(system: string | undefined, messages: Message[]): { system: string; messages: { role: "user" | "assistant"; content: Block_[] }[] } {
  const systems = system ? [system] : [];
  const out: { role: "user" | "assistant"; content: Block_[] }[] = [];
  const push = (role: "user" | "assistant", blocks: Block_[]) => {
    if (blocks.length === 0) return;
    const last = out.at(-1);
    if (last && last.role === role) last.content.push(...blocks);
    else out.push({ role, content: blocks });
  };
  for (const m of messages) {
    switch (m.role) {
      case "system":
        systems.push(m.content);
        break;
      case "user":
        push("user", m.content ? [{ type: "text", text: m.content }] : []);
        break;
      case "assistant": {
        const blocks: Block_[] = m.content ? [{ type: "text", text: m.content }] : [];
        for (const c of m.tool_calls ?? []) {
          const input = c.invalid === undefined && c.arguments && typeof c.arguments === "object" && !Array.isArray(c.arguments) ? c.arguments : {};
          blocks.push({ type: "tool_use", id: c.id, name: c.name, input });
        }
        push("assistant", blocks);
        break;
      }
      case "tool":
        push("user", [{ type: "tool_result", tool_use_id: m.tool_call_id ?? "", content: m.content, ...(m.is_error ? { is_error: true } : {}) }]);
        break;
      default:
        return assertNever(m.role, "message role");
    }
  }
  return { system: systems.join("\n\n"), messages: out };
}
