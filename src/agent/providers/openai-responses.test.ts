/**
 * @module agent/providers/openai-responses.test
 * The openai-responses provider against a real local Responses server (test/fixtures/fake-openai-responses.ts)
 * that replays our fixtures (test/fixtures/provider-streams/openai-responses/, each naming the recorded
 * stream it reproduces) over real HTTP/SSE and refuses, with the real API's 400s, input that breaks
 * the stateless rules: calls and outputs unpaired, reasoning items not given back, item ids sent.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { ProviderConfig } from "../../config/schema.ts";
import { AirlockError } from "../../errors.ts";
import type { Message } from "../../session/types.ts";
import { fixture, responsesInputError, startFakeResponses, type FakeResponses, type ResponsesResponder } from "../../../test/fixtures/fake-openai-responses.ts";
import { createProvider } from "./index.ts";
import { toResponsesInput } from "./openai-responses.ts";
import type { ModelRequest, ModelTurn } from "./provider.ts";
import { msg } from "../../../test/fixtures/messages.ts";

const servers: FakeResponses[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

function serve(r: ResponsesResponder): FakeResponses {
  const s = startFakeResponses(r);
  servers.push(s);
  return s;
}

function providerFor(url: string, extra: Record<string, unknown> = {}) {
  return createProvider(ProviderConfig.parse({ name: "openai-responses", base_url: url, model: "gpt-fake-reasoner", ...extra }), {
    configDir: ".",
    env: {},
    retry: { baseDelayMs: 1, maxDelayMs: 5 },
  });
}

const TOOLS = [{ name: "lookup", description: "look up", parameters: { type: "object", properties: { q: { type: "string" }, limit: { type: "number" } } } }];

function request(messages: Message[], extra: Partial<ModelRequest> = {}): ModelRequest {
  return { session: { id: "ses_1", parent_session_id: null, spawn_index: null }, system: "be brief", messages, tools: TOOLS, signal: new AbortController().signal, ...extra };
}

/** What the loop stores for a model turn (loop.ts): the assistant message with its calls and provider_state. */
function assistantOf(turn: ModelTurn): Message {
  return msg("assistant", turn.text, { ...(turn.tool_calls.length ? { tool_calls: turn.tool_calls } : {}), ...(turn.provider_state ? { provider_state: turn.provider_state } : {}) });
}

async function failure(p: Promise<unknown>): Promise<AirlockError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof AirlockError) return e;
    throw e;
  }
  throw new Error("expected the call to fail");
}

const REASONING_1 = {
  id: "rs_loop_1",
  type: "reasoning",
  encrypted_content: "enc:loop-1:final:Zm9yIHRlc3RzIG9ubHk=",
  summary: [{ type: "summary_text", text: "**Looking it up**\n\nI will call lookup for the weather." }],
};

