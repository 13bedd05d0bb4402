/**
 * @module agent/providers/openai-request
 * The bytes of a Chat Completions request, built without the `openai` SDK and without zod: the body
 * (`chatCompletionsBody`: model, messages from the stored history, tools, streaming with usage) and the URL the
 * SDK posts it to (`chatCompletionsUrl`). The adapter (`openai.ts`) hands this body to the SDK, and `airlock run`'s
 * early request (`cli/early-request.ts`) sends the same body itself before the runtime is up: both call these
 * functions, so the two bodies are the same bytes for the same input (SPEC §2, "the early request").
 */
import { assertNever } from "../../errors.ts";
import type { Message } from "../../session/types.ts";
import type { ToolSpec } from "../../tool/tool.ts";
import type { OpenAIProviderState } from "./openai-assemble.ts";

/** What a message must hold for {@link toOpenAIMessages}: a stored `Message`, or just its role and content (the early request's user message). */
export type ChatHistoryMessage = Pick<Message, "role" | "content"> & Partial<Pick<Message, "tool_calls" | "tool_call_id" | "provider_state">>;

/** What one chat-completions call sends (see {@link chatCompletionsBody}). */
export interface ChatCompletionsInput {
  /** The model name sent (`req.model ?? provider.model ?? OPENAI_DEFAULT_MODEL`). */
  model: string;
  /** The system prompt, sent as the first message when non-empty. */
  system: string | undefined;
  messages: ChatHistoryMessage[];
  tools: ToolSpec[];
  /** DeepSeek's `reasoning_content` sent back ({@link toOpenAIMessages}). */
  replayReasoning: boolean;
}

/**
 * The JSON body of a streamed `POST /chat/completions`, keys in the order sent: `model`, `messages`,
 * `tools` (only when there is at least one), `stream: true`, `stream_options: {include_usage: true}`.
 * The SDK serialises it with `JSON.stringify`, as the early request does.
 */
export function chatCompletionsBody(input: ChatCompletionsInput): Record<string, unknown> {
  return {
    model: input.model,
    messages: toOpenAIMessages(input.system, input.messages, { replayReasoning: input.replayReasoning }),
    ...(input.tools.length > 0 ? { tools: toOpenAITools(input.tools) } : {}),
    stream: true,
    stream_options: { include_usage: true },
  };
}

/**
 * The URL the `openai` SDK (v6 `buildURL`) posts chat completions to for `baseURL`: `baseURL + "/chat/completions"`,
 * one slash dropped when `baseURL` ends in `/` (so `…/v1/` and `…/v1` give the same URL), normalised by `URL`.
 * @throws TypeError when the result is not a URL.
 */
export function chatCompletionsUrl(baseURL: string): string {
  const path = "/chat/completions";
  return new URL(baseURL + (baseURL.endsWith("/") ? path.slice(1) : path)).toString();
}

/**
 * Whether this config's server gets DeepSeek's `reasoning_content` back: `provider.replay_reasoning_content`
 * when set, else true only for a `base_url` on `deepseek.com` (api.deepseek.com or a subdomain). Any other
 * server never receives it (OpenAI rejects unknown message fields; DeepSeek's own older `deepseek-reasoner`
 * docs say the field in input is a 400 there too, so a proxy must opt in).
 */
export function replaysReasoningContent(cfg: { base_url?: string | undefined; replay_reasoning_content?: boolean | undefined }): boolean {
  if (cfg.replay_reasoning_content !== undefined) return cfg.replay_reasoning_content;
  if (!cfg.base_url) return false;
  try {
    const host = new URL(cfg.base_url).hostname.toLowerCase();
    return host === "deepseek.com" || host.endsWith(".deepseek.com");
  } catch {
    return false;
  }
}

/** Tool specs → `tools` of a chat-completions request. */
export function toOpenAITools(tools: ToolSpec[]) {
  return tools.map((t) => ({ type: "function" as const, function: { name: t.name, description: t.description, parameters: t.parameters } }));
}

/**
 * Stored history → chat-completions `messages`: the system prompt first; assistant messages with
 * `tool_calls` whose `arguments` are JSON **strings** (openclaw#97834: some servers reject objects);
 * one `role: "tool"` message per result, matched by `tool_call_id`.
 *
 * With `replayReasoning` (a DeepSeek-like server, {@link replaysReasoningContent}), DeepSeek's rule for
 * thinking mode is followed (api-docs.deepseek.com/guides/thinking_mode, "Tool Calls"): between two user
 * messages, when the model made tool calls, every assistant message there carries its `reasoning_content`
 * back, in this and all later requests (omitting it is a 400, "The reasoning_content in the thinking mode
 * must be passed back to the API"); a stretch without tool calls sends none (the API ignores it there, and
 * the older `deepseek-reasoner` refused it). A tool-calling message with no stored reasoning (another
 * provider's, thinking off) sends `""`, which the API accepts where it asks for the field. Only
 * `provider_state` stored by this provider (`provider: "openai"`) is read; another provider's is ignored.
 */
export function toOpenAIMessages(system: string | undefined, messages: ChatHistoryMessage[], o: { replayReasoning?: boolean } = {}): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  if (system) out.push({ role: "system", content: system });
  const withReasoning = o.replayReasoning ? toolCallingStretches(messages) : new Set<number>();
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    const reasoning = withReasoning.has(i) ? { reasoning_content: ownReasoning(m) ?? "" } : {};
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
          out.push({ role: "assistant", content: m.content, ...reasoning });
        } else {
          out.push({
            role: "assistant",
            content: m.content ? m.content : null,
            ...reasoning,
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

/** Indexes of the assistant messages in a stretch between user messages that holds a tool call. */
function toolCallingStretches(messages: ChatHistoryMessage[]): Set<number> {
  const out = new Set<number>();
  let stretch: number[] = [];
  let calls = false;
  const close = () => {
    if (calls) for (const i of stretch) out.add(i);
    stretch = [];
    calls = false;
  };
  messages.forEach((m, i) => {
    if (m.role === "user") return close();
    if (m.role !== "assistant") return;
    stretch.push(i);
    if ((m.tool_calls?.length ?? 0) > 0) calls = true;
  });
  close();
  return out;
}

/** The reasoning this provider stored on an assistant message, or undefined (none, or another provider's). */
function ownReasoning(m: ChatHistoryMessage): string | undefined {
  if (m.provider_state?.provider !== "openai") return undefined;
  const data = m.provider_state.data as Partial<OpenAIProviderState> | null;
  return data && typeof data.reasoning_content === "string" ? data.reasoning_content : undefined;
}
