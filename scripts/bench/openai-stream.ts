/**
 * @module scripts/bench/openai-stream
 * The openai adapter's overhead per streamed chunk, against a floor of `JSON.parse` of the same chunk
 * payloads. One synthetic turn of realistic shape (reasoning deltas, answer text, two tool calls whose
 * arguments are interleaved fragments, the finish chunk and a usage-only chunk, `[DONE]`) is serialized as
 * SSE bytes once, then:
 * - floor: `JSON.parse` of every data payload (already cut out of the bytes);
 * - adapter: `readChatStream` (SSE framing, UTF-8 decoding, `[DONE]`, `JSON.parse`) + `ChunkAssembler`
 *   (deltas, calls by index, usage) + `finish()` (arguments parsed), in process, the bytes fed as a
 *   ReadableStream one SSE event per read (each chunk its own network read, the worst case) and in 16 KiB reads;
 * - loopback: the whole provider (`createOpenAIProvider(...).complete`) against a local Bun.serve that
 *   answers the same bytes, per chunk (includes the HTTP request, the SDK and the socket);
 * - sdk_stream (reference: how the adapter read streams before, through the SDK's own `Stream` iterator):
 *   the same request over loopback, chunks iterated from the SDK into the same `ChunkAssembler`.
 * Prints JSON: medians over the rounds, µs per chunk, and each adapter figure's ratio to the floor.
 * Usage: bun scripts/bench/openai-stream.ts [chunks=2000] [rounds=30]
 */
import OpenAI from "openai";
import { ProviderConfig } from "../../src/config/schema.ts";
import { ChunkAssembler } from "../../src/agent/providers/openai-assemble.ts";
import { createOpenAIProvider, readChatStream } from "../../src/agent/providers/openai.ts";

const CHUNKS = Number(process.argv[2] ?? 2000);
const ROUNDS = Number(process.argv[3] ?? 30);

/** The data payloads of one turn of about `n` chunks. */
function payloads(n: number): string[] {
  const base = { id: "chatcmpl-bench", object: "chat.completion.chunk", created: 1767225600, model: "bench-model", system_fingerprint: "fp_bench" };
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) => JSON.stringify({ ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], usage: null });
  const out = [chunk({ role: "assistant", content: null, reasoning_content: "" })];
  const reasoning = Math.floor(n * 0.3);
  const text = Math.floor(n * 0.4);
  const calls = n - reasoning - text - 5;
  for (let i = 0; i < reasoning; i++) out.push(chunk({ content: null, reasoning_content: ` thought ${i}` }));
  for (let i = 0; i < text; i++) out.push(chunk({ content: ` word${i}` }));
  out.push(chunk({ tool_calls: [{ index: 0, id: "call_a", type: "function", function: { name: "read_file", arguments: "" } }] }));
  out.push(chunk({ tool_calls: [{ index: 1, id: "call_b", type: "function", function: { name: "write_file", arguments: "" } }] }));
  const half = Math.floor(calls / 2);
  const fragments = (k: number) => {
    const parts = ['{"path":"src/', ...Array.from({ length: Math.max(0, k - 2) }, (_, i) => `p${i}/`), 'x.ts"}'];
    return parts;
  };
  const a = fragments(half);
  const b = fragments(calls - half);
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (a[i]) out.push(chunk({ tool_calls: [{ index: 0, function: { arguments: a[i] } }] }));
    if (b[i]) out.push(chunk({ tool_calls: [{ index: 1, function: { arguments: b[i] } }] }));
  }
  out.push(chunk({}, "tool_calls"));
  out.push(JSON.stringify({ ...base, choices: [], usage: { prompt_tokens: 5000, completion_tokens: n, total_tokens: 5000 + n, prompt_tokens_details: { cached_tokens: 4096 }, completion_tokens_details: { reasoning_tokens: reasoning } } }));
  return out;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

const enc = new TextEncoder();
const data = payloads(CHUNKS);
const events = [...data.map((d) => `data: ${d}\n\n`), "data: [DONE]\n\n"].map((e) => enc.encode(e));
const all = new Uint8Array(events.reduce((n, e) => n + e.length, 0));
{
  let off = 0;
  for (const e of events) {
    all.set(e, off);
    off += e.length;
  }
}
const reads16k: Uint8Array[] = [];
for (let i = 0; i < all.length; i += 16384) reads16k.push(all.subarray(i, i + 16384));