describe("openai-responses provider: a multi-step tool loop with reasoning replay", () => {
  test("three steps: reasoning + call, call, answer; reasoning given back unchanged, every call answered", async () => {
    const fake = serve((_body, n) => ({ sse: fixture(`reasoning-tool-loop.${n + 1}.sse`) }));
    const p = providerFor(fake.url);
    const deltas: string[] = [];
    const history: Message[] = [msg("user", "weather in Oslo?")];

    const t1 = await p.complete(request(history));
    expect(t1).toEqual({
      text: "",
      tool_calls: [{ id: "call_loop_1", name: "lookup", arguments: { q: 'weather in "Oslo"', limit: 2 } }],
      stop_reason: "tool_calls",
      truncated: false,
      provider_state: {
        provider: "openai-responses",
        data: { items: [REASONING_1, { type: "function_call", call_id: "call_loop_1", name: "lookup", arguments: '{"q":"weather in \\"Oslo\\"","limit":2}' }] },
      },
      usage: { input_tokens: 134, output_tokens: 28, cached_input_tokens: 0, reasoning_tokens: 16 },
    });
    // the request: stateless, streamed, instructions, flat function tools
    expect(fake.requests[0]).toEqual({
      model: "gpt-fake-reasoner",
      instructions: "be brief",
      input: [{ type: "message", role: "user", content: [{ type: "input_text", text: "weather in Oslo?" }] }],
      tools: [{ type: "function", name: "lookup", description: "look up", parameters: TOOLS[0]!.parameters, strict: false }],
      store: false,
      include: ["reasoning.encrypted_content"],
      stream: true,
    });

    history.push(assistantOf(t1), msg("tool", "4 °C", { tool_call_id: "call_loop_1", name: "lookup" }));
    const t2 = await p.complete(request(history));
    expect(t2.tool_calls).toEqual([{ id: "call_loop_2", name: "lookup", arguments: { q: "forecast Oslo" } }]);
    expect(t2.provider_state).toBeUndefined(); // no reasoning, no phase: nothing to give back
    const { id: _id, ...reasoningSent } = REASONING_1;
    expect(fake.requests[1].input).toEqual([
      { type: "message", role: "user", content: [{ type: "input_text", text: "weather in Oslo?" }] },
      reasoningSent,
      { type: "function_call", call_id: "call_loop_1", name: "lookup", arguments: '{"q":"weather in \\"Oslo\\"","limit":2}' },
      { type: "function_call_output", call_id: "call_loop_1", output: "4 °C" },
    ]);

    history.push(assistantOf(t2), msg("tool", "rain", { tool_call_id: "call_loop_2", name: "lookup" }));
    const t3 = await p.complete(request(history, { onDelta: (d) => deltas.push(d) }));
    expect(t3).toEqual({
      text: "It is 4 °C in Oslo, with rain tomorrow.",
      tool_calls: [],
      stop_reason: "end_turn",
      truncated: false,
      usage: { input_tokens: 299, output_tokens: 12, cached_input_tokens: 0, reasoning_tokens: 0 },
    });
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join("")).toBe(t3.text);
    // the third request still carried step 1's reasoning before its call
    expect(fake.requests[2].input.filter((i: any) => i.type === "reasoning")).toEqual([reasoningSent]);
    expect(fake.rejections).toEqual([]);
  });

  test("the fake refuses, as the real API does, a history that dropped a reasoning item, sent item ids or left a call unpaired", async () => {
    const fake = serve((_body, n) => ({ sse: fixture(`reasoning-tool-loop.${n + 1}.sse`) }));
    const p = providerFor(fake.url, { max_retries: 0 });
    const t1 = await p.complete(request([msg("user", "weather in Oslo?")]));
    const withoutState = { ...assistantOf(t1), provider_state: undefined };
    const e = await failure(p.complete(request([msg("user", "weather in Oslo?"), withoutState, msg("tool", "4 °C", { tool_call_id: "call_loop_1" })])));
    expect(e.code).toBe("provider_error");
    expect(e.message).toContain("without its required 'reasoning' item");
    expect(fake.rejections).toHaveLength(1);
    // the other rules, on bodies airlock would never send
    const base = { store: false, include: ["reasoning.encrypted_content"], stream: true };
    const call = { type: "function_call", call_id: "c1", name: "lookup", arguments: "{}" };
    const out = { type: "function_call_output", call_id: "c1", output: "x" };
    expect(responsesInputError({ ...base, input: [{ ...call, id: "fc_1" }, out] }, new Map())).toContain("Items are not persisted when `store` is set to false");
    expect(responsesInputError({ ...base, input: [out] }, new Map())).toContain("No tool call found for function call output with call_id c1");
    expect(responsesInputError({ ...base, input: [call] }, new Map())).toContain("No tool output found for function call c1");
    expect(responsesInputError({ ...base, input: [{ type: "reasoning", encrypted_content: "e", summary: [] }] }, new Map())).toContain("without its required following item");
    expect(responsesInputError({ ...base, input: [call, out] }, new Map())).toBeNull();
  });

  test("a reasoning item with nothing after it, or without encrypted_content, is left out, null fields dropped; another provider's state is ignored", () => {
    const input = toResponsesInput([
      msg("system", "extra rules"),
      msg("user", "hi"),
      msg("assistant", "", { provider_state: { provider: "openai-responses", data: { items: [REASONING_1] } } }),
      msg("user", "again"),
      msg("assistant", "Done.", { provider_state: { provider: "openai-responses", data: { items: [{ id: "rs_x", type: "reasoning", encrypted_content: null, summary: [] }, { type: "message", content: [{ type: "output_text", text: "Done." }] }] } } }),
      msg("user", "more"),
      msg("assistant", "", {
        tool_calls: [{ id: "call_y", name: "lookup", arguments: {} }],
        provider_state: { provider: "openai-responses", data: { items: [{ id: "rs_y", type: "reasoning", encrypted_content: "enc-y", summary: [], content: [], status: null }, { type: "function_call", call_id: "call_y", name: "lookup", arguments: "" }] } },
      }),
      msg("tool", "y", { tool_call_id: "call_y" }),
      msg("assistant", "ok", { tool_calls: [{ id: "call_z", name: "lookup", arguments: { q: "x" } }], provider_state: { provider: "anthropic", data: [{ type: "thinking", thinking: "…", signature: "sig" }] } }),
      msg("tool", "result", { tool_call_id: "call_z", is_error: true }),
    ]);
    expect(input).toEqual([
      { type: "message", role: "developer", content: [{ type: "input_text", text: "extra rules" }] },
      { type: "message", role: "user", content: [{ type: "input_text", text: "hi" }] },
      { type: "message", role: "user", content: [{ type: "input_text", text: "again" }] },
      { type: "message", role: "assistant", content: [{ type: "output_text", text: "Done." }] },
      { type: "message", role: "user", content: [{ type: "input_text", text: "more" }] },
      { type: "reasoning", encrypted_content: "enc-y", summary: [], content: [] },
      { type: "function_call", call_id: "call_y", name: "lookup", arguments: "{}" },
      { type: "function_call_output", call_id: "call_y", output: "y" },
      { type: "message", role: "assistant", content: [{ type: "output_text", text: "ok" }] },
      { type: "function_call", call_id: "call_z", name: "lookup", arguments: '{"q":"x"}' },
      { type: "function_call_output", call_id: "call_z", output: "result" },
    ]);
  });
});

