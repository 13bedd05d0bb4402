/**
 * @module scripts/bench/anthropic
 * The Anthropic adapter's latency, printed as JSON:
 * - `first_tool_call`: time from the server's write of the last bytes of a tool call (its
 *   `content_block_stop`, with `message_delta` and `message_stop` in the same write, as the API sends
 *   them back to back) to the call being in the caller's hands: `provider.complete()` resolved with it.
 *   Floor: the same bytes read by a bare SSE reader (fetch, TextDecoder, split on blank lines,
 *   JSON.parse, the tool input joined and parsed at `content_block_stop`). Both over real HTTP on
 *   loopback to an in-process Bun.serve; runs alternate adapter / floor so load hits both alike.
 * - `per_chunk`: a 2000-event text stream sent in one write, request to turn, adapter vs floor; the
 *   difference divided by the events is the adapter's cost per streamed chunk.
 * Usage: `bun scripts/bench/anthropic.ts [--runs N]`.
 */
import { ProviderConfig } from "../../src/config/schema.ts";
import { createAnthropicProvider } from "../../src/agent/providers/anthropic.ts";
import type { ModelRequest } from "../../src/agent/providers/provider.ts";

const argRuns = process.argv.indexOf("--runs");
const RUNS = argRuns > 0 ? Number(process.argv[argRuns + 1]) : 300;
const CHUNK_EVENTS = 2000;

const sse = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

/** The tool-call response in two writes: everything up to the tool's last input fragment, then the tool's end + message end. */
function toolCallWrites(): [string, string] {
  const input = { path: "src/agent/providers/anthropic.ts", edits: Array.from({ length: 20 }, (_, i) => ({ line: i * 7, text: `replacement line ${i} with "quotes" and \\ backslashes` })) };
  const json = JSON.stringify(input);
  let head = sse("message_start", { message: { id: "msg_b", type: "message", role: "assistant", model: "bench", content: [], stop_reason: null, usage: { input_tokens: 5000, cache_read_input_tokens: 4000, cache_creation_input_tokens: 0, output_tokens: 1 } } });
  head += sse("content_block_start", { index: 0, content_block: { type: "text", text: "" } });
  for (const w of "I will apply the edits to the adapter now.".split(" ")) head += sse("content_block_delta", { index: 0, delta: { type: "text_delta", text: `${w} ` } });
  head += sse("content_block_stop", { index: 0 });
  head += sse("content_block_start", { index: 1, content_block: { type: "tool_use", id: "toolu_bench", name: "developer__edit_file", input: {} } });
  head += sse("content_block_delta", { index: 1, delta: { type: "input_json_delta", partial_json: "" } });
  for (let i = 0; i < json.length; i += 24) head += sse("content_block_delta", { index: 1, delta: { type: "input_json_delta", partial_json: json.slice(i, i + 24) } });
  const tail = sse("content_block_stop", { index: 1 }) + sse("message_delta", { delta: { stop_reason: "tool_use", stop_sequence: null }, usage: { output_tokens: 400 } }) + sse("message_stop", {});
  return [head, tail];
}

function textStream(): string {
  let s = sse("message_start", { message: { id: "msg_c", type: "message", role: "assistant", model: "bench", content: [], stop_reason: null, usage: { input_tokens: 10, output_tokens: 1 } } });
  s += sse("content_block_start", { index: 0, content_block: { type: "text", text: "" } });
  for (let i = 0; i < CHUNK_EVENTS; i++) s += sse("content_block_delta", { index: 0, delta: { type: "text_delta", text: `tok${i} ` } });
  s += sse("content_block_stop", { index: 0 });
  s += sse("message_delta", { delta: { stop_reason: "end_turn" }, usage: { output_tokens: CHUNK_EVENTS } });
  return s + sse("message_stop", {});
}

const [HEAD, TAIL] = toolCallWrites();
/** Which response the SDK's requests get (the floor names its own in the query). */
let phase: "tool" | "text" = "tool";
const TEXT = textStream();
const enc = new TextEncoder();
/** performance.now() at the tail write of the current tool-call response. */
let tailWrittenAt = 0;

const server = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  idleTimeout: 0,
  async fetch(req) {
    await req.text();
    const kind = new URL(req.url).searchParams.get("kind") ?? phase; // the SDK's requests carry no query: the current phase
    const stream = new ReadableStream({
      async start(c) {
        if (kind === "text") {
          c.enqueue(enc.encode(TEXT));
          c.close();
          return;
        }
        c.enqueue(enc.encode(HEAD));
        await Bun.sleep(15); // let the reader take in everything before the tool's end
        tailWrittenAt = performance.now();
        c.enqueue(enc.encode(TAIL));
        c.close();
      },
    });
    return new Response(stream, { headers: { "content-type": "text/event-stream" } });
  },
});
const base = `http://127.0.0.1:${server.port}`;

