/**
 * DeepSeek thinking mode through the real runtime and agent loop: a fake DeepSeek-like server that,
 * like DeepSeek's API, answers 400 when a tool-calling assistant message comes back without its
 * `reasoning_content`. The loop stores the turn's reasoning (`provider_state`) and the openai provider
 * sends it back, so the tool loop and the next user turn go through.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { startFakeOpenAI, type FakeOpenAI, type FakeReply } from "../fixtures/fake-openai.ts";
import { harnessSse, startHarness, type Harness } from "../harness.ts";

const FIXTURES = join(import.meta.dir, "../fixtures/provider-streams/openai");

let h: Harness | undefined;
let fake: FakeOpenAI | undefined;
afterEach(async () => {
  await h?.close();
  await fake?.close();
  h = fake = undefined;
});

/** A fixture's bytes, one SSE event per network write. */
function fixture(name: string): FakeReply {
  const text = readFileSync(join(FIXTURES, name), "utf8");
  return { sse: text.split(/(?<=\n\n)/).map((raw) => ({ raw })), done: false };
}

/** DeepSeek's 400 (api-docs.deepseek.com/guides/thinking_mode) when a tool-calling message lacks reasoning_content. */
function deepseekRule(body: any): FakeReply | undefined {
  const bad = (body.messages as any[]).some((m) => m.role === "assistant" && m.tool_calls?.length && typeof m.reasoning_content !== "string");
  return bad ? { status: 400, body: { error: { message: "The `reasoning_content` in the thinking mode must be passed back to the API.", type: "invalid_request_error", code: "invalid_request_error" } } } : undefined;
}

describe("DeepSeek thinking mode through the agent loop", () => {
  test("the tool loop and the next user turn send the stored reasoning back; no 400", async () => {
    fake = startFakeOpenAI((body, n) => deepseekRule(body) ?? (n === 0 ? fixture("deepseek-thinking-tool-call.sse") : fixture("deepseek-thinking-answer.sse")));
    h = await startHarness({ config: { provider: { name: "openai", base_url: fake.url, model: "deepseek-v4-flash", replay_reasoning_content: true, max_retries: 0 }, mode: "autonomous" } });
    const s = await h.createSession();
    for (const message of ["weather in Lisbon?", "thanks"]) {
      const sse = await harnessSse(h, `/sessions/${s.id}/reply`, { method: "POST", json: { message } });
      const fin = await sse.waitFor((e) => e.event === "turn_finished");
      await sse.ended;
      expect({ status: fin.data.status, error: fin.data.error ?? null }).toEqual({ status: "completed", error: null });
      expect(fin.data.answer).toBe("Sunny in Lisbon.");
    }
    expect(fake.requests.length).toBe(3);
    // the tool call's assistant message carried its reasoning in the loop's second request and in the next turn's
    for (const req of fake.requests.slice(1)) {
      const call = (req.messages as any[]).find((m) => m.role === "assistant" && m.tool_calls?.length);
      expect(call.reasoning_content).toBe("I'll look up the forecast.");
    }
    // stored with the assistant messages
    const stored = (await h.rt.store.listMessages(s.id)).filter((m) => m.role === "assistant");
    expect(stored[0]!.provider_state).toEqual({ provider: "openai", data: { reasoning_content: "I'll look up the forecast." } });
    expect(stored[1]!.provider_state).toEqual({ provider: "openai", data: { reasoning_content: "The tool answered." } });
  });
});