describe("openai-responses provider: stream shapes", () => {
  async function one(name: string, extra: Record<string, unknown> = {}) {
    const fake = serve(() => ({ sse: fixture(name) }));
    const deltas: string[] = [];
    const turn = await providerFor(fake.url, extra).complete(request([msg("user", "go")], { onDelta: (d) => deltas.push(d) }));
    return { turn, deltas, fake };
  }

  test("two calls in one response, bare `data:` lines, call_id changed at output_item.done, `{}` arguments", async () => {
    const { turn } = await one("parallel-calls.sse");
    expect(turn).toEqual({
      text: "",
      tool_calls: [
        { id: "call_par_a", name: "lookup", arguments: {} },
        { id: "call_par_b", name: "lookup", arguments: { q: "Rome" } },
      ],
      stop_reason: "tool_calls",
      truncated: false,
      usage: { input_tokens: 62, output_tokens: 40, cached_input_tokens: 0, reasoning_tokens: 0 },
    });
  });

  test("item ids rotating on every event (GitHub Copilot): state kept by output_index; phase kept for replay", async () => {
    const { turn, deltas } = await one("id-rotation.sse");
    expect(turn.text).toBe("There are three r's in strawberry.");
    expect(deltas.join("")).toBe(turn.text);
    expect(turn.stop_reason).toBe("end_turn");
    expect(turn.usage).toEqual({ input_tokens: 20, output_tokens: 30, cached_input_tokens: 0, reasoning_tokens: 12 });
    const items = (turn.provider_state!.data as any).items;
    expect(items.map((i: any) => [i.type, i.phase ?? null])).toEqual([
      ["reasoning", null],
      ["message", "final_answer"],
    ]);
    // replayed: the reasoning item has no encrypted_content (left out); the message keeps its phase
    expect(toResponsesInput([assistantOf(turn)])).toEqual([{ type: "message", role: "assistant", content: [{ type: "output_text", text: turn.text }], phase: "final_answer" }]);
  });

  test("commentary and final messages around a hosted-tool item and unknown event/item types; cached and reasoning tokens", async () => {
    const { turn, deltas } = await one("phase-hosted-tool.sse");
    expect(turn.text).toBe("I'll check a source first.\n\nHere is the summary.");
    expect(deltas.join("")).toBe(turn.text);
    expect(turn.tool_calls).toEqual([]);
    expect(turn.usage).toEqual({ input_tokens: 7112, output_tokens: 463, cached_input_tokens: 3072, reasoning_tokens: 64 });
    const items = (turn.provider_state!.data as any).items;
    expect(items.map((i: any) => i.type)).toEqual(["message", "message"]); // web_search_call and future_item not kept
    expect(toResponsesInput([assistantOf(turn)])).toEqual([
      { type: "message", role: "assistant", content: [{ type: "output_text", text: "I'll check a source first." }], phase: "commentary" },
      { type: "message", role: "assistant", content: [{ type: "output_text", text: "Here is the summary." }], phase: "final_answer" },
    ]);
  });

  test("a refusal: its text streamed as the answer, stop_reason content_filter", async () => {
    const { turn, deltas } = await one("refusal.sse");
    expect(turn).toEqual({
      text: "I can't help with that.",
      tool_calls: [],
      stop_reason: "content_filter",
      truncated: false,
      usage: { input_tokens: 30, output_tokens: 8, cached_input_tokens: 0, reasoning_tokens: 0 },
    });
    expect(deltas.join("")).toBe(turn.text);
  });

  test("response.incomplete (max_output_tokens) mid-call: truncated, the call flagged invalid, text kept", async () => {
    const { turn } = await one("incomplete-max-tokens.sse");
    expect(turn).toEqual({
      text: "Hello,",
      tool_calls: [{ id: "call_inc", name: "lookup", arguments: {}, invalid: '{"q":"we' }],
      stop_reason: "length",
      truncated: true,
      usage: { input_tokens: 40, output_tokens: 100, cached_input_tokens: 0, reasoning_tokens: 0 },
    });
  });
});

