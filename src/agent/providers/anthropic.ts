/**
 * @module agent/providers/anthropic
 * Anthropic Messages (streamed) through the official `@anthropic-ai/sdk` (its retries off; ours in
 * retry.ts). The stream is assembled by anthropic-assemble.ts; here: the request (prompt-cache
 * breakpoints on the system prompt and the last tool, extended thinking when configured), the replay of
 * stored thinking blocks from `provider_state`, and error mapping (`event: error` → retryable
 * `provider_error` keeping the text so far). Tool results go back as one user message of `tool_result`
 * blocks. docs/providers.md ("anthropic") lists the stream shapes and their tests.
 */
import Anthropic from "@anthropic-ai/sdk";
import { AirlockError, assertNever } from "../../errors.ts";
import type { Message } from "../../session/types.ts";
import { AnthropicStreamAssembler, type AnthropicContentBlock } from "./anthropic-assemble.ts";
import { isLoopbackUrl, LOOPBACK_PLACEHOLDER_KEY, type ModelRequest, type ModelTurn, type Provider, type ProviderConfig, type ProviderOptions } from "./provider.ts";
import { connectionError, httpStatusError, idleTimeout, malformedStream, otherError } from "./errors.ts";
import { attemptController, cancelledError, retryingComplete } from "./retry.ts";

import { ANTHROPIC_DEFAULT_BASE_URL, ANTHROPIC_DEFAULT_MODEL } from "./anthropic-defaults.ts";

export { ANTHROPIC_DEFAULT_BASE_URL, ANTHROPIC_DEFAULT_MODEL };

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
    const asm = new AnthropicStreamAssembler((t) => {
      emitted.value = true;
      req.onDelta?.(t);
    });
    try {
      const body = buildAnthropicRequest(cfg, req, opts.maxTokens);
      const stream = await c.messages.create(body as any, { signal: ctl.signal });
      ctl.touch();
      for await (const ev of stream as unknown as AsyncIterable<any>) {
        ctl.touch();
        asm.push(ev);
      }
      if (req.signal.aborted) throw cancelledError();
      if (ctl.timedOut()) throw idleTimeout(cfg.timeout_s, asm.text);
      if (!asm.stopped) {
        throw new AirlockError("provider_error", `The model stream from ${baseURL} ended before message_stop; the connection was probably cut. Retry the turn.`, {
          partial_text: asm.text,
          retryable: true,
        });
      }
      return asm.finish();
    } catch (e) {
      if (req.signal.aborted) throw cancelledError();
      if (ctl.timedOut()) throw idleTimeout(cfg.timeout_s, asm.text);
      throw mapAnthropicError(e, baseURL, keyVar, asm.text, emitted.value);
    } finally {
      ctl.dispose();
    }
  }

  return { name: "anthropic", complete: retryingComplete(cfg.max_retries, opts.retry, attempt) };
}

/**
 * SDK error → AirlockError: 401/403 → `provider_auth`; 429 → retryable `provider_rate_limit`;
 * 408/409/5xx/529 and connection failures → retryable `provider_error`; an `event: error` in the stream
 * (`overloaded_error`, `api_error`) → retryable `provider_error` keeping the text so far; once text
 * reached the caller (`delivered`) the retry loop will not replay it, and the message says so.
 */
