/**
 * @module agent/providers/openai-responses
 * OpenAI's Responses API (`POST {base_url}/responses`, streamed) through the official `openai` SDK:
 * what OpenAI's reasoning models are built for. Stateless (`store: false`): every request carries the
 * whole history as input items, and the model's reasoning items come back with their
 * `encrypted_content` and are given back unchanged, in place, across tool loops. Client, key and retries
 * are shared with the chat-completions adapter (`openai.ts`, `retry.ts`); events are assembled by
 * `openai-responses-assemble.ts`.
 */
import OpenAI from "openai";
import { AirlockError, assertNever } from "../../errors.ts";
import type { Message, ToolCallRequest } from "../../session/types.ts";
import type { ToolSpec } from "../../tool/tool.ts";
import { mapOpenAIError, openAIClient, OPENAI_DEFAULT_MODEL } from "./openai.ts";
import { MESSAGE_SEPARATOR, OPENAI_RESPONSES_PROVIDER, ResponsesAssembler, responsesStreamError, type ResponsesState } from "./openai-responses-assemble.ts";
import type { ModelRequest, ModelTurn, Provider, ProviderConfig, ProviderOptions } from "./provider.ts";
import { idleTimeout } from "./errors.ts";
import { attemptController, cancelledError, retryingComplete } from "./retry.ts";

type Obj = Record<string, any>;

/**
 * Builds the `openai-responses` provider (same key, `base_url` and retry handling as `openai`:
 * {@link openAIClient}). Each model call is one `POST {base_url}/responses` with `stream: true`,
 * `store: false`, `include: ["reasoning.encrypted_content"]` (dropped for a model that refuses it with a
 * 400, {@link refusesEncryptedContent}, and not asked again for that model), the system prompt as `instructions`, the
 * history as input items ({@link toResponsesInput}) and the tools as flat function tools
 * ({@link toResponsesTools}). Request fields: OpenAI API reference "Create a model response"
 * (platform.openai.com/docs/api-reference/responses/create).
 * `complete` throws AirlockError `provider_auth`, `provider_rate_limit`, `provider_error` or `cancelled`.
 */
export function createOpenAIResponsesProvider(cfg: ProviderConfig, opts: ProviderOptions): Provider {
  const { baseURL, keyVar, getClient } = openAIClient(cfg, opts, OPENAI_RESPONSES_PROVIDER);
  const idleMs = cfg.timeout_s * 1000;
  /** Models that refused `include: ["reasoning.encrypted_content"]` (non-reasoning models); asked without it from then on. */
  const noEncryptedContent = new Set<string>();

  async function attempt(req: ModelRequest, emitted: { value: boolean }): Promise<ModelTurn> {
    const c = getClient().sdk;
    const ctl = attemptController(req.signal, idleMs);
    const asm = new ResponsesAssembler((t) => {
      emitted.value = true;
      req.onDelta?.(t);
    });
    try {
      const model = req.model ?? cfg.model ?? OPENAI_DEFAULT_MODEL;
      const body = {
        model,
        ...(req.system ? { instructions: req.system } : {}),
        input: toResponsesInput(req.messages),
        ...(req.tools.length > 0 ? { tools: toResponsesTools(req.tools) } : {}),
        store: false,
        ...(noEncryptedContent.has(model) ? {} : { include: ["reasoning.encrypted_content"] }),
        stream: true as const,
      };
      let stream;
      try {
        stream = await c.responses.create(body as any, { signal: ctl.signal });
      } catch (e) {
        if (!("include" in body) || !refusesEncryptedContent(e)) throw e;
        // a model without reasoning (gpt-4o, gpt-4.1, …) refuses the include; it has no reasoning items to give back
        noEncryptedContent.add(model);
        const { include: _include, ...without } = body;
        stream = await c.responses.create(without as any, { signal: ctl.signal });
      }
      ctl.touch();
      for await (const ev of stream as unknown as AsyncIterable<unknown>) {
        ctl.touch();
        asm.push(ev as Obj);
      }
      if (req.signal.aborted) throw cancelledError();
      if (ctl.timedOut()) throw idleTimeout(cfg.timeout_s, asm.text);
      if (!asm.finished) {
        throw new AirlockError("provider_error", `The model stream from ${baseURL} ended before response.completed; the connection was probably cut. Retry the turn.`, {
          partial_text: asm.text,
          retryable: true,
        });
      }
      return asm.finish();
    } catch (e) {
      if (req.signal.aborted) throw cancelledError();
      if (ctl.timedOut()) throw idleTimeout(cfg.timeout_s, asm.text);
      throw mapResponsesError(e, baseURL, keyVar, asm.text);
    } finally {
      ctl.dispose();
    }
  }

  return { name: OPENAI_RESPONSES_PROVIDER, complete: retryingComplete(cfg.max_retries, opts.retry, attempt) };
}

