/**
 * The local fake providers enforce the real APIs' tool-call pairing rules (HTTP 400), so tests against
 * them catch a history the real servers would refuse.
 */
import { expect, test } from "bun:test";
import { startFakeAnthropic } from "../fixtures/fake-anthropic.ts";
import { startFakeOpenAI, textChunks } from "../fixtures/fake-openai.ts";

async function post(url: string, body: unknown): Promise<number> {
  const r = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  await r.text();
  return r.status;
}

test("fake OpenAI answers 400 when an assistant's tool_calls are not followed by a tool message for each id", async () => {
  const f = startFakeOpenAI(() => textChunks("ok"));
  try {
    const call = { id: "c1", type: "function", function: { name: "t", arguments: "{}" } };
    const u = `${f.url}/chat/completions`;
    expect(await post(u, { model: "m", messages: [{ role: "user", content: "a" }, { role: "assistant", content: null, tool_calls: [call] }, { role: "user", content: "b" }] })).toBe(400);
    expect(await post(u, { model: "m", messages: [{ role: "user", content: "a" }, { role: "tool", tool_call_id: "c1", content: "x" }] })).toBe(400);
    expect(
      await post(u, { model: "m", messages: [{ role: "user", content: "a" }, { role: "assistant", content: null, tool_calls: [call] }, { role: "tool", tool_call_id: "c1", content: "x" }, { role: "user", content: "b" }] }),
    ).toBe(200);
  } finally {
    await f.close();
  }
});

test("fake Anthropic answers 400 for a tool_use without a tool_result in the next user message, or roles that do not alternate", async () => {
  const f = startFakeAnthropic(() => []);
  try {
    const u = `${f.url}/v1/messages`;
    const use = { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "t", input: {} }] };
    expect(await post(u, { model: "m", max_tokens: 5, messages: [{ role: "user", content: "a" }, use, { role: "user", content: [{ type: "text", text: "b" }] }] })).toBe(400);
    expect(await post(u, { model: "m", max_tokens: 5, messages: [{ role: "user", content: "a" }, { role: "user", content: "b" }] })).toBe(400);
    expect(
      await post(u, { model: "m", max_tokens: 5, messages: [{ role: "user", content: "a" }, use, { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "x" }] }] }),
    ).toBe(200);
  } finally {
    await f.close();
  }
});
