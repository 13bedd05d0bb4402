/**
 * Long sessions with Anthropic extended thinking (issue 19): shrinking what is sent must never send a
 * thinking block after a changed prefix. The local Anthropic server enforces, besides its own rules
 * (signatures over the same text: test/fixtures/fake-anthropic.ts), the preserved-thinking rule of
 * newer models (Anthropic's extended-thinking docs, "Preserving thinking blocks"): every thinking block
 * sent back comes after exactly the messages the request that produced it had; and it rejects requests
 * over its token limit ("prompt is too long"). A tool loop far past the limit completes.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { anthropicMessage, startFakeAnthropic, type AnthropicItem, type FakeAnthropic } from "../fixtures/fake-anthropic.ts";
import { startHarness, type Harness } from "../harness.ts";

let h: Harness | undefined;
let fake: FakeAnthropic | undefined;
afterEach(async () => {
  await h?.close();
  await fake?.close();
  h = fake = undefined;
});

const ev = (type: string, data: Record<string, unknown>): AnthropicItem => ({ event: type, data: { type, ...data } });

/** One streamed message: a thinking block with its signature, then a tool_use (or a text). */
function thinkingThen(n: number, inputTokens: number, then: { text: string } | { tool: { id: string; name: string; input: unknown } }): AnthropicItem[] {
  const json = "tool" in then ? JSON.stringify(then.tool.input) : "";
  return [
    ev("message_start", { message: { id: `msg_${n}`, type: "message", role: "assistant", model: "claude-fake", content: [], stop_reason: null, usage: { input_tokens: inputTokens, output_tokens: 1 } } }),
    ev("content_block_start", { index: 0, content_block: { type: "thinking", thinking: "", signature: "" } }),
    ev("content_block_delta", { index: 0, delta: { type: "thinking_delta", thinking: `step ${n}: read the next file` } }),
    ev("content_block_delta", { index: 0, delta: { type: "signature_delta", signature: `sig-${n}` } }),
    ev("content_block_stop", { index: 0 }),
    ...("tool" in then
      ? [
          ev("content_block_start", { index: 1, content_block: { type: "tool_use", id: then.tool.id, name: then.tool.name, input: {} } }),
          ev("content_block_delta", { index: 1, delta: { type: "input_json_delta", partial_json: json } }),
        ]
      : [ev("content_block_start", { index: 1, content_block: { type: "text", text: "" } }), ev("content_block_delta", { index: 1, delta: { type: "text_delta", text: then.text } })]),
    ev("content_block_stop", { index: 1 }),
    ev("message_delta", { delta: { stop_reason: "tool" in then ? "tool_use" : "end_turn" }, usage: { output_tokens: 30 } }),
    ev("message_stop", {}),
  ];
}

const LIMIT = 8_000;
const CALLS = 40;
const tokensOf = (body: any): number => Math.ceil(JSON.stringify({ system: body.system, messages: body.messages, tools: body.tools ?? [] }).length / 3);

describe("long sessions with Anthropic thinking", () => {
  test("a thinking tool loop far past the context completes; no thinking block is ever sent after a changed prefix", async () => {
    /** signature → the messages of the request whose reply carried it (what must precede it, unchanged). */
    const prefixes = new Map<string, string>();
    const violations: string[] = [];
    let calls = 0;
    let summaries = 0;
    let withThinking = 0;
    fake = startFakeAnthropic((body) => {
      const tokens = tokensOf(body);
      if (tokens > LIMIT) {
        violations.push(`over the limit: ${tokens}`);
        return { status: 400, body: { type: "error", error: { type: "invalid_request_error", message: `prompt is too long: ${tokens} tokens > ${LIMIT} maximum` } } };
      }
      const msgs: any[] = body.messages;
      for (let i = 0; i < msgs.length; i++) {
        if (msgs[i].role !== "assistant" || !Array.isArray(msgs[i].content)) continue;
        for (const b of msgs[i].content) {
          if (b.type !== "thinking") continue;
          const want = prefixes.get(b.signature);
          if (want !== JSON.stringify(msgs.slice(0, i))) violations.push(`messages.${i}: thinking ${b.signature} sent after a changed prefix`);
        }
      }
      if (violations.length) return { status: 400, body: { type: "error", error: { type: "invalid_request_error", message: violations.at(-1) } } };
      if (!body.tools?.length) {
        summaries++;
        return anthropicMessage([{ text: "The agent read data files one by one; all reads succeeded." }], { input_tokens: tokens });
      }
      if (body.thinking) withThinking++;
      const n = calls++;
      prefixes.set(`sig-${n}`, JSON.stringify(msgs));
      if (n >= CALLS) return thinkingThen(n, tokens, { text: `read ${CALLS} files` });
      return thinkingThen(n, tokens, { tool: { id: `toolu_${n}`, name: "developer__read_file", input: { path: `d${n % 4}.txt` } } });
    });
    const files = Object.fromEntries(Array.from({ length: 4 }, (_, i) => [`d${i}.txt`, `data ${i} ${"0123456789abcdef".repeat(90)}`]));
    h = await startHarness({
      config: {
        provider: { name: "anthropic", base_url: fake.url, model: "claude-fake", thinking_budget_tokens: 1024, context_tokens: LIMIT, max_retries: 0 },
        mode: "autonomous",
        limits: { max_iterations: 100 },
      },
      workspaceFiles: files,
    });
    const s = await h.createSession();
    const r = await h.rt.runTurn(s.id, "read the data files one at a time");
    expect(violations).toEqual([]);
    expect(r.error).toBeNull();
    expect(r).toMatchObject({ status: "completed", answer: `read ${CALLS} files`, tool_calls: CALLS });
    expect(summaries).toBeGreaterThan(0);
    expect(fake.requests.filter((b) => JSON.stringify(b.messages).includes("[tool output elided: ")).length).toBeGreaterThan(0);
    // thinking was on, and stayed on wherever its blocks could go back unchanged
    expect(withThinking).toBeGreaterThan(CALLS / 2);
    // the stored messages keep their thinking state
    const stored = (await h.rt.store.listMessages(s.id)).filter((m) => m.role === "assistant");
    expect(stored.every((m) => m.provider_state?.provider === "anthropic")).toBe(true);
  }, 300_000);
});