/**
 * True for the 400 a model without reasoning answers to `include: ["reasoning.encrypted_content"]`:
 * "Encrypted content is not supported with this model." with `param: "include"` (seen for gpt-4o,
 * gpt-4.1-mini and gpt-5-chat: pydantic/pydantic-ai#2865, #3326; miquido/draive#399).
 */
export function refusesEncryptedContent(e: unknown): boolean {
  if (!(e instanceof OpenAI.APIError) || e.status !== 400) return false;
  const body = (e.error ?? {}) as Obj;
  const message = String(body.message ?? e.message ?? "");
  return body.param === "include" || e.param === "include" || /encrypted content is not supported/i.test(message);
}

/**
 * SDK / network error → AirlockError. An `error` event whose data nests an `error` object is thrown by
 * the SDK as an `APIError` without a status (openai-node `core/streaming`); it is mapped like any other
 * error reported inside the stream ({@link responsesStreamError}: `rate_limit_exceeded` →
 * `provider_rate_limit`). HTTP statuses and connection failures map as for chat completions
 * ({@link mapOpenAIError}).
 */
export function mapResponsesError(e: unknown, baseURL: string, keyVar: string, partialText: string): AirlockError {
  if (e instanceof OpenAI.APIError && e.status === undefined && !(e instanceof OpenAI.APIConnectionError)) {
    const body = (e.error ?? {}) as Obj;
    return responsesStreamError({ code: body.code ?? e.code, type: body.type ?? e.type, message: body.message ?? e.message, partialText, what: "error event" });
  }
  const err = mapOpenAIError(e, baseURL, keyVar, partialText);
  if (err.code === "provider_error" && err.details.status === 404) {
    return new AirlockError(err.code, `${err.message} The openai-responses provider needs a server with the Responses API at ${baseURL}/responses; use provider.name: openai for a chat-completions-only server.`, err.details);
  }
  return err;
}

/**
 * Tool specs → Responses `tools`: flat `{type: "function", name, description, parameters, strict: false}`
 * (the Responses API's function tools are not nested under `function` as in chat completions; `strict`
 * is sent false because airlock's schemas have optional properties, which strict mode refuses —
 * OpenAI function-calling guide, "Strict mode").
 */
export function toResponsesTools(tools: ToolSpec[]): Obj[] {
  return tools.map((t) => ({ type: "function", name: t.name, description: t.description, parameters: t.parameters, strict: false }));
}

/**
 * Stored history → Responses `input` items (OpenAI API reference, "Create a model response" › input;
 * function-calling guide):
 * - user → `{type: "message", role: "user", content: [{type: "input_text", text}]}`; a stored system
 *   message → the same with role `developer`;
 * - assistant → its output items in the order the model produced them ({@link replayAssistant}):
 *   `reasoning` items unchanged (with `encrypted_content`), `message` items with `output_text`,
 *   `function_call` items `{call_id, name, arguments}` (arguments the JSON text the model sent);
 * - tool → `{type: "function_call_output", call_id, output}`.
 * Item `id`s are never sent: with `store: false` the server keeps no items, and an id it cannot find is
 * refused ("Item with id … not found. Items are not persisted when `store` is set to false":
 * maximhq/bifrost#5410, vercel/ai#7543); OpenAI's own stateless client omits them too (openai/codex
 * `codex-rs/protocol/src/models.rs`, `skip_serializing` on every item id).
 */
export function toResponsesInput(messages: Message[]): Obj[] {
  const out: Obj[] = [];
  for (const m of messages) {
    switch (m.role) {
      case "system":
        if (m.content) out.push({ type: "message", role: "developer", content: [{ type: "input_text", text: m.content }] });
        break;
      case "user":
        if (m.content) out.push({ type: "message", role: "user", content: [{ type: "input_text", text: m.content }] });
        break;
      case "assistant":
        out.push(...replayAssistant(m));
        break;
      case "tool":
        out.push({ type: "function_call_output", call_id: m.tool_call_id ?? "", output: m.content });
        break;
      default:
        return assertNever(m.role, "message role");
    }
  }
  return out;
}

