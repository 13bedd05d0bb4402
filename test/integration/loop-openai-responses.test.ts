/**
 * Turns over real HTTP against a local Responses server (test/fixtures/fake-openai-responses.ts, which
 * refuses what the real API refuses with `store: false`): the model reasons and runs a shell command
 * through code execution, then answers; the reasoning item is stored with the assistant message and,
 * read back from the store, given back unchanged in the next turn's requests.
 */
import { afterEach, expect, test } from "bun:test";
import { fixture, startFakeResponses, type FakeResponses } from "../fixtures/fake-openai-responses.ts";
import { harnessSse, startHarness, type Harness } from "../harness.ts";

let h: Harness | undefined;
let fake: FakeResponses | undefined;
afterEach(async () => {
  await h?.close();
  await fake?.close();
  h = fake = undefined;
});

async function reply(s: { id: string }, message: string) {
  const sse = await harnessSse(h!, `/sessions/${s.id}/reply`, { method: "POST", json: { message } });
  const fin = await sse.waitFor((e) => e.event === "turn_finished");
  await sse.ended;
  return { fin, events: sse.events };
}

test("the stored reasoning item goes back unchanged, before its call, in the next turn too", async () => {
  fake = startFakeResponses((body, n) => {
    if (n === 0) return { sse: fixture("shell-call.1.sse") };
    if (n === 1) return { sse: fixture("shell-call.2.sse") };
    return { sse: fixture("reasoning-tool-loop.3.sse") };
  });
  h = await startHarness({ config: { provider: { name: "openai-responses", base_url: fake.url, model: "gpt-fake-reasoner" }, mode: "autonomous" } });
  const s = await h.createSession();

  const first = await reply(s, "run the shell");
  expect(first.fin.data).toMatchObject({ status: "completed", answer: "The shell printed responses-e2e-42." });
  const got = (await (await h.api(`/sessions/${s.id}`)).json()) as any;
  expect(got.messages.map((m: any) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
  const stored = got.messages[1].provider_state;
  expect(stored.provider).toBe("openai-responses");
  expect(stored.data.items.map((i: any) => i.type)).toEqual(["reasoning", "function_call"]);
  expect(stored.data.items[0]).toMatchObject({ id: "rs_e2e", encrypted_content: "enc:e2e:final:c2hlbGw=" });

  const second = await reply(s, "thanks, and the weather?");
  expect(second.fin.data.status).toBe("completed");
  expect(fake.requests).toHaveLength(3);
  const input = fake.requests[2].input as any[];
  expect(input.map((i) => i.type)).toEqual(["message", "reasoning", "function_call", "function_call_output", "message", "message"]);
  expect(input[1]).toEqual({ type: "reasoning", encrypted_content: "enc:e2e:final:c2hlbGw=", summary: [{ type: "summary_text", text: "**Running a shell command**" }] });
  expect(input[4]).toEqual({ type: "message", role: "assistant", content: [{ type: "output_text", text: "The shell printed responses-e2e-42." }] });
  expect(fake.rejections).toEqual([]);
});
