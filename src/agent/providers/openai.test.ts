/**
 * @module agent/providers/openai.test
 * The OpenAI provider against a real local OpenAI-compatible server (test/fixtures/fake-openai.ts):
 * checklist items 1–22 of docs research `provider-streams.md` §4, each comparing the whole turn.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { ProviderConfig } from "../../config/schema.ts";
import { AirlockError } from "../../errors.ts";
import type { Message } from "../../session/types.ts";
import { chunk, startFakeOpenAI, textChunks, toolCallChunks, type FakeOpenAI, type FakeReply, type Responder } from "../../../test/fixtures/fake-openai.ts";
import { createOpenAIProvider } from "./openai.ts";
import type { ModelRequest, ModelTurn } from "./provider.ts";
import { msg } from "../../../test/fixtures/messages.ts";

const servers: FakeOpenAI[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

function serve(r: Responder): FakeOpenAI {
  const s = startFakeOpenAI(r);
  servers.push(s);
  return s;
}

function providerFor(url: string, extra: Record<string, unknown> = {}, env: Record<string, string | undefined> = {}) {
  return createOpenAIProvider(ProviderConfig.parse({ name: "openai", base_url: url, model: "fake-model", ...extra }), {
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

/** Serves one reply for every request, runs one completion, returns the turn and the streamed deltas. */
async function run(reply: FakeReply, extra: Partial<ModelRequest> = {}) {
  const fake = serve(() => reply);
  const deltas: string[] = [];
  const turn = await providerFor(fake.url).complete(request({ onDelta: (t) => deltas.push(t), ...extra }));
  return { turn, deltas, fake };
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

/** Waits (polling every 5 ms, up to 5 s) until `cond` holds. */
async function until(cond: () => boolean): Promise<void> {
  const end = Date.now() + 5000;
  while (!cond()) {
    if (Date.now() > end) throw new Error("condition not reached within 5 s");
    await Bun.sleep(5);
  }
}

const anyCallId = expect.stringMatching(/^call_/);
const tc = (index: number | undefined, fn: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  ...(index === undefined ? {} : { index }),
  ...extra,
  function: fn,
});

