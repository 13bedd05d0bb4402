/**
 * @module agent/providers/anthropic.test
 * The Anthropic provider against a real local Messages-API server (test/fixtures/fake-anthropic.ts):
 * checklist items 23–25 of docs research `provider-streams.md` §4, HTTP errors, and replay of tool results.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { ProviderConfig } from "../../config/schema.ts";
import { AirlockError } from "../../errors.ts";
import type { Message } from "../../session/types.ts";
import { anthropicMessage, ping, startFakeAnthropic, type AnthropicReply, type FakeAnthropic } from "../../../test/fixtures/fake-anthropic.ts";
import { createAnthropicProvider } from "./anthropic.ts";
import type { ModelRequest } from "./provider.ts";
import { msg } from "../../../test/fixtures/messages.ts";

const servers: FakeAnthropic[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

function serve(r: (body: any, n: number) => AnthropicReply): FakeAnthropic {
  const s = startFakeAnthropic(r);
  servers.push(s);
  return s;
}

function providerFor(url: string, extra: Record<string, unknown> = {}, env: Record<string, string | undefined> = { ANTHROPIC_API_KEY: "sk-ant-test" }) {
  return createAnthropicProvider(ProviderConfig.parse({ name: "anthropic", base_url: url, model: "claude-test", ...extra }), {
    configDir: ".",
    env,
    retry: { baseDelayMs: 1, maxDelayMs: 5 },
  });
}

function request(extra: Partial<ModelRequest> = {}): ModelRequest {
  return {
    session: { id: "ses_1", parent_session_id: null, spawn_index: null },
    messages: [msg("user", "hi")],
    tools: [{ name: "lookup", description: "look up", parameters: { type: "object", properties: { q: { type: "string" } } } }],
    signal: new AbortController().signal,
    ...extra,
  };
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

describe("anthropic provider (checklist 23–25)", () => {
  test("23. text block, tool_use with empty first partial_json and a ping between deltas → text + one call, usage from message_delta", async () => {
    const events = anthropicMessage([{ text: "Let me look." }, { tool_use: { id: "toolu_1", name: "lookup", input: { q: "weather", n: 2 } } }], {
      input_tokens: 42,
      output_tokens: 17,
    });
    // a ping in the middle of the tool block's deltas
    const firstJson = events.findIndex((e) => "data" in e && (e.data as any).delta?.type === "input_json_delta");
    events.splice(firstJson + 2, 0, ping);
    const fake = serve(() => events);
    const deltas: string[] = [];
    const turn = await providerFor(fake.url).complete(request({ system: "sys", onDelta: (t) => deltas.push(t) }));
    expect(turn).toEqual({
      text: "Let me look.",
      tool_calls: [{ id: "toolu_1", name: "lookup", arguments: { q: "weather", n: 2 } }],
      stop_reason: "tool_calls",
      truncated: false,
      usage: { input_tokens: 42, output_tokens: 17 },
    });
    expect(deltas.join("")).toBe("Let me look.");
    expect(fake.requests[0]).toMatchObject({
      model: "claude-test",
      stream: true,
      system: [{ type: "text", text: "sys", cache_control: { type: "ephemeral" } }],
      messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }],
      tools: [{ name: "lookup", description: "look up", input_schema: { type: "object" }, cache_control: { type: "ephemeral" } }],
    });
    // the key from ANTHROPIC_API_KEY reaches the server (this SDK version sends it as a Bearer token)
    expect(fake.headers[0]!.get("x-api-key") ?? fake.headers[0]!.get("authorization")).toContain("sk-ant-test");
  });

  test("24. two tool_use blocks and an unknown event type → two calls, the unknown event ignored", async () => {
    const events = anthropicMessage([
      { tool_use: { id: "toolu_a", name: "lookup", input: { q: "a" } } },
      { tool_use: { id: "toolu_b", name: "fetch", input: {} } },
    ]);
    events.splice(3, 0, { event: "brand_new_event", data: { type: "brand_new_event", whatever: [1, 2] } });
    const fake = serve(() => events);
    const turn = await providerFor(fake.url).complete(request());
    expect(turn).toEqual({
      text: "",
      tool_calls: [
        { id: "toolu_a", name: "lookup", arguments: { q: "a" } },
        { id: "toolu_b", name: "fetch", arguments: {} },
      ],
      stop_reason: "tool_calls",
      truncated: false,
      usage: { input_tokens: 10, output_tokens: 20 },
    });
  });

  test("25a. event: error overloaded_error after text → retryable provider_error keeping the text", async () => {
    const start = anthropicMessage([{ text: "partial" }]).slice(0, 3);
    const fake = serve(() => ({ sse: [...start, { event: "error", data: { type: "error", error: { type: "overloaded_error", message: "Overloaded" } } }] }));
    const err = await failure(providerFor(fake.url).complete(request({ onDelta: () => {} })));
    expect(err.code).toBe("provider_error");
    expect(err.message).toContain("overloaded");
    expect(err.details).toMatchObject({ retryable: true, type: "overloaded_error", partial_text: "par" });
    expect(fake.requests.length).toBe(1);
  });

  test("25b. event: error overloaded_error before any output is retried", async () => {
    const fake = serve((_b, n) =>
      n === 0 ? { sse: [{ event: "error", data: { type: "error", error: { type: "overloaded_error", message: "Overloaded" } } }] } : anthropicMessage([{ text: "ok now" }]),
    );
    const turn = await providerFor(fake.url).complete(request());
    expect(turn).toEqual({ text: "ok now", tool_calls: [], stop_reason: "end_turn", truncated: false, usage: { input_tokens: 10, output_tokens: 20 } });
    expect(fake.requests.length).toBe(2);
  });

  test("25c. results go back as one user message with a tool_result per tool_use, is_error for failures", async () => {
    const fake = serve(() => anthropicMessage([{ text: "done" }]));
    await providerFor(fake.url).complete(
      request({
        messages: [
          msg("user", "do both"),
          msg("assistant", "On it.", {
            tool_calls: [
              { id: "toolu_a", name: "lookup", arguments: { q: "a" } },
              { id: "toolu_b", name: "fetch", arguments: {}, invalid: "{bad" },
            ],
          }),
          msg("tool", "result a", { tool_call_id: "toolu_a", name: "lookup" }),
          msg("tool", '{"code":"invalid_arguments"}', { tool_call_id: "toolu_b", name: "fetch", is_error: true }),
          msg("user", "and then?"),
        ],
      }),
    );
    expect(fake.requests[0].messages).toEqual([
      { role: "user", content: [{ type: "text", text: "do both" }] },
      {
        role: "assistant",
        content: [
          { type: "text", text: "On it." },
          { type: "tool_use", id: "toolu_a", name: "lookup", input: { q: "a" } },
          { type: "tool_use", id: "toolu_b", name: "fetch", input: {} },
        ],
      },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "toolu_a", content: "result a" },
          { type: "tool_result", tool_use_id: "toolu_b", content: '{"code":"invalid_arguments"}', is_error: true },
          { type: "text", text: "and then?" },
        ],
      },
    ]);
  });
});

describe("anthropic provider: errors and edges", () => {
  test("HTTP 401 → provider_auth naming the key variable, not retried", async () => {
    const fake = serve(() => ({ status: 401, body: { type: "error", error: { type: "authentication_error", message: "invalid x-api-key" } } }));
    const err = await failure(providerFor(fake.url).complete(request()));
    expect(err.code).toBe("provider_auth");
    expect(err.message).toContain("ANTHROPIC_API_KEY");
    expect(fake.requests.length).toBe(1);
  });

  test("HTTP 529 overloaded then 429 → retried until success", async () => {
    const fake = serve((_b, n) =>
      n === 0
        ? { status: 529, body: { type: "error", error: { type: "overloaded_error", message: "Overloaded" } } }
        : n === 1
          ? { status: 429, body: { type: "error", error: { type: "rate_limit_error", message: "slow down" } }, headers: { "retry-after": "0" } }
          : anthropicMessage([{ text: "third" }]),
    );
    const turn = await providerFor(fake.url).complete(request());
    expect(turn.text).toBe("third");
    expect(fake.requests.length).toBe(3);
  });

  test("HTTP 429 on every attempt → provider_rate_limit after max_retries", async () => {
    const fake = serve(() => ({ status: 429, body: { type: "error", error: { type: "rate_limit_error", message: "slow down" } } }));
    const err = await failure(providerFor(fake.url, { max_retries: 1 }).complete(request()));
    expect(err.code).toBe("provider_rate_limit");
    expect(fake.requests.length).toBe(2);
  });

  test("max_tokens inside a tool_use block → truncated, call flagged invalid", async () => {
    const all = anthropicMessage([{ tool_use: { id: "toolu_t", name: "lookup", input: { q: "long" } } }], { stop_reason: "max_tokens" });
    const fake = serve(() => all.filter((e) => !("data" in e && (e.data as any).type === "content_block_stop")));
    const turn = await providerFor(fake.url).complete(request());
    expect(turn).toEqual({
      text: "",
      tool_calls: [{ id: "toolu_t", name: "lookup", arguments: {}, invalid: '{"q":"long"}' }],
      stop_reason: "length",
      truncated: true,
      usage: { input_tokens: 10, output_tokens: 20 },
    });
  });

  test("stream cut before message_stop → provider_error", async () => {
    const fake = serve(() => anthropicMessage([{ text: "cut" }]).slice(0, 4));
    const err = await failure(providerFor(fake.url, { max_retries: 0 }).complete(request()));
    expect(err.code).toBe("provider_error");
    expect(err.message).toContain("ended before message_stop");
  });

  test("missing key for the real API → provider_auth; abort → cancelled", async () => {
    const p = createAnthropicProvider(ProviderConfig.parse({ name: "anthropic" }), { configDir: ".", env: {} });
    const err = await failure(p.complete(request()));
    expect(err.code).toBe("provider_auth");
    expect(err.message).toContain("set the environment variable ANTHROPIC_API_KEY");

    const fake = serve(() => ({ sse: [...anthropicMessage([{ text: "hello" }]).slice(0, 3), { hang: true }] }));
    const ac = new AbortController();
    const e2 = await failure(providerFor(fake.url).complete(request({ signal: ac.signal, onDelta: () => ac.abort() })));
    expect(e2.code).toBe("cancelled");
  });
});
