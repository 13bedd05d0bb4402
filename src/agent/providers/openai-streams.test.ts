/**
 * @module agent/providers/openai-streams.test
 * Conformance of the openai provider on real stream shapes: each fixture under
 * test/fixtures/provider-streams/openai/ (our own SSE bodies, each naming the recorded stream it
 * reproduces) is replayed byte for byte by a local fake server over real HTTP, once one event per
 * network write and once cut every 7 bytes, and must give the same whole turn. Plus DeepSeek's
 * reasoning replay against a fake that enforces DeepSeek's rule, retries, and errors that name the cause.
 * The table in docs/providers.md ("openai") lists each row with its test here.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ProviderConfig } from "../../config/schema.ts";
import { AirlockError } from "../../errors.ts";
import type { Message } from "../../session/types.ts";
import { startFakeOpenAI, textChunks, type FakeOpenAI, type FakeReply, type Responder } from "../../../test/fixtures/fake-openai.ts";
import { createOpenAIProvider, replaysReasoningContent, toOpenAIMessages } from "./openai.ts";
import type { ModelRequest, ModelTurn } from "./provider.ts";
import { msg } from "../../../test/fixtures/messages.ts";

const FIXTURES = join(import.meta.dir, "../../../test/fixtures/provider-streams/openai");

const servers: FakeOpenAI[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

function serve(r: Responder): FakeOpenAI {
  const s = startFakeOpenAI(r);
  servers.push(s);
  return s;
}

/** A fixture's bytes as a fake reply: one network write per SSE event, or cuts every `cut` bytes. */
function fixture(name: string, cut?: number): FakeReply {
  const text = readFileSync(join(FIXTURES, name), "utf8");
  const raw: { raw: string }[] = [];
  if (cut) {
    for (let i = 0; i < text.length; i += cut) raw.push({ raw: text.slice(i, i + cut) });
  } else {
    for (const ev of text.split(/(?<=\n\n)/)) raw.push({ raw: ev });
  }
  return { sse: raw, done: false };
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
    tools: [{ name: "lookup", description: "look up", parameters: { type: "object", properties: {} } }],
    signal: new AbortController().signal,
    onDelta: () => {},
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

/** Replays the fixture both ways; both turns must equal `want`. Returns the deltas of the first run. */
async function conforms(name: string, want: ModelTurn): Promise<string[]> {
  const deltas: string[] = [];
  for (const cut of [undefined, 7]) {
    const fake = serve(() => fixture(name, cut));
    const seen: string[] = [];
    const turn = await providerFor(fake.url).complete(request({ onDelta: (t) => seen.push(t) }));
    expect(turn).toStrictEqual(want);
    expect(fake.requests.length).toBe(1);
    if (!cut) deltas.push(...seen);
    else expect(seen.join("")).toBe(deltas.join(""));
  }
  return deltas;
}

const generatedId = expect.stringMatching(/^call_/);

describe("openai stream shapes (fixtures replayed over real HTTP)", () => {
  test("DeepSeek thinking: reasoning_content kept as provider_state, arguments split per token, usage on the finish chunk", async () => {
    await conforms("deepseek-thinking-tool-call.sse", {
      text: "",
      tool_calls: [{ id: "call_00_airlockDS01", name: "forecast", arguments: { city: "Lisbon", days: 3 } }],
      stop_reason: "tool_calls",
      truncated: false,
      usage: { input_tokens: 402, output_tokens: 58, cached_input_tokens: 384, reasoning_tokens: 9 },
      provider_state: { provider: "openai", data: { reasoning_content: "I'll look up the forecast." } },
    });
  });

  test("OpenAI parallel calls interleaved by index, id only on the first chunk, usage-only last chunk with cached tokens", async () => {
    await conforms("openai-parallel-interleaved.sse", {
      text: "",
      tool_calls: [
        { id: "call_AirA1", name: "read_file", arguments: { path: "src/a.ts" } },
        { id: "call_AirB2", name: "list_dir", arguments: { path: "docs" } },
      ],
      stop_reason: "tool_calls",
      truncated: false,
      usage: { input_tokens: 1210, output_tokens: 44, cached_input_tokens: 1024, reasoning_tokens: 0 },
    });
  });

  test("xAI: no finish_reason key until the end, whole arguments in one chunk, reasoning tokens in the usage details", async () => {
    await conforms("xai-whole-call-no-finish-key.sse", {
      text: "",
      tool_calls: [{ id: "call_41117", name: "weather", arguments: { location: "Porto" } }],
      stop_reason: "tool_calls",
      truncated: false,
      usage: { input_tokens: 311, output_tokens: 24, cached_input_tokens: 300, reasoning_tokens: 205 },
      provider_state: { provider: "openai", data: { reasoning_content: "Need the weather tool." } },
    });
  });

  test("empty deltas and empty tool_calls arrays are skipped; whitespace deltas are answer text", async () => {
    const deltas = await conforms("empty-and-whitespace-deltas.sse", {
      text: "Two lines\n\n  indented",
      tool_calls: [],
      stop_reason: "end_turn",
      truncated: false,
      usage: undefined,
      provider_state: { provider: "openai", data: { reasoning_content: "Think twice." } },
    });
    expect(deltas).toEqual(["Two", " ", "lines", "\n", "\n  indented"]);
  });

  test("a placeholder first chunk (choices: [], empty id) and a usage-only last chunk without details", async () => {
    await conforms("placeholder-first-chunk.sse", { text: "Hi there", tool_calls: [], stop_reason: "end_turn", truncated: false, usage: { input_tokens: 9, output_tokens: 2 } });
  });

  test('tools with no arguments: "", an empty fragment, "{}" and whitespace all give {}', async () => {
    await conforms("no-argument-tools.sse", {
      text: "",
      tool_calls: [
        { id: "call_now", name: "now", arguments: {} },
        { id: "call_pwd", name: "pwd", arguments: {} },
        { id: "call_ws", name: "whoami", arguments: {} },
      ],
      stop_reason: "tool_calls",
      truncated: false,
      usage: { input_tokens: 10, output_tokens: 5 },
    });
  });

  test("quoted and escaped JSON cut inside escape sequences parses to the exact string", async () => {
    await conforms("escaped-json-arguments.sse", {
      text: "",
      tool_calls: [
        {
          id: "call_esc",
          name: "developer__shell",
          arguments: { command: "printf \"%s\\n\" 'a b' && echo é\t| tr a-z A-Z", note: 'quote " backslash \\ slash / emoji 😀' },
        },
      ],
      stop_reason: "tool_calls",
      truncated: false,
      usage: undefined,
    });
  });

  test("a refusal (delta.refusal) is the answer text, streamed", async () => {
    const deltas = await conforms("refusal.sse", { text: "I'm sorry, I can't help with that.", tool_calls: [], stop_reason: "end_turn", truncated: false, usage: undefined });
    expect(deltas.length).toBe(8);
  });

  test("unknown fields, delta types, tool-call types, junk entries, a second choice and unknown chunks are skipped", async () => {
    await conforms("unknown-fields-and-deltas.sse", { text: "Done!", tool_calls: [], stop_reason: "end_turn", truncated: false, usage: undefined });
  });

  test("a finish_reason without [DONE] is a finished turn", async () => {
    await conforms("finish-without-done.sse", { text: "Hello", tool_calls: [], stop_reason: "end_turn", truncated: false, usage: undefined });
  });

  test("[DONE] without any finish_reason is a finished turn (read as stop)", async () => {
    await conforms("done-without-finish.sse", { text: "Fine.", tool_calls: [], stop_reason: "end_turn", truncated: false, usage: undefined });
  });

  test("OpenRouter: keep-alive comments skipped, the reasoning field kept, usage with cost", async () => {
    await conforms("openrouter-reasoning-comments.sse", {
      text: "",
      tool_calls: [{ id: "call_or_1", name: "read_file", arguments: { path: "README.md" } }],
      stop_reason: "tool_calls",
      truncated: false,
      usage: { input_tokens: 220, output_tokens: 31, cached_input_tokens: 0, reasoning_tokens: 12 },
      provider_state: { provider: "openai", data: { reasoning_content: "Check the file." } },
    });
  });

  test("vLLM: delta.reasoning, a call without type, fragments with neither index nor id", async () => {
    await conforms("vllm-reasoning-no-type.sse", {
      text: "",
      tool_calls: [{ id: "chatcmpl-tool-9a1", name: "list_dir", arguments: { path: "." } }],
      stop_reason: "tool_calls",
      truncated: false,
      usage: undefined,
      provider_state: { provider: "openai", data: { reasoning_content: "List files." } },
    });
  });

  test("Groq: delta.reasoning, a whole call with {} arguments, usage on the finish chunk beside x_groq", async () => {
    await conforms("groq-reasoning-usage-in-x-groq.sse", {
      text: "",
      tool_calls: [{ id: "tk_air_7", name: "weather", arguments: {} }],
      stop_reason: "tool_calls",
      truncated: false,
      usage: { input_tokens: 198, output_tokens: 21 },
      provider_state: { provider: "openai", data: { reasoning_content: "Weather needs the tool." } },
    });
  });

  test("Ollama: whole calls all at index 0 with their own ids are separate calls", async () => {
    await conforms("ollama-index-zero.sse", {
      text: "",
      tool_calls: [
        { id: "call_ol1", name: "read_file", arguments: { path: "a.txt" } },
        { id: "call_ol2", name: "read_file", arguments: { path: "b.txt" } },
      ],
      stop_reason: "tool_calls",
      truncated: false,
      usage: undefined,
    });
  });

  test("llama.cpp: arguments as an object, no id, no type, no index; replayed as a JSON string under the generated id", async () => {
    const fake = serve((_b, n) => (n === 0 ? fixture("object-arguments-no-id.sse") : textChunks("ok")));
    const p = providerFor(fake.url);
    const turn = await p.complete(request());
    expect(turn).toStrictEqual({
      text: "",
      tool_calls: [{ id: generatedId, name: "write_file", arguments: { path: "x.txt", content: 'line "1"\n' } }],
      stop_reason: "tool_calls",
      truncated: false,
      usage: { input_tokens: 50, output_tokens: 20 },
    });
    const id = turn.tool_calls[0]!.id;
    await p.complete(request({ messages: [msg("user", "hi"), msg("assistant", "", { tool_calls: turn.tool_calls }), msg("tool", "ok", { tool_call_id: id, name: "write_file" })] }));
    expect(fake.requests[1].messages[1].tool_calls[0]).toEqual({ id, type: "function", function: { name: "write_file", arguments: '{"path":"x.txt","content":"line \\"1\\"\\n"}' } });
  });

  test('legacy delta.function_call with finish_reason "function_call" is one tool call', async () => {
    await conforms("legacy-function-call.sse", {
      text: "",
      tool_calls: [{ id: generatedId, name: "lookup", arguments: { q: "air" } }],
      stop_reason: "tool_calls",
      truncated: false,
      usage: undefined,
    });
  });

  test('finish_reason "length" inside a call: truncated, the call flagged invalid, usage from the same chunk', async () => {
    await conforms("length-mid-call.sse", {
      text: "",
      tool_calls: [{ id: "call_len", name: "write_file", arguments: {}, invalid: '{"path":"a","content":"abc' }],
      stop_reason: "length",
      truncated: true,
      usage: { input_tokens: 88, output_tokens: 4, cached_input_tokens: 0, reasoning_tokens: 0 },
    });
  });

  test('finish_reason "content_filter" keeps the text so far and says content_filter', async () => {
    await conforms("content-filter.sse", { text: "Here is", tool_calls: [], stop_reason: "content_filter", truncated: false, usage: undefined });
  });
});

describe("openai streams that break", () => {
  test("cut before any finish_reason or [DONE], after text: provider_error saying the stream broke after output, not replayed", async () => {
    for (const cut of [undefined, 7]) {
      const fake = serve(() => fixture("cut-mid-answer.sse", cut));
      const err = await failure(providerFor(fake.url).complete(request()));
      expect(err.code).toBe("provider_error");
      expect(err.message).toContain("broke after output had been streamed");
      expect(err.message).toContain("no finish_reason and no [DONE]");
      expect(err.details).toMatchObject({ partial_text: "Half an ans", after_output: true });
      expect(fake.requests.length).toBe(1);
    }
  });

  test("a mid-stream error object after text: provider_error with the server's message and the text so far, not replayed", async () => {
    const fake = serve(() => fixture("mid-stream-error.sse"));
    const err = await failure(providerFor(fake.url).complete(request()));
    expect(err.code).toBe("provider_error");
    expect(err.message).toContain("The server had an error while processing your request.");
    expect(err.message).toContain("broke after output");
    expect(err.details).toMatchObject({ partial_text: "Working on it", after_output: true });
    expect(fake.requests.length).toBe(1);
  });

  test('OpenRouter mid-stream error with finish_reason "error": provider_error naming the cause', async () => {
    const fake = serve(() => fixture("openrouter-midstream-error.sse"));
    const err = await failure(providerFor(fake.url).complete(request()));
    expect(err.code).toBe("provider_error");
    expect(err.message).toContain("Provider disconnected");
    expect(err.details.partial_text).toBe("Part");
    expect(fake.requests.length).toBe(1);
  });

  test("a server that ignores stream: true and answers one JSON chat.completion still gives the turn", async () => {
    const fake = serve(() => ({
      status: 200,
      body: {
        id: "chatcmpl-1",
        object: "chat.completion",
        choices: [{ index: 0, message: { role: "assistant", content: null, tool_calls: [{ id: "call_j", type: "function", function: { name: "lookup", arguments: '{"q":"x"}' } }] }, finish_reason: "tool_calls" }],
        usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
      },
    }));
    const turn = await providerFor(fake.url).complete(request());
    expect(turn).toStrictEqual({ text: "", tool_calls: [{ id: "call_j", name: "lookup", arguments: { q: "x" } }], stop_reason: "tool_calls", truncated: false, usage: { input_tokens: 3, output_tokens: 4 } });
  });
});

/** DeepSeek's check (api-docs.deepseek.com/guides/thinking_mode): a tool-calling assistant message must carry reasoning_content. */
function deepseekRule(body: any): FakeReply | undefined {
  for (const m of body.messages as any[]) {
    if (m.role === "assistant" && Array.isArray(m.tool_calls) && m.tool_calls.length > 0 && typeof m.reasoning_content !== "string") {
      return { status: 400, body: { error: { message: "The `reasoning_content` in the thinking mode must be passed back to the API.", type: "invalid_request_error", param: null, code: "invalid_request_error" } } };
    }
  }
  return undefined;
}

describe("DeepSeek reasoning_content replay", () => {
  test("a tool loop against a DeepSeek-like server: the turn's reasoning goes back with its assistant messages; a stretch without tool calls sends none", async () => {
    const fake = serve((body, n) => deepseekRule(body) ?? (n === 0 ? fixture("deepseek-thinking-tool-call.sse") : fixture("deepseek-thinking-answer.sse")));
    const p = providerFor(fake.url, { replay_reasoning_content: true });
    // an earlier exchange without tool calls, with reasoning stored
    const earlier = [msg("user", "hello"), msg("assistant", "Hi!", { provider_state: { provider: "openai", data: { reasoning_content: "greet" } } })];
    const first = await p.complete(request({ messages: [...earlier, msg("user", "weather in Lisbon?")] }));
    const assistant = msg("assistant", first.text, { tool_calls: first.tool_calls, provider_state: first.provider_state });
    const history = [...earlier, msg("user", "weather in Lisbon?"), assistant, msg("tool", '{"sky":"clear"}', { tool_call_id: first.tool_calls[0]!.id, name: "forecast" })];
    const second = await p.complete(request({ messages: history }));
    expect(second.text).toBe("Sunny in Lisbon.");
    expect(second.provider_state).toEqual({ provider: "openai", data: { reasoning_content: "The tool answered." } });
    expect(fake.requests[1].messages).toEqual([
      { role: "user", content: "hello" },
      { role: "assistant", content: "Hi!" },
      { role: "user", content: "weather in Lisbon?" },
      {
        role: "assistant",
        content: null,
        reasoning_content: "I'll look up the forecast.",
        tool_calls: [{ id: "call_00_airlockDS01", type: "function", function: { name: "forecast", arguments: '{"city":"Lisbon","days":3}' } }],
      },
      { role: "tool", tool_call_id: "call_00_airlockDS01", content: '{"sky":"clear"}' },
    ]);
    // the next user turn: the tool-calling stretch keeps all its reasoning, the plain one sends none
    const later = [...history, msg("assistant", second.text, { provider_state: second.provider_state }), msg("user", "thanks")];
    await p.complete(request({ messages: later }));
    const sent = fake.requests[2].messages as any[];
    expect(sent.map((m) => m.reasoning_content)).toEqual([undefined, undefined, undefined, "I'll look up the forecast.", undefined, "The tool answered.", undefined]);
    expect(fake.requests.length).toBe(3);
  });

  test("a tool-calling message with no reasoning of ours (another provider's state) sends an empty reasoning_content, accepted", async () => {
    const fake = serve((body) => deepseekRule(body) ?? textChunks("ok"));
    const p = providerFor(fake.url, { replay_reasoning_content: true });
    const calls = [{ id: "call_1", name: "lookup", arguments: {} }];
    const history = [
      msg("user", "q"),
      msg("assistant", "", { tool_calls: calls, provider_state: { provider: "anthropic", data: [{ type: "thinking", thinking: "x", signature: "sig" }] } }),
      msg("tool", "r", { tool_call_id: "call_1", name: "lookup" }),
    ];
    expect((await p.complete(request({ messages: history }))).text).toBe("ok");
    expect(fake.requests[0].messages[1].reasoning_content).toBe("");
  });

  test("a server that is not DeepSeek-like never receives reasoning_content (the field stays stored)", async () => {
    const fake = serve((_b, n) => (n === 0 ? fixture("deepseek-thinking-tool-call.sse") : textChunks("done")));
    const p = providerFor(fake.url); // loopback, no flag: not DeepSeek-like
    const first = await p.complete(request());
    expect(first.provider_state).toEqual({ provider: "openai", data: { reasoning_content: "I'll look up the forecast." } });
    await p.complete(
      request({
        messages: [
          msg("user", "hi"),
          msg("assistant", "", { tool_calls: first.tool_calls, provider_state: first.provider_state }),
          msg("tool", "r", { tool_call_id: first.tool_calls[0]!.id, name: "forecast" }),
        ],
      }),
    );
    expect(JSON.stringify(fake.requests[1])).not.toContain("reasoning_content");
  });

  test("which servers are DeepSeek-like: base_url on deepseek.com, else provider.replay_reasoning_content", () => {
    expect(replaysReasoningContent({ base_url: "https://api.deepseek.com" })).toBe(true);
    expect(replaysReasoningContent({ base_url: "https://api.deepseek.com/v1" })).toBe(true);
    expect(replaysReasoningContent({ base_url: "https://api.openai.com/v1" })).toBe(false);
    expect(replaysReasoningContent({ base_url: "https://deepseek.com.evil.example/v1" })).toBe(false);
    expect(replaysReasoningContent({ base_url: "https://openrouter.ai/api/v1" })).toBe(false);
    expect(replaysReasoningContent({ base_url: "https://openrouter.ai/api/v1", replay_reasoning_content: true })).toBe(true);
    expect(replaysReasoningContent({ base_url: "https://api.deepseek.com", replay_reasoning_content: false })).toBe(false);
    expect(replaysReasoningContent({})).toBe(false);
    // and only our own provider_state is read
    const m = [msg("user", "q"), msg("assistant", "", { tool_calls: [{ id: "c", name: "t", arguments: {} }], provider_state: { provider: "openai-responses", data: { reasoning_content: "not ours" } } })];
    expect(toOpenAIMessages(undefined, m, { replayReasoning: true })[1]).toMatchObject({ reasoning_content: "" });
  });
});

describe("openai retries", () => {
  test("503 with Retry-After as an HTTP date is retried after that wait", async () => {
    const arrivals: number[] = [];
    const fake = serve((_b, n) => {
      arrivals.push(performance.now());
      return n === 0 ? { status: 503, headers: { "retry-after": new Date(Date.now() + 2000).toUTCString() }, body: { error: { message: "busy", type: "server_error" } } } : textChunks("later");
    });
    const turn = await providerFor(fake.url).complete(request());
    expect(turn.text).toBe("later");
    expect(fake.requests.length).toBe(2);
    // HTTP dates have 1 s resolution: the wait is over 1 s; the test backoff alone is 1–5 ms
    expect(arrivals[1]! - arrivals[0]!).toBeGreaterThanOrEqual(900);
  });

  test("529 and an overloaded error before any output are retried", async () => {
    const fake = serve((_b, n) =>
      n === 0
        ? { status: 529, body: { error: { message: "Overloaded", type: "overloaded_error" } } }
        : n === 1
          ? { status: 400, body: { error: { message: "The engine is currently overloaded, please try again later", type: "invalid_request_error" } } }
          : n === 2
            ? { sse: [{ error: { message: "Overloaded", type: "overloaded_error" } }], done: false }
            : textChunks("through"),
    );
    const turn = await providerFor(fake.url, { max_retries: 3 }).complete(request());
    expect(turn.text).toBe("through");
    expect(fake.requests.length).toBe(4);
  });

  test("a Retry-After over the cap ends the retries at once, naming the wait", async () => {
    const fake = serve(() => ({ status: 429, headers: { "retry-after": "3600" }, body: { error: { message: "slow down", type: "requests", code: "rate_limit_exceeded" } } }));
    const err = await failure(providerFor(fake.url, { max_retries: 5 }).complete(request()));
    expect(err.code).toBe("provider_rate_limit");
    expect(err.message).toContain("asked to wait 3600 s");
    expect(fake.requests.length).toBe(1);
  });
});

describe("openai errors that name the cause", () => {
  const page = "<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head><body><h1>Bad Gateway</h1></body></html>\n";

  test("an HTML error page from a proxy: provider_error 'HTML page from <url>' with the status, not retried", async () => {
    const fake = serve(() => ({ status: 502, body: page, headers: { "content-type": "text/html; charset=utf-8" } }));
    const err = await failure(providerFor(fake.url, { max_retries: 3 }).complete(request()));
    expect(err.code).toBe("provider_error");
    expect(err.message).toContain(`HTML page from ${fake.url}/chat/completions (HTTP 502)`);
    expect(err.details).toMatchObject({ retryable: false, status: 502 });
    expect(fake.requests.length).toBe(1);
  });

  test("an HTML page without an HTML content-type, and a captive portal's 200 HTML page, are named the same way", async () => {
    const fake = serve((_b, n) =>
      n === 0
        ? { status: 503, body: page, headers: { "content-type": "text/plain" } }
        : { status: 200, body: page, headers: { "content-type": n === 1 ? "text/html" : "text/plain" } },
    );
    const e1 = await failure(providerFor(fake.url, { max_retries: 3 }).complete(request()));
    expect(e1.message).toContain("HTML page from");
    expect(e1.message).toContain("(HTTP 503)");
    const e2 = await failure(providerFor(fake.url, { max_retries: 3 }).complete(request()));
    expect(e2.message).toContain(`HTML page from ${fake.url}/chat/completions (HTTP 200)`);
    const e3 = await failure(providerFor(fake.url, { max_retries: 3 }).complete(request()));
    expect(e3.message).toContain(`HTML page from ${fake.url}/chat/completions (HTTP 200)`);
    expect(fake.requests.length).toBe(3);
  });

  test("a 404 from a base_url without /v1 says so and suggests the fix", async () => {
    const fake = serve(() => textChunks("never"));
    const bare = fake.url.replace(/\/v1$/, "");
    const err = await failure(providerFor(bare).complete(request()));
    expect(err.code).toBe("provider_error");
    expect(err.message).toContain(`does not end in /v1`);
    expect(err.message).toContain(`Try provider.base_url: ${bare}/v1`);
    expect(fake.requests.length).toBe(0);
  });

  test("a 401 when no key was sent says the key variable is unset, not that a key was refused", async () => {
    const fake = serve(() => ({ status: 401, body: { error: { message: "Missing bearer token", type: "invalid_request_error" } } }));
    const err = await failure(providerFor(fake.url, { api_key_env: "LOCAL_LLM_KEY" }).complete(request()));
    expect(err.code).toBe("provider_auth");
    expect(err.message).toContain("the environment variable LOCAL_LLM_KEY is unset, so none was sent");
    expect(err.message).not.toContain("refused");
    // with the variable set, a 401 is a refused key
    const err2 = await failure(providerFor(fake.url, { api_key_env: "LOCAL_LLM_KEY" }, { LOCAL_LLM_KEY: "k" }).complete(request()));
    expect(err2.message).toContain("refused the API key");
  });
});