describe("openai provider: tool-call assembly (checklist 1–18)", () => {
  test("1. single call split over fragments → one call with parsed arguments", async () => {
    const { turn, fake } = await run([
      chunk({ role: "assistant", content: null }),
      chunk({ tool_calls: [tc(0, { name: "lookup", arguments: "" }, { id: "call_a", type: "function" })] }),
      chunk({ tool_calls: [tc(0, { arguments: '{"q":' })] }),
      chunk({ tool_calls: [tc(0, { arguments: '"wea' })] }),
      chunk({ tool_calls: [tc(0, { arguments: 'ther"}' })] }),
      chunk({}, "tool_calls"),
    ]);
    expect(turn).toEqual({
      text: "",
      tool_calls: [{ id: "call_a", name: "lookup", arguments: { q: "weather" } }],
      stop_reason: "tool_calls",
      truncated: false,
      usage: undefined,
    });
    // the request was a streamed chat completion asking for usage, with the tools offered
    expect(fake.requests[0]).toMatchObject({
      model: "fake-model",
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: "user", content: "hi" }],
      tools: [{ type: "function", function: { name: "lookup", description: "look up" } }],
    });
  });

  test("2. a prefix that already parses as JSON is not finished early", async () => {
    // after '{"q":"a"' a repairing parser would already see {"q":"a"}; the call must wait for ',"limit":5}'
    const { turn } = await run([
      chunk({ tool_calls: [tc(0, { name: "lookup", arguments: "" }, { id: "call_a", type: "function" })] }),
      chunk({ tool_calls: [tc(0, { arguments: '{"q":"a"' })] }),
      chunk({ tool_calls: [tc(0, { arguments: ',"limit":5}' })] }),
      chunk({}, "tool_calls"),
    ]);
    expect(turn).toEqual({
      text: "",
      tool_calls: [{ id: "call_a", name: "lookup", arguments: { q: "a", limit: 5 } }],
      stop_reason: "tool_calls",
      truncated: false,
      usage: undefined,
    });
  });

  test("3. two parallel calls with interleaved fragments → two calls in index order", async () => {
    const { turn } = await run([
      chunk({ tool_calls: [tc(0, { name: "lookup", arguments: "" }, { id: "call_0", type: "function" })] }),
      chunk({ tool_calls: [tc(1, { name: "fetch", arguments: "" }, { id: "call_1", type: "function" })] }),
      chunk({ tool_calls: [tc(0, { arguments: '{"q":' })] }),
      chunk({ tool_calls: [tc(1, { arguments: '{"url":' })] }),
      chunk({ tool_calls: [tc(0, { arguments: '"a"}' })] }),
      chunk({ tool_calls: [tc(1, { arguments: '"b"}' })] }),
      chunk({}, "tool_calls"),
    ]);
    expect(turn).toEqual({
      text: "",
      tool_calls: [
        { id: "call_0", name: "lookup", arguments: { q: "a" } },
        { id: "call_1", name: "fetch", arguments: { url: "b" } },
      ],
      stop_reason: "tool_calls",
      truncated: false,
      usage: undefined,
    });
  });

  test("4. text then a tool call → both kept, text streamed", async () => {
    const { turn, deltas } = await run(toolCallChunks({ name: "lookup", arguments: { q: "x" }, id: "call_t" }, { text: "Let me check." }));
    expect(turn).toEqual({
      text: "Let me check.",
      tool_calls: [{ id: "call_t", name: "lookup", arguments: { q: "x" } }],
      stop_reason: "tool_calls",
      truncated: false,
      usage: undefined,
    });
    expect(deltas.join("")).toBe("Let me check.");
    expect(deltas.length).toBeGreaterThan(1);
  });

  test("5. a call followed by finish_reason stop (named tool_choice) is still a tool-call turn", async () => {
    const { turn } = await run(toolCallChunks({ name: "lookup", arguments: { q: "x" }, id: "call_s" }, { finish: "stop" }));
    expect(turn).toEqual({
      text: "",
      tool_calls: [{ id: "call_s", name: "lookup", arguments: { q: "x" } }],
      stop_reason: "tool_calls",
      truncated: false,
      usage: undefined,
    });
  });

  test("6. length mid-call → truncated turn, the call flagged invalid with its raw text", async () => {
    const { turn } = await run([
      chunk({ tool_calls: [tc(0, { name: "lookup", arguments: "" }, { id: "call_l", type: "function" })] }),
      chunk({ tool_calls: [tc(0, { arguments: '{"q":"a"' })] }),
      chunk({}, "length"),
    ]);
    expect(turn).toEqual({
      text: "",
      tool_calls: [{ id: "call_l", name: "lookup", arguments: {}, invalid: '{"q":"a"' }],
      stop_reason: "length",
      truncated: true,
      usage: undefined,
    });
    // a call whose text happens to parse is still not trusted in a cut-off turn: every call is flagged
    const { turn: t2 } = await run([
      chunk({ tool_calls: [tc(0, { name: "lookup", arguments: '{"q":"a"}' }, { id: "call_1", type: "function" })] }),
      chunk({ tool_calls: [tc(1, { name: "lookup", arguments: '{"q":"b' }, { id: "call_2", type: "function" })] }),
      chunk({}, "length"),
    ]);
    expect(t2).toEqual({
      text: "",
      tool_calls: [
        { id: "call_1", name: "lookup", arguments: {}, invalid: '{"q":"a"}' },
        { id: "call_2", name: "lookup", arguments: {}, invalid: '{"q":"b' },
      ],
      stop_reason: "length",
      truncated: true,
      usage: undefined,
    });
  });

  test("7. usage chunk (choices: []) is recorded; without it usage is unknown", async () => {
    const { turn } = await run(textChunks("Hello there", { usage: { prompt_tokens: 12, completion_tokens: 3 } }));
    expect(turn).toEqual({ text: "Hello there", tool_calls: [], stop_reason: "end_turn", truncated: false, usage: { input_tokens: 12, output_tokens: 3 } });
    const { turn: t2 } = await run(textChunks("Hello there"));
    expect(t2).toEqual({ text: "Hello there", tool_calls: [], stop_reason: "end_turn", truncated: false, usage: undefined });
    expect("usage" in t2 && t2.usage).toBe(undefined);
  });

  test("8. an empty-choices first chunk (Azure prompt_filter_results) is ignored", async () => {
    const { turn } = await run([
      { id: "", object: "", created: 0, model: "", choices: [], prompt_filter_results: [{ prompt_index: 0, content_filter_results: {} }] },
      ...textChunks("ok"),
    ]);
    expect(turn).toEqual({ text: "ok", tool_calls: [], stop_reason: "end_turn", truncated: false, usage: undefined });
  });

  test("9. whole call in one chunk (Ollama/Groq) → same as a split call", async () => {
    const { turn } = await run([
      chunk({ role: "assistant", content: "" }),
      chunk({ tool_calls: [tc(0, { name: "lookup", arguments: '{"q":"weather"}' }, { id: "call_a", type: "function" })] }),
      chunk({}, "tool_calls"),
    ]);
    expect(turn).toEqual({
      text: "",
      tool_calls: [{ id: "call_a", name: "lookup", arguments: { q: "weather" } }],
      stop_reason: "tool_calls",
      truncated: false,
      usage: undefined,
    });
  });

  test("10. no index field, two whole calls in one delta → two calls", async () => {
    const { turn } = await run([
      chunk({
        tool_calls: [
          tc(undefined, { name: "lookup", arguments: '{"q":"a"}' }, { id: "call_x", type: "function" }),
          tc(undefined, { name: "fetch", arguments: '{"url":"b"}' }, { id: "call_y", type: "function" }),
        ],
      }),
      chunk({}, "tool_calls"),
    ]);
    expect(turn).toEqual({
      text: "",
      tool_calls: [
        { id: "call_x", name: "lookup", arguments: { q: "a" } },
        { id: "call_y", name: "fetch", arguments: { url: "b" } },
      ],
      stop_reason: "tool_calls",
      truncated: false,
      usage: undefined,
    });
  });

  test("11. every call index 0 with different ids → separate calls", async () => {
    const { turn } = await run([
      chunk({ tool_calls: [tc(0, { name: "lookup", arguments: '{"q":"a"}' }, { id: "call_1", type: "function" })] }),
      chunk({ tool_calls: [tc(0, { name: "lookup", arguments: '{"q":"b"}' }, { id: "call_2", type: "function" })] }),
      chunk({}, "tool_calls"),
    ]);
    expect(turn).toEqual({
      text: "",
      tool_calls: [
        { id: "call_1", name: "lookup", arguments: { q: "a" } },
        { id: "call_2", name: "lookup", arguments: { q: "b" } },
      ],
      stop_reason: "tool_calls",
      truncated: false,
      usage: undefined,
    });
  });

  test("12. no id → a unique id is generated and used when the result is sent back", async () => {
    const fake = serve((_body, n) =>
      n === 0
        ? [chunk({ tool_calls: [tc(0, { name: "lookup", arguments: '{"q":"a"}' }, { type: "function" })] }), chunk({}, "tool_calls")]
        : textChunks("done"),
    );
    const p = providerFor(fake.url);
    const turn = await p.complete(request());
    expect(turn).toEqual({
      text: "",
      tool_calls: [{ id: anyCallId, name: "lookup", arguments: { q: "a" } }],
      stop_reason: "tool_calls",
      truncated: false,
      usage: undefined,
    });
    const id = turn.tool_calls[0]!.id;
    const history = [
      msg("user", "hi"),
      msg("assistant", "", { tool_calls: turn.tool_calls }),
      msg("tool", '{"answer":1}', { tool_call_id: id, name: "lookup" }),
    ];
    const t2 = await p.complete(request({ messages: history }));
    expect(t2.text).toBe("done");
    expect(fake.requests[1].messages).toEqual([
      { role: "user", content: "hi" },
      { role: "assistant", content: null, tool_calls: [{ id, type: "function", function: { name: "lookup", arguments: '{"q":"a"}' } }] },
      { role: "tool", tool_call_id: id, content: '{"answer":1}' },
    ]);
  });

  test("13. the same id on two different calls → both kept, ids made unique", async () => {
    const { turn } = await run([
      chunk({ tool_calls: [tc(0, { name: "lookup", arguments: '{"q":"a"}' }, { id: "call_same", type: "function" })] }),
      chunk({ tool_calls: [tc(1, { name: "fetch", arguments: '{"url":"b"}' }, { id: "call_same", type: "function" })] }),
      chunk({}, "tool_calls"),
    ]);
    expect(turn).toEqual({
      text: "",
      tool_calls: [
        { id: "call_same", name: "lookup", arguments: { q: "a" } },
        { id: anyCallId, name: "fetch", arguments: { url: "b" } },
      ],
      stop_reason: "tool_calls",
      truncated: false,
      usage: undefined,
    });
    expect(turn.tool_calls[1]!.id).not.toBe("call_same");
  });

  test("14. index starting at 1 → one call", async () => {
    const { turn } = await run([
      chunk({ tool_calls: [tc(1, { name: "lookup", arguments: "" }, { id: "call_a", type: "function" })] }),
      chunk({ tool_calls: [tc(1, { arguments: '{"q":"z"}' })] }),
      chunk({}, "tool_calls"),
    ]);
    expect(turn).toEqual({
      text: "",
      tool_calls: [{ id: "call_a", name: "lookup", arguments: { q: "z" } }],
      stop_reason: "tool_calls",
      truncated: false,
      usage: undefined,
    });
  });

  test("15. empty or repeated name on continuation deltas → name taken once", async () => {
    const { turn } = await run([
      chunk({ tool_calls: [tc(0, { name: "lookup", arguments: "" }, { id: "call_a", type: "function" })] }),
      chunk({ tool_calls: [tc(0, { name: "", arguments: '{"q"' })] }),
      chunk({ tool_calls: [tc(0, { name: "lookup", arguments: ':"n"}' })] }),
      chunk({ tool_calls: [tc(1, { name: "fetch", arguments: "" }, { id: "call_b", type: "function" })] }),
      chunk({ tool_calls: [tc(1, { name: "fetch", arguments: "{}" })] }),
      chunk({}, "tool_calls"),
    ]);
    expect(turn).toEqual({
      text: "",
      tool_calls: [
        { id: "call_a", name: "lookup", arguments: { q: "n" } },
        { id: "call_b", name: "fetch", arguments: {} },
      ],
      stop_reason: "tool_calls",
      truncated: false,
      usage: undefined,
    });
  });

  test("16. empty arguments for a no-parameter tool → {}", async () => {
    const { turn } = await run([
      chunk({ tool_calls: [tc(0, { name: "now", arguments: "" }, { id: "call_n", type: "function" })] }),
      chunk({}, "tool_calls"),
    ]);
    expect(turn).toEqual({ text: "", tool_calls: [{ id: "call_n", name: "now", arguments: {} }], stop_reason: "tool_calls", truncated: false, usage: undefined });
  });

  test("17. invalid JSON at stream end → call flagged invalid with the raw text, no crash", async () => {
    const { turn } = await run([
      chunk({ tool_calls: [tc(0, { name: "lookup", arguments: "" }, { id: "call_i", type: "function" })] }),
      chunk({ tool_calls: [tc(0, { arguments: "{q: 'single quotes'}" })] }),
      chunk({}, "tool_calls"),
    ]);
    expect(turn).toEqual({
      text: "",
      tool_calls: [{ id: "call_i", name: "lookup", arguments: {}, invalid: "{q: 'single quotes'}" }],
      stop_reason: "tool_calls",
      truncated: false,
      usage: undefined,
    });
  });

  test("18. arguments as an object are accepted, and replayed as a JSON string", async () => {
    const fake = serve((_b, n) =>
      n === 0 ? [chunk({ tool_calls: [tc(0, { name: "lookup", arguments: { q: "obj" } }, { id: "call_o", type: "function" })] }), chunk({}, "tool_calls")] : textChunks("ok"),
    );
    const p = providerFor(fake.url);
    const turn = await p.complete(request());
    expect(turn).toEqual({ text: "", tool_calls: [{ id: "call_o", name: "lookup", arguments: { q: "obj" } }], stop_reason: "tool_calls", truncated: false, usage: undefined });
    await p.complete(request({ messages: [msg("user", "hi"), msg("assistant", "", { tool_calls: turn.tool_calls }), msg("tool", "r", { tool_call_id: "call_o", name: "lookup" })] }));
    expect(fake.requests[1].messages[1].tool_calls[0].function.arguments).toBe('{"q":"obj"}');
  });
});