function adapter(kind: "tool" | "text") {
  const p = createAnthropicProvider(ProviderConfig.parse({ name: "anthropic", base_url: base, model: "bench" }), { configDir: ".", env: {} });
  const req = (): ModelRequest => ({
    session: { id: "ses_bench", parent_session_id: null, spawn_index: null },
    system: "You are a bench.",
    messages: [{ id: "m1", session_id: "ses_bench", turn_id: null, role: "user", content: "go", created_at: "2026-01-01T00:00:00Z" }],
    tools: [{ name: "developer__edit_file", description: "edit", parameters: { type: "object" } }],
    signal: new AbortController().signal,
  });
  return async (): Promise<number> => {
    const t = await p.complete(req());
    if (kind === "tool" && t.tool_calls.length !== 1) throw new Error("no tool call");
    return performance.now();
  };
}

/** The floor: a bare SSE reader over fetch; returns performance.now() when the tool call (or the text turn) is assembled. */
async function floor(kind: "tool" | "text"): Promise<number> {
  const res = await fetch(`${base}/v1/messages?kind=${kind}`, { method: "POST", body: "{}", headers: { "content-type": "application/json" } });
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let buf = "";
  let json = "";
  let text = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let i: number;
    while ((i = buf.indexOf("\n\n")) >= 0) {
      const evText = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const line = evText.split("\n").find((l) => l.startsWith("data: "));
      if (!line) continue;
      const ev = JSON.parse(line.slice(6));
      if (ev.type === "content_block_delta" && ev.delta.type === "input_json_delta") json += ev.delta.partial_json;
      if (ev.type === "content_block_delta" && ev.delta.type === "text_delta") text += ev.delta.text;
      if (kind === "tool" && ev.type === "content_block_stop" && ev.index === 1) {
        JSON.parse(json);
        const t = performance.now();
        await reader.cancel();
        return t;
      }
      if (kind === "text" && ev.type === "message_stop") return performance.now();
    }
  }
  throw new Error("stream ended early");
}

function stats(xs: number[]) {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
  return { median_ms: +q(0.5).toFixed(3), p90_ms: +q(0.9).toFixed(3), min_ms: +s[0]!.toFixed(3) };
}

async function main() {
  const adapterTool = adapter("tool");
  const adapterText = adapter("text");
  const a: number[] = [];
  const f: number[] = [];
  // warm-up
  for (let i = 0; i < 20; i++) {
    await adapterTool();
    await floor("tool");
  }
  for (let i = 0; i < RUNS; i++) {
    if (i % 2 === 0) {
      a.push((await adapterTool()) - tailWrittenAt);
      f.push((await floor("tool")) - tailWrittenAt);
    } else {
      f.push((await floor("tool")) - tailWrittenAt);
      a.push((await adapterTool()) - tailWrittenAt);
    }
  }
  phase = "text";
  const ca: number[] = [];
  const cf: number[] = [];
  for (let i = 0; i < 5; i++) {
    await adapterText();
    await floor("text");
  }
  const chunkRuns = Math.max(10, Math.floor(RUNS / 10));
  for (let i = 0; i < chunkRuns; i++) {
    let t0 = performance.now();
    ca.push((await adapterText()) - t0);
    t0 = performance.now();
    cf.push((await floor("text")) - t0);
  }
  server.stop(true);
  const fa = stats(a);
  const ff = stats(f);
  const pa = stats(ca);
  const pf = stats(cf);
  console.log(
    JSON.stringify(
      {
        first_tool_call: {
          runs: RUNS,
          response_bytes: HEAD.length + TAIL.length,
          adapter: fa,
          bare_sse_floor: ff,
          ratio_of_medians: +(fa.median_ms / ff.median_ms).toFixed(2),
        },
        per_chunk: {
          runs: chunkRuns,
          events: CHUNK_EVENTS,
          adapter: pa,
          bare_sse_floor: pf,
          adapter_us_per_chunk: +(((pa.median_ms - pf.median_ms) * 1000) / CHUNK_EVENTS).toFixed(2),
          ratio_of_medians: +(pa.median_ms / pf.median_ms).toFixed(2),
        },
      },
      null,
      2,
    ),
  );
}

await main();