function streamOf(parts: Uint8Array[]): ReadableStream<Uint8Array> {
  let i = 0;
  return new ReadableStream({
    pull(c) {
      if (i < parts.length) c.enqueue(parts[i++]!);
      else c.close();
    },
  });
}

function floorOnce(): number {
  const t = performance.now();
  let sink = 0;
  for (const d of data) sink += (JSON.parse(d) as { created: number }).created & 1;
  const dt = performance.now() - t;
  if (sink < 0) console.log(sink);
  return dt;
}

async function adapterOnce(parts: Uint8Array[]): Promise<number> {
  const t = performance.now();
  const asm = new ChunkAssembler(() => {});
  await readChatStream(streamOf(parts), asm);
  const turn = asm.finish();
  const dt = performance.now() - t;
  if (turn.tool_calls.length !== 2 || !asm.done) throw new Error("bench stream was not assembled");
  return dt;
}

const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response(all, { headers: { "content-type": "text/event-stream" } }) });
const provider = createOpenAIProvider(ProviderConfig.parse({ name: "openai", base_url: `http://127.0.0.1:${server.port}/v1`, model: "bench-model", max_retries: 0 }), { configDir: ".", env: {} });

async function loopbackOnce(): Promise<number> {
  const t = performance.now();
  const turn = await provider.complete({
    session: { id: "ses_bench", parent_session_id: null, spawn_index: null },
    messages: [{ id: "m", session_id: "ses_bench", turn_id: null, role: "user", content: "go", created_at: "2026-01-01T00:00:00Z" }],
    tools: [],
    signal: new AbortController().signal,
    onDelta: () => {},
  });
  const dt = performance.now() - t;
  if (turn.tool_calls.length !== 2) throw new Error("bench turn lacks its calls");
  return dt;
}

const sdk = new OpenAI({ apiKey: "k", baseURL: `http://127.0.0.1:${server.port}/v1`, maxRetries: 0, organization: null, project: null, logLevel: "off" });
async function sdkStreamOnce(): Promise<number> {
  const t = performance.now();
  const asm = new ChunkAssembler(() => {});
  const stream = await sdk.chat.completions.create({ model: "bench-model", messages: [{ role: "user", content: "go" }], stream: true });
  for await (const c of stream) asm.push(c as any);
  const turn = asm.finish();
  const dt = performance.now() - t;
  if (turn.tool_calls.length !== 2) throw new Error("sdk turn lacks its calls");
  return dt;
}

// warm up every path (JIT)
for (let i = 0; i < 5; i++) {
  floorOnce();
  await adapterOnce(events);
  await adapterOnce(reads16k);
  await loopbackOnce();
  await sdkStreamOnce();
}
const floor: number[] = [];
const perEvent: number[] = [];
const per16k: number[] = [];
const loop: number[] = [];
const sdkLoop: number[] = [];
for (let r = 0; r < ROUNDS; r++) {
  floor.push(floorOnce());
  perEvent.push(await adapterOnce(events));
  per16k.push(await adapterOnce(reads16k));
  loop.push(await loopbackOnce());
  sdkLoop.push(await sdkStreamOnce());
}
server.stop(true);

const n = data.length;
const us = (ms: number) => Math.round((ms * 1000 * 1000) / n) / 1000;
const floorUs = us(median(floor));
const out = {
  chunks: n,
  bytes: all.length,
  rounds: ROUNDS,
  floor_json_parse_us_per_chunk: floorUs,
  adapter_us_per_chunk_one_read_per_event: us(median(perEvent)),
  adapter_us_per_chunk_16k_reads: us(median(per16k)),
  loopback_http_us_per_chunk: us(median(loop)),
  ratio_one_read_per_event: Math.round((us(median(perEvent)) / floorUs) * 100) / 100,
  ratio_16k_reads: Math.round((us(median(per16k)) / floorUs) * 100) / 100,
  ratio_loopback_http: Math.round((us(median(loop)) / floorUs) * 100) / 100,
  reference_sdk_stream_loopback_us_per_chunk: us(median(sdkLoop)),
  reference_ratio_sdk_stream_loopback: Math.round((us(median(sdkLoop)) / floorUs) * 100) / 100,
};
console.log(JSON.stringify(out, null, 2));