/**
 * One stored assistant message → its output items. With this provider's own `provider_state` the kept
 * items are replayed in their order: reasoning items unchanged but for `id` and null fields (one without
 * `encrypted_content` is left out); message items as kept
 * when their text is the stored text (else one message with the stored text in the first one's
 * place); function calls from the stored `tool_calls` by `call_id`. Calls the state does not name are
 * appended; a reasoning item with nothing after it is dropped (the API refuses a reasoning item
 * "provided without its required following item", continuedev/continue#8933). Another provider's
 * state is ignored: text first, then the calls.
 */
export function replayAssistant(m: Message): Obj[] {
  const calls = m.tool_calls ?? [];
  const kept = m.provider_state?.provider === OPENAI_RESPONSES_PROVIDER ? readState(m.provider_state.data) : [];
  const byId = new Map(calls.map((c) => [c.id, c]));
  const sent = new Set<string>();
  const keptMessages = kept.filter((i) => i.type === "message");
  const keptTextMatches = keptMessages.length > 0 && keptMessages.map(messageText).join(MESSAGE_SEPARATOR) === m.content;
  const out: Obj[] = [];
  let textPlaced = false;
  for (const it of kept) {
    if (it.type === "reasoning") {
      // without its encrypted_content a reasoning item names server state that store: false never kept (vercel/ai#7543)
      if (typeof it.encrypted_content === "string" && it.encrypted_content) out.push(withoutId(it));
    } else if (it.type === "message") {
      if (keptTextMatches) out.push(assistantMessageItem(it));
      else if (!textPlaced && m.content) out.push(assistantMessageItem({ content: [{ type: "output_text", text: m.content }] }));
      textPlaced = true;
    } else if (it.type === "function_call") {
      const c = byId.get(it.call_id);
      if (!c || sent.has(c.id)) continue;
      sent.add(c.id);
      out.push(functionCallItem(c, it.arguments));
    }
  }
  if (!textPlaced && m.content) {
    const at = out.findIndex((i) => i.type !== "reasoning");
    out.splice(at === -1 ? out.length : at, 0, assistantMessageItem({ content: [{ type: "output_text", text: m.content }] }));
  }
  for (const c of calls) if (!sent.has(c.id)) out.push(functionCallItem(c, undefined));
  // a reasoning item must be followed by the item it led to
  let lastOther = -1;
  out.forEach((i, n) => {
    if (i.type !== "reasoning") lastOther = n;
  });
  return out.filter((i, n) => i.type !== "reasoning" || n < lastOther);
}

function readState(data: unknown): Obj[] {
  const items = (data as Partial<ResponsesState> | null)?.items;
  return Array.isArray(items) ? items.filter((i): i is Obj => !!i && typeof i === "object" && typeof i.type === "string") : [];
}

/** The item without its `id` and without top-level fields that are null (a null `status` is not a valid input value). */
function withoutId(item: Obj): Obj {
  const { id: _id, ...rest } = item;
  return Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== null));
}

function messageText(item: Obj): string {
  const parts = Array.isArray(item.content) ? item.content : [];
  return parts.map((p: Obj) => (p?.type === "output_text" ? p.text : p?.type === "refusal" ? p.refusal : "") ?? "").join("");
}

/** An assistant `message` input item: its `output_text` and `refusal` parts and `phase`, no id or status. */
function assistantMessageItem(item: Obj): Obj {
  const parts = (Array.isArray(item.content) ? item.content : [])
    .map((p: Obj) => (p?.type === "output_text" ? { type: "output_text", text: String(p.text ?? "") } : p?.type === "refusal" ? { type: "refusal", refusal: String(p.refusal ?? "") } : undefined))
    .filter((p: Obj | undefined) => p !== undefined);
  return { type: "message", role: "assistant", content: parts, ...(item.phase != null ? { phase: item.phase } : {}) };
}

/** A `function_call` input item; `arguments` is the text the model sent when kept, else the stored arguments as JSON text. */
function functionCallItem(c: ToolCallRequest, keptArguments: unknown): Obj {
  const args = typeof keptArguments === "string" && keptArguments !== "" ? keptArguments : c.invalid !== undefined ? c.invalid || "{}" : JSON.stringify(c.arguments ?? {});
  return { type: "function_call", call_id: c.id, name: c.name, arguments: args };
}