describe("openai provider: wire noise and errors (checklist 19–22)", () => {
  test("19. SSE comments, CRLF line ends and JSON split across network reads → same turn", async () => {
    const plain = (await run(toolCallChunks({ name: "lookup", arguments: { q: "noise" }, id: "call_z" }, { text: "hm", usage: { prompt_tokens: 5, completion_tokens: 7 } }))).turn;
    const items = toolCallChunks({ name: "lookup", arguments: { q: "noise" }, id: "call_z" }, { text: "hm", usage: { prompt_tokens: 5, completion_tokens: 7 } });
    const noisy: any[] = [{ raw: ": OPENROUTER PROCESSING\r\n\r\n" }];
    for (const it of items) {
      const line = `data: ${JSON.stringify(it)}\r\n\r\n`;
      const cut = Math.floor(line.length / 2);
      noisy.push({ raw: line.slice(0, cut) }, { raw: line.slice(cut) }, { raw: ": OPENROUTER PROCESSING\r\n\r\n" });
    }
    const { turn } = await run({ sse: noisy, crlf: true });
    expect(turn).toEqual(plain);
    expect(turn).toEqual({
      text: "hm",
      tool_calls: [{ id: "call_z", name: "lookup", arguments: { q: "noise" } }],
      stop_reason: "tool_calls",
      truncated: false,
      usage: { input_tokens: 5, output_tokens: 7 },
    });
  });

  test("20a. mid-stream {error} after text → provider_error keeping the text so far, not retried", async () => {
    const fake = serve(() => ({
      sse: [chunk({ content: "partial " }), chunk({ content: "answer" }), { error: { message: "The server had an error while processing your request.", type: "server_error" } }],
      done: false,
    }));
    const err = await failure(providerFor(fake.url).complete(request({ onDelta: () => {} })));
    expect(err.code).toBe("provider_error");
    expect(err.message).toContain("The server had an error while processing your request.");
    expect(err.details.partial_text).toBe("partial answer");
    expect(fake.requests.length).toBe(1); // text already reached the caller: a retry would repeat it
  });

  test("20b. mid-stream {object: error} (vLLM) → provider_error keeping the text", async () => {
    const fake = serve(() => ({ sse: [chunk({ content: "abc" }), { object: "error", message: "decoding failed", type: "BadRequestError", code: 400 }], done: false }));
    const err = await failure(providerFor(fake.url).complete(request()));
    expect(err.code).toBe("provider_error");
    expect(err.message).toContain("decoding failed");
    expect(err.details.partial_text).toBe("abc");
  });

  test("20c. mid-stream error before any text is retried", async () => {
    const fake = serve((_b, n) => (n === 0 ? { sse: [{ error: { message: "overloaded", type: "server_error" } }], done: false } : textChunks("second try")));
    const turn = await providerFor(fake.url).complete(request());
    expect(turn.text).toBe("second try");
    expect(fake.requests.length).toBe(2);
  });

  test("21a. HTTP 401 → provider_auth, never retried, message names the key variable", async () => {
    const fake = serve(() => ({ status: 401, body: { error: { message: "Incorrect API key provided: sk-xx.", type: "invalid_request_error", param: null, code: "invalid_api_key" } } }));
    const err = await failure(providerFor(fake.url, { api_key_env: "MY_KEY" }, { MY_KEY: "sk-xx" }).complete(request()));
    expect(err.code).toBe("provider_auth");
    expect(err.message).toContain("MY_KEY");
    expect(err.message).toContain("Incorrect API key provided");
    expect(fake.requests.length).toBe(1);
    expect(fake.headers[0]!.get("authorization")).toBe("Bearer sk-xx");
  });

  test("21b. HTTP 429 rate_limit_exceeded → retried after Retry-After, then succeeds", async () => {
    const arrivals: number[] = [];
    const fake = serve((_b, n) => {
      arrivals.push(performance.now());
      return n === 0
        ? { status: 429, headers: { "retry-after": "1" }, body: { error: { message: "Rate limit reached", type: "requests", code: "rate_limit_exceeded" } } }
        : textChunks("after wait");
    });
    const turn = await providerFor(fake.url).complete(request());
    expect(turn.text).toBe("after wait");
    expect(fake.requests.length).toBe(2);
    // base backoff is 1 ms in these tests, so only Retry-After explains a gap of ~1 s
    expect(arrivals[1]! - arrivals[0]!).toBeGreaterThanOrEqual(950);
  });

  test("21c. HTTP 429 on every attempt → provider_rate_limit after max_retries retries", async () => {
    const fake = serve(() => ({ status: 429, body: { error: { message: "Rate limit reached", type: "requests", code: "rate_limit_exceeded" } } }));
    const err = await failure(providerFor(fake.url, { max_retries: 2 }).complete(request()));
    expect(err.code).toBe("provider_rate_limit");
    expect(err.message).toContain("gave up after 2 retries");
    expect(fake.requests.length).toBe(3);
  });

  test("21d. HTTP 429 insufficient_quota → provider_rate_limit at once, no retry", async () => {
    const fake = serve(() => ({ status: 429, body: { error: { message: "You exceeded your current quota", type: "insufficient_quota", code: "insufficient_quota" } } }));
    const err = await failure(providerFor(fake.url).complete(request()));
    expect(err.code).toBe("provider_rate_limit");
    expect(err.message).toContain("billing");
    expect(fake.requests.length).toBe(1);
  });

  test("21e. HTTP 500 → retried; succeeds on a later attempt", async () => {
    const fake = serve((_b, n) => (n < 2 ? { status: 500, body: { error: { message: "boom", type: "server_error" } } } : textChunks("fine")));
    const turn = await providerFor(fake.url).complete(request());
    expect(turn.text).toBe("fine");
    expect(fake.requests.length).toBe(3);
  });

  test("21f. HTTP 500 on every attempt → provider_error after max_retries", async () => {
    const fake = serve(() => ({ status: 503, body: { error: { message: "unavailable", type: "server_error" } } }));
    const err = await failure(providerFor(fake.url, { max_retries: 1 }).complete(request()));
    expect(err.code).toBe("provider_error");
    expect(err.message).toContain("HTTP 503");
    expect(fake.requests.length).toBe(2);
  });

  test("22. stream ends without finish_reason or [DONE] → provider_error, not a finished turn", async () => {
    const fake = serve(() => ({ sse: [chunk({ role: "assistant", content: "" }), chunk({ content: "half an ans" })], done: false }));
    const err = await failure(providerFor(fake.url, { max_retries: 0 }).complete(request({ onDelta: () => {} })));
    expect(err.code).toBe("provider_error");
    expect(err.message).toContain("ended before the answer was finished");
    expect(err.details.partial_text).toBe("half an ans");
  });
});

