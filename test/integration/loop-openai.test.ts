/**
 * A turn over real HTTP against a local OpenAI-compatible server (streamed chat-completions with
 * tool-call deltas split across chunks): the model calls a tool, gets its result, then answers.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { startFakeOpenAI, textChunks, toolCallChunks, type FakeOpenAI } from "../fixtures/fake-openai.ts";
import { harnessSse, startHarness, type Harness } from "../harness.ts";

let h: Harness | undefined;
let fake: FakeOpenAI | undefined;
afterEach(async () => {
  await h?.close();
  await fake?.close();
  h = fake = undefined;
});

describe("loop with the openai provider", () => {
  test("a turn calls a tool through the gate, feeds the result back, then answers", async () => {
    fake = startFakeOpenAI((body, n) => {
      if (n === 0) return toolCallChunks({ name: "developer__read_file", arguments: { path: "notes.txt" }, id: "call_a1" }, { pieces: 4 });
      const last = body.messages[body.messages.length - 1];
      return textChunks(`the file says: ${last.content}`, { pieces: 3 });
    });
    h = await startHarness({
      config: { provider: { name: "openai", base_url: fake.url, model: "fake-model" }, mode: "autonomous" },
      workspaceFiles: { "notes.txt": "hello from the workspace" },
    });
    const s = await h.createSession();
    const sse = await harnessSse(h, `/sessions/${s.id}/reply`, { method: "POST", json: { message: "read notes.txt" } });
    expect(sse.status).toBe(200);
    const fin = await sse.waitFor((e) => e.event === "turn_finished");
    await sse.ended;
    expect(fin.data.status).toBe("completed");
    expect(fin.data.answer).toContain("hello from the workspace");
    const names = sse.events.map((e) => e.event);
    expect(names[0]).toBe("turn_started");
    expect(names).toContain("tool_request");
    expect(names).toContain("tool_result");
    expect(names).toContain("delta");
    const req = sse.events.find((e) => e.event === "tool_request")!;
    expect(req.data).toMatchObject({ session_id: s.id, call_id: "call_a1", tool: "developer__read_file", arguments: { path: "notes.txt" }, from_script: false });
    // ids (`<epoch>-<n>`) share one epoch and n increases
    expect(new Set(sse.events.map((e) => e.id!.split("-")[0])).size).toBe(1);
    const ids = sse.events.map((e) => Number(e.id!.split("-")[1]));
    expect(ids.every(Number.isInteger)).toBe(true);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    // the second request carried the assistant tool call and the tool result
    expect(fake.requests.length).toBe(2);
    const msgs = fake.requests[1].messages;
    expect(msgs.find((m: any) => m.role === "tool")).toMatchObject({ tool_call_id: "call_a1" });
    // the default roster (SPEC §4); the direct read_file call above still went through the gate and ran
    expect(fake.requests[0].tools.map((t: any) => t.function.name).sort()).toEqual(["code_execution__execute", "code_execution__list_tools", "subagent__spawn", "subagent__watch"]);
    expect(fake.requests[0].messages[0].role).toBe("system");
    // stored
    const got = (await (await h.api(`/sessions/${s.id}`)).json()) as any;
    expect(got.messages.map((m: any) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    expect(got.turns[0].status).toBe("completed");
    expect(h.rt.inflight.has(s.id)).toBe(false);
  });

  test("a provider error becomes a failed turn with a clear message", async () => {
    fake = startFakeOpenAI(() => ({ status: 401, body: { error: { message: "bad key", type: "invalid_request_error" } } }));
    h = await startHarness({ config: { provider: { name: "openai", base_url: fake.url, max_retries: 0 } } });
    const s = await h.createSession();
    const sse = await harnessSse(h, `/sessions/${s.id}/reply`, { method: "POST", json: { message: "hi" } });
    const fin = await sse.waitFor((e) => e.event === "turn_finished");
    expect(fin.data.status).toBe("failed");
    expect(fin.data.error.code).toBe("provider_auth");
    expect(sse.events.find((e) => e.event === "error")!.data.message.length).toBeGreaterThan(10);
    expect((await h.rt.store.listTurns(s.id))[0]!.status).toBe("failed");
    expect(h.rt.inflight.size()).toBe(0);
  });
});