export function mapAnthropicError(e: unknown, baseURL: string, keyVar: string, partialText: string, delivered = false): AirlockError {
  if (e instanceof AirlockError) return e;
  if (e instanceof Anthropic.APIConnectionError) return connectionError(baseURL, e.message, partialText);
  if (e instanceof Anthropic.APIError) {
    const detail = e.apiMessage ?? e.message;
    const extra = { status: e.status ?? null, type: e.type ?? null, request_id: e.requestID ?? null, partial_text: partialText };
    if (e.status === undefined) {
      const retryable = e.type === "overloaded_error" || e.type === "api_error" || e.type === "rate_limit_error" || e.type === null;
      const when = delivered ? " after part of the answer had streamed; it was not retried, since a retry would repeat that text" : "";
      return new AirlockError("provider_error", `The model server reported an error mid-stream (${e.type ?? "error"}: ${detail})${when}. Retry the turn${e.type === "overloaded_error" ? " in a moment; the API is overloaded" : ""}.`, {
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
 * An assistant message with this provider's `provider_state` is sent as its stored content blocks,
 * thinking and signatures unchanged and in streamed order (`replayContent`).
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
        const replayed = replayContent(m);
        if (replayed) {
          push("assistant", replayed);
          break;
        }
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

/**
 * The stored content blocks of an assistant message whose `provider_state` is anthropic's
 * (`AnthropicState`), given back unchanged: Anthropic's extended-thinking docs ("Preserving thinking
 * blocks", platform.claude.com/docs/en/build-with-claude/extended-thinking; "Thinking in tool and
 * multi-turn workflows") require the thinking and redacted_thinking blocks of the assistant turn that
 * made the tool calls to come back complete, with their signatures, and the message echoed as received.
 * Null when the message has no such state, or when it no longer matches the message (its tool_use ids,
 * in order, and its text must equal the message's), so an edited message is rebuilt without thinking.
 */
export function replayContent(m: Message): Block_[] | null {
  const st = m.provider_state;
  if (!st || st.provider !== "anthropic") return null;
  const content = (st.data as { content?: unknown } | null)?.content;
  if (!Array.isArray(content) || !content.every(isReplayableBlock)) return null;
  const ids = content.filter((b) => b.type === "tool_use").map((b) => (b as { id: string }).id);
  const callIds = (m.tool_calls ?? []).map((c) => c.id);
  const text = content.map((b) => (b.type === "text" ? b.text : "")).join("");
  if (ids.length !== callIds.length || ids.some((id, i) => id !== callIds[i]) || text !== m.content) return null;
  return content.map((b) => ({ ...b }));
}

function isReplayableBlock(b: unknown): b is AnthropicContentBlock {
  if (!b || typeof b !== "object") return false;
  const o = b as Record<string, unknown>;
  switch (o.type) {
    case "thinking":
      return typeof o.thinking === "string" && typeof o.signature === "string" && o.signature !== "";
    case "redacted_thinking":
      return typeof o.data === "string" && o.data !== "";
    case "text":
      return typeof o.text === "string" && o.text !== "";
    case "tool_use":
      return typeof o.id === "string" && typeof o.name === "string" && typeof o.input === "object" && o.input !== null && !Array.isArray(o.input);
    default:
      return false;
  }
}

/** Anthropic's prompt-cache marker (platform.claude.com/docs/en/build-with-claude/prompt-caching). */
const EPHEMERAL = { type: "ephemeral" } as const;

/**
 * The Messages API request body of one model call (streamed).
 * - Prompt caching (`provider.prompt_caching`, default on): a `cache_control: {type: "ephemeral"}`
 *   breakpoint on the last tool and on the system prompt (then sent as one text block). The API caches
 *   the prefix up to each breakpoint in the order tools → system → messages, at most 4 breakpoints per
 *   request (Anthropic's prompt-caching docs, platform.claude.com/docs/en/build-with-claude/prompt-caching).
 * - Thinking (`provider.thinking_budget_tokens` set): `thinking: {type: "enabled", budget_tokens}` and
 *   `max_tokens` = `maxTokens` (default 8192) + the budget, since the budget must stay below `max_tokens`
 *   (Anthropic's extended-thinking docs). Left out for a call that continues a tool loop whose assistant
 *   message carries no thinking (another provider's, or thinking was off): the API rejects such a request
 *   ("a final assistant message must start with a thinking block"), and one thinking setting holds per
 *   assistant turn.
 */
export function buildAnthropicRequest(cfg: ProviderConfig, req: ModelRequest, maxTokens = 8192): Record<string, unknown> {
  const { system, messages } = toAnthropicMessages(req.system, req.messages);
  const cache = cfg.prompt_caching !== false;
  const tools = req.tools.map((t, i) => ({
    name: t.name,
    description: t.description,
    input_schema: t.parameters,
    ...(cache && i === req.tools.length - 1 ? { cache_control: EPHEMERAL } : {}),
  }));
  const budget = cfg.thinking_budget_tokens;
  const thinking = budget !== undefined && !continuesToolLoopWithoutThinking(messages);
  return {
    model: req.model ?? cfg.model ?? ANTHROPIC_DEFAULT_MODEL,
    max_tokens: thinking ? maxTokens + budget : maxTokens,
    ...(system ? { system: cache ? [{ type: "text", text: system, cache_control: EPHEMERAL }] : system } : {}),
    messages,
    ...(tools.length > 0 ? { tools } : {}),
    ...(thinking ? { thinking: { type: "enabled", budget_tokens: budget } } : {}),
    stream: true,
  };
}

/** True when the request ends with tool results answering an assistant message that does not start with a thinking block. */
function continuesToolLoopWithoutThinking(messages: { role: "user" | "assistant"; content: Block_[] }[]): boolean {
  const last = messages.at(-1);
  const prev = messages.at(-2);
  if (!last || !prev || last.role !== "user" || prev.role !== "assistant") return false;
  if (!last.content.some((b) => b.type === "tool_result")) return false;
  const first = prev.content[0]?.type;
  return first !== "thinking" && first !== "redacted_thinking";
}