describe("openai provider: keys, cancellation, timeouts", () => {
  test("a data line that is not JSON → provider_error naming a malformed stream", async () => {
    const fake = serve(() => ({ sse: [chunk({ content: "a" }), { raw: "data: {not json\n\n" }], done: false }));
    const err = await failure(providerFor(fake.url).complete(request()));
    expect(err.code).toBe("provider_error");
    expect(err.message).toContain("malformed stream");
    expect(err.details.partial_text).toBe("a");
  });

  test("a missing key for a remote base_url is provider_auth naming the variable", async () => {
    const p = createOpenAIProvider(ProviderConfig.parse({ name: "openai", base_url: "https://api.example.com/v1" }), { configDir: ".", env: {} });
    const err = await failure(p.complete(request()));
    expect(err.code).toBe("provider_auth");
    expect(err.message).toContain("the environment variable OPENAI_API_KEY is unset");
    expect(err.message).not.toContain("refused");
  });

  test("a loopback base_url without a key uses a placeholder", async () => {
    const { fake } = await run(textChunks("local"));
    expect(fake.headers[0]!.get("authorization")).toBe("Bearer airlock-no-key");
  });

  test("aborting the signal mid-stream rejects with cancelled and closes the HTTP stream", async () => {
    const fake = serve(() => ({ sse: [chunk({ content: "first" }), { hang: true }], done: false }));
    const ac = new AbortController();
    const p = providerFor(fake.url).complete(request({ signal: ac.signal, onDelta: () => ac.abort() }));
    const err = await failure(p);
    expect(err.code).toBe("cancelled");
    expect(fake.requests.length).toBe(1);
    await until(() => fake.disconnects() === 1);
  });

  test("a stalled stream fails with provider_error after timeout_s of silence", async () => {
    const fake = serve(() => ({ sse: [chunk({ content: "x" }), { hang: true }], done: false }));
    const err = await failure(providerFor(fake.url, { timeout_s: 0.3 }).complete(request()));
    expect(err.code).toBe("provider_error");
    expect(err.message).toContain("sent nothing for 0.3 s");
  });

  test("an unreachable server is provider_error after retries", async () => {
    const fake = serve(() => textChunks("x"));
    const url = fake.url;
    await fake.close();
    servers.length = 0;
    const err = await failure(providerFor(url, { max_retries: 1 }).complete(request()));
    expect(err.code).toBe("provider_error");
    expect(err.message).toContain("Could not reach the model server");
  });

  test("system prompt and history are replayed in order; tool results as role tool", async () => {
    const { fake } = await run(textChunks("ok"), {
      system: "be brief",
      messages: [
        msg("user", "q1"),
        msg("assistant", "a1"),
        msg("user", "q2"),
        msg("assistant", "checking", { tool_calls: [{ id: "call_1", name: "lookup", arguments: { q: 1 } }, { id: "call_2", name: "bad", arguments: {}, invalid: "{oops" }] }),
        msg("tool", "r1", { tool_call_id: "call_1", name: "lookup" }),
        msg("tool", '{"code":"invalid_arguments"}', { tool_call_id: "call_2", name: "bad", is_error: true }),
      ],
      tools: [],
    });
    expect(fake.requests[0].tools).toBeUndefined();
    expect(fake.requests[0].messages).toEqual([
      { role: "system", content: "be brief" },
      { role: "user", content: "q1" },
      { role: "assistant", content: "a1" },
      { role: "user", content: "q2" },
      {
        role: "assistant",
        content: "checking",
        tool_calls: [
          { id: "call_1", type: "function", function: { name: "lookup", arguments: '{"q":1}' } },
          { id: "call_2", type: "function", function: { name: "bad", arguments: "{oops" } },
        ],
      },
      { role: "tool", tool_call_id: "call_1", content: "r1" },
      { role: "tool", tool_call_id: "call_2", content: '{"code":"invalid_arguments"}' },
    ]);
  });
});