describe("openai-responses provider: errors", () => {
  test("an `error` event nesting insufficient_quota → provider_rate_limit, not retried", async () => {
    const fake = serve(() => ({ sse: fixture("error-quota.sse") }));
    const e = await failure(providerFor(fake.url).complete(request([msg("user", "go")])));
    expect(e.code).toBe("provider_rate_limit");
    expect(e.message).toContain("You exceeded your current quota");
    expect(e.details.retryable).toBe(false);
    expect(fake.requests).toHaveLength(1);
  });

  test("a flat `error` event with rate_limit_exceeded → provider_rate_limit, retried, then the answer", async () => {
    const fake = serve((_b, n) => ({ sse: fixture(n === 0 ? "failed-rate-limit.sse" : "reasoning-tool-loop.3.sse") }));
    const turn = await providerFor(fake.url, { max_retries: 2 }).complete(request([msg("user", "go")]));
    expect(turn.text).toBe("It is 4 °C in Oslo, with rain tomorrow.");
    expect(fake.requests).toHaveLength(2);
    const fake2 = serve(() => ({ sse: fixture("failed-rate-limit.sse") }));
    const e = await failure(providerFor(fake2.url, { max_retries: 1 }).complete(request([msg("user", "go")])));
    expect(e.code).toBe("provider_rate_limit");
    expect(e.message).toContain("Rate limit reached for gpt-fake-reasoner");
    expect(fake2.requests).toHaveLength(2);
  });

  test("response.failed after text → provider_error with the server's message and the text so far, not retried", async () => {
    const fake = serve(() => ({ sse: fixture("failed-after-text.sse") }));
    const e = await failure(providerFor(fake.url).complete(request([msg("user", "go")])));
    expect(e.code).toBe("provider_error");
    expect(e.message).toContain("The model failed to generate a response.");
    expect(e.details.partial_text).toBe("Partial ans");
    expect(fake.requests).toHaveLength(1); // text already reached the caller
  });

  test("a stream cut before response.completed → a retryable provider_error, not a finished turn", async () => {
    const fake = serve(() => ({ sse: fixture("cut-off.sse") }));
    const e = await failure(providerFor(fake.url, { max_retries: 0 }).complete(request([msg("user", "go")])));
    expect(e.code).toBe("provider_error");
    expect(e.message).toContain("ended before response.completed");
    expect(e.details).toMatchObject({ retryable: true, partial_text: "Half an" });
  });

  test("no key for a remote base_url → provider_auth naming the variable, before any request", async () => {
    const p = createProvider(ProviderConfig.parse({ name: "openai-responses", base_url: "https://api.openai.example/v1" }), { configDir: ".", env: {} });
    const e = await failure(p.complete(request([msg("user", "go")])));
    expect(e.code).toBe("provider_auth");
    expect(e.message).toContain("openai-responses provider");
    expect(e.message).toContain("OPENAI_API_KEY");
  });

  test("a model without reasoning refusing include: reasoning.encrypted_content → asked again without it, and from then on", async () => {
    const fake = startFakeResponses(() => ({ sse: fixture("reasoning-tool-loop.3.sse") }), { encryptedContent: false });
    servers.push(fake);
    const p = providerFor(fake.url, { max_retries: 0, model: "gpt-4.1-mini" });
    expect((await p.complete(request([msg("user", "go")]))).text).toContain("Oslo");
    expect((await p.complete(request([msg("user", "again")]))).text).toContain("Oslo");
    expect(fake.rejections).toEqual(["Encrypted content is not supported with this model."]);
    expect(fake.requests.map((r) => r.include ?? null)).toEqual([["reasoning.encrypted_content"], null, null]);
  });

  test("HTTP errors: 401 → provider_auth, 429 → retried, 404 names the Responses endpoint", async () => {
    const auth = serve(() => ({ status: 401, body: { error: { message: "Incorrect API key provided", type: "invalid_request_error", code: "invalid_api_key" } } }));
    expect((await failure(providerFor(auth.url).complete(request([msg("user", "go")])))).code).toBe("provider_auth");
    expect(auth.requests).toHaveLength(1);
    const limited = serve((_b, n) => (n === 0 ? { status: 429, body: { error: { message: "slow down", type: "requests", code: "rate_limit_exceeded" } }, headers: { "retry-after-ms": "5" } } : { sse: fixture("reasoning-tool-loop.3.sse") }));
    expect((await providerFor(limited.url).complete(request([msg("user", "go")]))).text).toContain("Oslo");
    expect(limited.requests).toHaveLength(2);
    const missing = serve(() => ({ status: 404, body: { error: { message: "Not Found" } } }));
    const e = await failure(providerFor(missing.url).complete(request([msg("user", "go")])));
    expect(e.code).toBe("provider_error");
    expect(e.message).toContain("/responses");
    expect(e.message).toContain("provider.name: openai");
  });
});
