/**
 * A real turn (loop, gate, tools, SQLite store) against a local Anthropic server that enforces the
 * extended-thinking rules: thinking blocks with signatures, stored on the assistant messages
 * (`provider_state`), go back unchanged in every request of the tool loop, so no 400 comes from what
 * airlock stored. Anthropic's extended-thinking docs, "Preserving thinking blocks".
 */
import { afterEach, describe, expect, test } from "bun:test";
import { startFakeAnthropic, type AnthropicItem, type FakeAnthropic } from "../fixtures/fake-anthropic.ts";
import { harnessSse, startHarness, type Harness } from "../harness.ts";

let h: Harness | undefined;
let fake: FakeAnthropic | undefined;
afterEach(async () => {
  await h?.close();
  await fake?.close();
  h = fake = undefined;
});

const ev = (type: string, data: Record<string, unknown>): AnthropicItem => ({ event: type, data: { type, ...data } });

/** A streamed message: one thinking block (thinking_delta fragments + signature_delta), then text or a tool_use. */
function thinkingThen(n: number, then: { text: string } | { tool: { id: string; name: string; input: unknown } }): AnthropicItem[] {
  const json = "tool" in then ? JSON.stringify(then.tool.input) : "";
  return [
    ev("message_start", { message: { id: `msg_${n}`, type: "message", role: "assistant", model: "claude-fake", content: [], stop_reason: null, usage: { input_tokens: 100 + n, cache_read_input_tokens: 50 * n, cache_creation_input_tokens: 0, output_tokens: 1 } } }),
    ev("content_block_start", { index: 0, content_block: { type: "thinking", thinking: "", signature: "" } }),
    ev("content_block_delta", { index: 0, delta: { type: "thinking_delta", thinking: `step ${n}: ` } }),
    ev("ping", {}),
    ev("content_block_delta", { index: 0, delta: { type: "thinking_delta", thinking: "decide what to do next" } }),
    ev("content_block_delta", { index: 0, delta: { type: "signature_delta", signature: `c2lnLXN0ZXAt${n}` } }),
    ev("content_block_stop", { index: 0 }),
    ...("tool" in then
      ? [
          ev("content_block_start", { index: 1, content_block: { type: "tool_use", id: then.tool.id, name: then.tool.name, input: {} } }),
          ev("content_block_delta", { index: 1, delta: { type: "input_json_delta", partial_json: "" } }),
          ev("content_block_delta", { index: 1, delta: { type: "input_json_delta", partial_json: json.slice(0, 5) } }),
          ev("content_block_delta", { index: 1, delta: { type: "input_json_delta", partial_json: json.slice(5) } }),
        ]
      : [ev("content_block_start", { index: 1, content_block: { type: "text", text: "" } }), ev("content_block_delta", { index: 1, delta: { type: "text_delta", text: then.text } })]),
    ev("content_block_stop", { index: 1 }),
    ev("message_delta", { delta: { stop_reason: "tool" in then ? "tool_use" : "end_turn" }, usage: { output_tokens: 40 } }),
    ev("message_stop", {}),
  ];
}

describe("loop with the anthropic provider and extended thinking", () => {
  test("two tool calls then an answer: every request carries the earlier thinking unchanged and the thinking-enforcing server accepts it", async () => {
    fake = startFakeAnthropic((_body, n) =>
      n === 0
        ? thinkingThen(0, { tool: { id: "toolu_r1", name: "developer__read_file", input: { path: "notes.txt" } } })
        : n === 1
          ? thinkingThen(1, { tool: { id: "toolu_r2", name: "developer__read_file", input: { path: "more.txt" } } })
          : thinkingThen(2, { text: "both files read" }),
    );
    h = await startHarness({
      config: { provider: { name: "anthropic", base_url: fake.url, model: "claude-fake", thinking_budget_tokens: 1024, max_retries: 0 }, mode: "autonomous" },
      workspaceFiles: { "notes.txt": "first", "more.txt": "second" },
    });
    const s = await h.createSession();
    const sse = await harnessSse(h, `/sessions/${s.id}/reply`, { method: "POST", json: { message: "read both" } });
    const fin = await sse.waitFor((e) => e.event === "turn_finished");
    await sse.ended;
    expect(fin.data).toMatchObject({ status: "completed", answer: "both files read" });
    expect(fake.requests.length).toBe(3);
    const last = fake.requests[2];
    expect(last.thinking).toEqual({ type: "enabled", budget_tokens: 1024 });
    const assistants = last.messages.filter((m: any) => m.role === "assistant");
    expect(assistants.map((m: any) => m.content.map((b: any) => b.type))).toEqual([
      ["thinking", "tool_use"],
      ["thinking", "tool_use"],
    ]);
    expect(assistants[0].content[0]).toEqual({ type: "thinking", thinking: "step 0: decide what to do next", signature: "c2lnLXN0ZXAt0" });
    expect(assistants[1].content[0]).toEqual({ type: "thinking", thinking: "step 1: decide what to do next", signature: "c2lnLXN0ZXAt1" });
    expect(assistants[1].content[1]).toEqual({ type: "tool_use", id: "toolu_r2", name: "developer__read_file", input: { path: "more.txt" } });
    const results = last.messages.flatMap((m: any) => m.content).filter((b: any) => b.type === "tool_result");
    expect(results.map((r: any) => r.tool_use_id)).toEqual(["toolu_r1", "toolu_r2"]);
    // the store kept the blocks (provider_state) on the assistant messages
    const got = (await (await h.api(`/sessions/${s.id}`)).json()) as any;
    expect(got.messages.map((m: any) => m.role)).toEqual(["user", "assistant", "tool", "assistant", "tool", "assistant"]);
  });
});
