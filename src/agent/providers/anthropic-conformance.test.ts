/**
 * @module agent/providers/anthropic-conformance.test
 * The Anthropic adapter against recorded stream shapes (test/fixtures/provider-streams/anthropic/*.sse,
 * each naming the recorded stream it reproduces), replayed byte for byte over real HTTP with real SSE
 * framing by test/fixtures/fake-anthropic.ts; thinking replay against a server that enforces the thinking
 * rules; prompt-cache breakpoints and cached-token usage; 529 with Retry-After. docs/providers.md
 * ("anthropic") lists each shape with the test that covers it.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { ProviderConfig } from "../../config/schema.ts";
import { AirlockError } from "../../errors.ts";
import type { Message } from "../../session/types.ts";
import { anthropicFixture, anthropicMessage, anthropicThinkingError, startFakeAnthropic, type AnthropicItem, type AnthropicReply, type FakeAnthropic } from "../../../test/fixtures/fake-anthropic.ts";
import { createAnthropicProvider } from "./anthropic.ts";
import type { ModelRequest, ModelTurn } from "./provider.ts";
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

function providerFor(url: string, extra: Record<string, unknown> = {}, retry = { baseDelayMs: 1, maxDelayMs: 5 }) {
  return createAnthropicProvider(ProviderConfig.parse({ name: "anthropic", base_url: url, model: "claude-test", ...extra }), {
    configDir: ".",
    env: { ANTHROPIC_API_KEY: "sk-ant-test" },
    retry,
  });
}

function request(extra: Partial<ModelRequest> = {}): ModelRequest {
  return {
    session: { id: "ses_1", parent_session_id: null, spawn_index: null },
    messages: [msg("user", "hi")],
    tools: [
      { name: "lookup", description: "look up", parameters: { type: "object", properties: { q: { type: "string" } } } },
      { name: "list_dir", description: "list a folder", parameters: { type: "object", properties: { path: { type: "string" } } } },
    ],
    signal: new AbortController().signal,
    ...extra,
  };
}

/** The assistant message the agent loop stores for a model turn (loop.ts), plus its tool results. */
function stored(turn: ModelTurn, results: Record<string, string> = {}): Message[] {
  const out = [msg("assistant", turn.text, { ...(turn.tool_calls.length ? { tool_calls: turn.tool_calls } : {}), ...(turn.provider_state ? { provider_state: turn.provider_state } : {}) })];
  for (const c of turn.tool_calls) out.push(msg("tool", results[c.id] ?? "ok", { tool_call_id: c.id, name: c.name }));
  return out;
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

/** Re-splits raw SSE items into writes of `size` bytes (UTF-8 characters may be cut in two). */
function rechunk(items: AnthropicItem[], size: number): AnthropicItem[] {
  const bytes = new TextEncoder().encode(items.map((i) => ("raw" in i ? i.raw : "")).join(""));
  const out: AnthropicItem[] = [];
  // raw items are strings; cut on byte boundaries then decode with a streaming decoder so each write is valid text
  const dec = new TextDecoder();
  for (let i = 0; i < bytes.length; i += size) {
    const piece = dec.decode(bytes.subarray(i, i + size), { stream: i + size < bytes.length });
    if (piece) out.push({ raw: piece });
  }
  return out;
}

describe("anthropic conformance: recorded stream shapes", () => {
  test("text then tool_use, input split across many input_json_delta chunks with pings → text + one call, usage incl. cache fields", async () => {
    const fake = serve(() => anthropicFixture("text-then-tool.sse"));
    const deltas: string[] = [];
    const turn = await providerFor(fake.url).complete(request({ onDelta: (t) => deltas.push(t) }));
    expect(turn).toEqual({
      text: "Checking the forecast.",
      tool_calls: [{ id: "toolu_fx_forecast", name: "forecast", arguments: { city: "Lyon", days: 3, units: ["C"] } }],
      stop_reason: "tool_calls",
      truncated: false,
      usage: { input_tokens: 731, output_tokens: 64, cached_input_tokens: 0, cache_write_input_tokens: 0 },
    });
    expect(deltas).toEqual(["Checking the", " forecast."]);
  });

  test("the same bytes cut into 7-byte network writes → the same turn", async () => {
    const fake = serve(() => rechunk(anthropicFixture("text-then-tool.sse"), 7));
    const turn = await providerFor(fake.url).complete(request());
    expect(turn.text).toBe("Checking the forecast.");
    expect(turn.tool_calls).toEqual([{ id: "toolu_fx_forecast", name: "forecast", arguments: { city: "Lyon", days: 3, units: ["C"] } }]);
  });

  test("quoted and escaped JSON in tool input, an escape cut between fragments → parsed exactly", async () => {
    const fake = serve(() => anthropicFixture("quoted-tool-input.sse"));
    const turn = await providerFor(fake.url).complete(request());
    expect(turn.tool_calls).toEqual([
      {
        id: "toolu_fx_write",
        name: "write_note",
        arguments: { path: "C:\\notes\\todo.md", items: [{ text: 'She said "ship it" — then left.\nNext: café ☕', done: false }] },
      },
    ]);
    expect(turn.stop_reason).toBe("tool_calls");
  });

  test("a tool with no arguments (only an empty input_json_delta) → arguments {}, not invalid", async () => {
    const fake = serve(() => anthropicFixture("tool-no-args.sse"));
    const turn = await providerFor(fake.url).complete(request());
    expect(turn.tool_calls).toEqual([{ id: "toolu_fx_now", name: "current_time", arguments: {} }]);
    expect(turn.usage).toEqual({ input_tokens: 250, output_tokens: 31, cached_input_tokens: 0, cache_write_input_tokens: 0 });
  });

  test("several tool_use blocks and an unknown event type → every call, in block order", async () => {
    const fake = serve(() => anthropicFixture("parallel-tools.sse"));
    const turn = await providerFor(fake.url).complete(request());
    expect(turn.text).toBe("Three lookups.");
    expect(turn.tool_calls).toEqual([
      { id: "toolu_fx_a", name: "lookup", arguments: { q: "alpha" } },
      { id: "toolu_fx_b", name: "lookup", arguments: { q: "beta", limit: 5 } },
      { id: "toolu_fx_c", name: "fetch_page", arguments: { url: "https://example.org/?a=1&b=2" } },
    ]);
  });

  test("unknown block types (server_tool_use, web_search_tool_result) and delta types (citations_delta, new ones) are skipped", async () => {
    const fake = serve(() => anthropicFixture("server-tool-citations.sse"));
    const turn = await providerFor(fake.url).complete(request());
    expect(turn).toEqual({
      text: "The latest release is on the page.",
      tool_calls: [],
      stop_reason: "end_turn",
      truncated: false,
      usage: { input_tokens: 1500, output_tokens: 60, cached_input_tokens: 0, cache_write_input_tokens: 0 },
    });
  });

  test("stop_reason variants", async () => {
    const cases: [string, ModelTurn["stop_reason"], boolean][] = [
      ["end_turn", "end_turn", false],
      ["stop_sequence", "end_turn", false],
      ["tool_use", "end_turn", false],
      ["max_tokens", "length", true],
      ["model_context_window_exceeded", "length", true],
      ["refusal", "content_filter", false],
      ["pause_turn", "other", false],
      ["a_reason_added_later", "other", false],
    ];
    for (const [wire, expected, truncated] of cases) {
      const fake = serve(() => anthropicFixture("text-end-turn.sse", { STOP_REASON: wire }));
      const turn = await providerFor(fake.url).complete(request());
      expect({ wire, stop: turn.stop_reason, truncated: turn.truncated, text: turn.text }).toEqual({ wire, stop: expected, truncated, text: "Done here." });
    }
  });

  test("a refusal after part of a tool_use → the text is kept, the unfinished call is dropped, content_filter", async () => {
    const fake = serve(() => anthropicFixture("refusal.sse"));
    const turn = await providerFor(fake.url).complete(request());
    expect(turn).toEqual({
      text: "Sure, running",
      tool_calls: [],
      stop_reason: "content_filter",
      truncated: false,
      usage: { input_tokens: 18, output_tokens: 5, cached_input_tokens: 0, cache_write_input_tokens: 0 },
    });
  });

  test("message_delta usage overrides message_start's; input_tokens sums uncached, cache-read and cache-write tokens", async () => {
    const fake = serve(() => anthropicFixture("usage-cache.sse"));
    const turn = await providerFor(fake.url).complete(request());
    expect(turn.text).toBe("pong");
    expect(turn.usage).toEqual({ input_tokens: 52 + 3000 + 1200, output_tokens: 7, cached_input_tokens: 3000, cache_write_input_tokens: 1200 });
  });

  test("overloaded_error mid-stream before any output → retried, the retry's answer returned", async () => {
    const fake = serve((_b, n) => (n === 0 ? anthropicFixture("overloaded-before-output.sse") : anthropicFixture("text-end-turn.sse", { STOP_REASON: "end_turn" })));
    const turn = await providerFor(fake.url).complete(request());
    expect(turn.text).toBe("Done here.");
    expect(fake.requests.length).toBe(2);
  });

  test("overloaded_error mid-stream after text reached the caller → not retried, a provider_error that says why", async () => {
    const fake = serve(() => anthropicFixture("overloaded-after-text.sse"));
    const deltas: string[] = [];
    const err = await failure(providerFor(fake.url).complete(request({ onDelta: (t) => deltas.push(t) })));
    expect(fake.requests.length).toBe(1);
    expect(err.code).toBe("provider_error");
    expect(err.message).toContain("overloaded_error: Overloaded");
    expect(err.message).toContain("not retried, since a retry would repeat that text");
    expect(err.details).toMatchObject({ type: "overloaded_error", partial_text: "Half an ans" });
    expect(deltas.join("")).toBe("Half an ans");
  });

  test("a stream that ends without message_stop → provider_error; retried when nothing reached the caller", async () => {
    const cut = serve(() => anthropicFixture("no-message-stop.sse"));
    const err = await failure(providerFor(cut.url, { max_retries: 0 }).complete(request()));
    expect(err.code).toBe("provider_error");
    expect(err.message).toContain("ended before message_stop");

    const flaky = serve((_b, n) => (n === 0 ? anthropicFixture("no-message-stop.sse") : anthropicFixture("tool-no-args.sse")));
    const turn = await providerFor(flaky.url, { max_retries: 1 }).complete(request());
    expect(turn.tool_calls.map((c) => c.id)).toEqual(["toolu_fx_now"]);
    expect(flaky.requests.length).toBe(2);
  });
});

describe("anthropic conformance: several message_start events in one stream (vercel/ai#18331)", () => {
  test("message_start repeated for the same message before any content → fine, the later usage counts", async () => {
    const fake = serve(() => anthropicFixture("duplicate-message-start.sse"));
    const turn = await providerFor(fake.url).complete(request());
    expect(turn).toEqual({ text: "fine", tool_calls: [], stop_reason: "end_turn", truncated: false, usage: { input_tokens: 14, output_tokens: 2 } });
  });

  test("a second message spliced in mid-message, nothing delivered yet → a retryable provider_error, retried; nothing of the two merged", async () => {
    const fake = serve((_b, n) => (n === 0 ? anthropicFixture("spliced-message-start.sse") : anthropicFixture("tool-no-args.sse")));
    const turn = await providerFor(fake.url, { thinking_budget_tokens: 1024 }).complete(request());
    expect(turn.tool_calls).toEqual([{ id: "toolu_fx_now", name: "current_time", arguments: {} }]);
    expect(turn.provider_state).toBeUndefined();
    expect(fake.requests.length).toBe(2);

    const always = serve(() => anthropicFixture("spliced-message-start.sse"));
    const err = await failure(providerFor(always.url, { max_retries: 0 }).complete(request()));
    expect(err.code).toBe("provider_error");
    expect(err.message).toContain("held a second message (msg_fx_second after msg_fx_first)");
  });

  test("two whole messages in one stream after text reached the caller → provider_error, not retried", async () => {
    const fake = serve(() => anthropicFixture("sequential-messages.sse"));
    const err = await failure(providerFor(fake.url).complete(request({ onDelta: () => {} })));
    expect(err.code).toBe("provider_error");
    expect(err.details.partial_text).toBe("one");
    expect(fake.requests.length).toBe(1);
  });
});

describe("anthropic thinking: blocks given back unchanged, with signatures", () => {
  test("thinking_delta + signature_delta → provider_state holds the blocks in streamed order; thinking never reaches onDelta", async () => {
    const fake = serve(() => anthropicFixture("thinking-tool.sse"));
    const deltas: string[] = [];
    const turn = await providerFor(fake.url, { thinking_budget_tokens: 2048 }).complete(request({ onDelta: (t) => deltas.push(t) }));
    expect(deltas.join("")).toBe("Listing the folder.");
    expect(turn.tool_calls).toEqual([{ id: "toolu_fx_ls", name: "list_dir", arguments: { path: "." } }]);
    expect(turn.usage).toEqual({ input_tokens: 120, output_tokens: 95, cached_input_tokens: 0, cache_write_input_tokens: 0, reasoning_tokens: 41 });
    expect(turn.provider_state).toEqual({
      provider: "anthropic",
      data: {
        content: [
          { type: "thinking", thinking: "The user wants the size of README.md; I should list the folder first.", signature: "ZnhzaWctdGhpbmstMDE6YWlybG9jay1maXh0dXJlLW9ubHk=" },
          { type: "text", text: "Listing the folder." },
          { type: "tool_use", id: "toolu_fx_ls", name: "list_dir", input: { path: "." } },
        ],
      },
    });
    expect(fake.requests[0].thinking).toEqual({ type: "enabled", budget_tokens: 2048 });
    expect(fake.requests[0].max_tokens).toBe(8192 + 2048);
  });

  test("a tool loop: the stored blocks go back unchanged and the thinking-enforcing server accepts every request", async () => {
    const fake = serve((_b, n) => (n === 0 ? anthropicFixture("thinking-tool.sse") : n === 1 ? anthropicFixture("interleaved-thinking.sse") : anthropicFixture("text-end-turn.sse", { STOP_REASON: "end_turn" })));
    const p = providerFor(fake.url, { thinking_budget_tokens: 2048 });
    const history: Message[] = [msg("user", "how big is README.md?")];
    const t1 = await p.complete(request({ messages: history }));
    history.push(...stored(JSON.parse(JSON.stringify(t1)), { toolu_fx_ls: "README.md" })); // as the store keeps it: JSON
    const t2 = await p.complete(request({ messages: history }));
    expect(t2.tool_calls).toEqual([{ id: "toolu_fx_read", name: "read_file", arguments: { path: "airlock.yaml" } }]);
    // thinking, redacted thinking and thinking again, in order; the unknown `fallback` block is not kept
    expect((t2.provider_state!.data as any).content.map((b: any) => b.type)).toEqual(["thinking", "redacted_thinking", "thinking", "tool_use"]);
    history.push(...stored(JSON.parse(JSON.stringify(t2))));
    const t3 = await p.complete(request({ messages: history }));
    expect(t3.text).toBe("Done here.");
    expect(fake.requests.length).toBe(3);
    const sent = fake.requests[2].messages;
    expect(sent[1]).toEqual({ role: "assistant", content: (t1.provider_state!.data as any).content });
    expect(sent[3]).toEqual({ role: "assistant", content: (t2.provider_state!.data as any).content });
    expect(sent[3].content[1]).toEqual({ type: "redacted_thinking", data: "ZnhyZWRhY3RlZC1ibG9iLW9wYXF1ZS0wMQ==" });
    expect(fake.requests.every((r) => r.thinking?.type === "enabled")).toBe(true);
  });

  test("the fake server enforces the rule: a tool-result turn whose assistant message lost its thinking, or a changed signature, gets HTTP 400", async () => {
    const fake = serve((_b, n) => (n === 0 ? anthropicFixture("thinking-tool.sse") : anthropicFixture("text-end-turn.sse", { STOP_REASON: "end_turn" })));
    const p = providerFor(fake.url, { thinking_budget_tokens: 2048, max_retries: 0 });
    const t1 = await p.complete(request());
    const history = [msg("user", "hi"), ...stored(t1)];
    // the rule itself, as the server applies it to a body that dropped the thinking block
    const dropped = {
      thinking: { type: "enabled", budget_tokens: 2048 },
      max_tokens: 10240,
      messages: [
        { role: "user", content: [{ type: "text", text: "hi" }] },
        { role: "assistant", content: [{ type: "text", text: "Listing the folder." }, { type: "tool_use", id: "toolu_fx_ls", name: "list_dir", input: { path: "." } }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_fx_ls", content: "ok" }] },
      ],
    };
    expect(anthropicThinkingError(dropped, { thinking: new Map(), redacted: new Set() })).toContain("must start with a thinking block");
    // a tampered signature in the stored state is refused with a 400, as the real API does
    const tampered = structuredClone(history);
    (tampered[1]!.provider_state!.data as any).content[0].signature = "Zm9yZ2Vk";
    const err = await failure(p.complete(request({ messages: tampered })));
    expect(err.code).toBe("provider_error");
    expect(err.details.status).toBe(400);
    expect(err.message).toContain("Invalid `signature`");
    // the untouched history is accepted
    expect((await p.complete(request({ messages: history }))).text).toBe("Done here.");
  });

  test("another provider's state is ignored; a message edited since (ids differ) is rebuilt without thinking", async () => {
    const fake = serve(() => anthropicFixture("text-end-turn.sse", { STOP_REASON: "end_turn" }));
    const p = providerFor(fake.url);
    const thinking = { type: "thinking", thinking: "t", signature: "s" };
    await p.complete(
      request({
        messages: [
          msg("user", "a"),
          msg("assistant", "x", { provider_state: { provider: "openai-responses", data: { content: [thinking] } } }),
          msg("user", "b"),
          msg("assistant", "y", {
            tool_calls: [{ id: "toolu_new", name: "lookup", arguments: { q: 1 } }],
            provider_state: { provider: "anthropic", data: { content: [thinking, { type: "text", text: "y" }, { type: "tool_use", id: "toolu_old", name: "lookup", input: {} }] } },
          }),
          msg("tool", "r", { tool_call_id: "toolu_new", name: "lookup" }),
        ],
      }),
    );
    const sent = fake.requests[0].messages;
    expect(sent[1]).toEqual({ role: "assistant", content: [{ type: "text", text: "x" }] });
    expect(sent[3]).toEqual({ role: "assistant", content: [{ type: "text", text: "y" }, { type: "tool_use", id: "toolu_new", name: "lookup", input: { q: 1 } }] });
  });

  test("thinking on, but the tool loop being continued began without thinking (another provider's turn) → this request goes without thinking, no 400", async () => {
    const fake = serve(() => anthropicFixture("text-end-turn.sse", { STOP_REASON: "end_turn" }));
    const turn = await providerFor(fake.url, { thinking_budget_tokens: 1024, max_retries: 0 }).complete(
      request({
        messages: [
          msg("user", "go"),
          msg("assistant", "", { tool_calls: [{ id: "call_1", name: "lookup", arguments: { q: "z" } }] }),
          msg("tool", "found", { tool_call_id: "call_1", name: "lookup" }),
        ],
      }),
    );
    expect(turn.text).toBe("Done here.");
    expect(fake.requests[0].thinking).toBeUndefined();
    expect(fake.requests[0].max_tokens).toBe(8192);
  });
});

describe("anthropic prompt caching", () => {
  test("breakpoints on the system prompt and the last tool only; cached tokens reported", async () => {
    const fake = serve(() => anthropicFixture("usage-cache.sse"));
    const turn = await providerFor(fake.url).complete(request({ system: "You are airlock." }));
    const body = fake.requests[0];
    expect(body.system).toEqual([{ type: "text", text: "You are airlock.", cache_control: { type: "ephemeral" } }]);
    expect(body.tools.map((t: any) => t.cache_control ?? null)).toEqual([null, { type: "ephemeral" }]);
    expect(JSON.stringify(body.messages)).not.toContain("cache_control");
    expect(turn.usage).toMatchObject({ cached_input_tokens: 3000, cache_write_input_tokens: 1200 });
  });

  test("provider.prompt_caching: false → no breakpoints, system as a plain string", async () => {
    const fake = serve(() => anthropicMessage([{ text: "ok" }]));
    await providerFor(fake.url, { prompt_caching: false }).complete(request({ system: "You are airlock." }));
    expect(fake.requests[0].system).toBe("You are airlock.");
    expect(JSON.stringify(fake.requests[0])).not.toContain("cache_control");
  });
});

describe("anthropic 529 overloaded answers", () => {
  test("HTTP 529 with Retry-After: 0 is retried at the server's pace, not the (here 10-minute) backoff", async () => {
    const fake = serve((_b, n) =>
      n === 0 ? { status: 529, body: { type: "error", error: { type: "overloaded_error", message: "Overloaded" } }, headers: { "retry-after": "0" } } : anthropicMessage([{ text: "back" }]),
    );
    const turn = await providerFor(fake.url, {}, { baseDelayMs: 600_000, maxDelayMs: 600_000 }).complete(request());
    expect(turn.text).toBe("back");
    expect(fake.requests.length).toBe(2);
  });

  test("HTTP 529 asking for a wait beyond the cap → no retry, the error names the wait", async () => {
    const fake = serve(() => ({ status: 529, body: { type: "error", error: { type: "overloaded_error", message: "Overloaded" } }, headers: { "retry-after": "3600" } }));
    const err = await failure(providerFor(fake.url).complete(request()));
    expect(fake.requests.length).toBe(1);
    expect(err.code).toBe("provider_error");
    expect(err.message).toContain("HTTP 529");
    expect(err.message).toContain("asked to wait 3600 s");
  });
});
