/**
 * End-to-end: `airlock run` through the compiled binary with `provider.name: openai-responses` against a
 * local Responses server replaying our fixtures over real HTTP/SSE (test/fixtures/fake-openai-responses.ts,
 * which refuses what the real API refuses with `store: false`). The model reasons, runs a shell command
 * through code execution (real bubblewrap), gets its output back, then answers; its reasoning item goes
 * back unchanged with the call.
 */
import { afterEach, beforeAll, expect, test } from "bun:test";
import { fixture, startFakeResponses, type FakeResponses } from "../fixtures/fake-openai-responses.ts";
import { ensureBinary, makeSandbox, spawnAirlock, type Sandbox } from "./headless-helpers.ts";

beforeAll(async () => {
  await ensureBinary();
}, 300_000);

let b: Sandbox | undefined;
let fake: FakeResponses | undefined;
afterEach(async () => {
  b?.cleanup();
  await fake?.close();
  b = fake = undefined;
});

test("airlock run with openai-responses: a shell call through code execution, then the answer", async () => {
  fake = startFakeResponses((body) => {
    const output = (body.input as any[]).find((i) => i.type === "function_call_output");
    return { sse: fixture(output ? "shell-call.2.sse" : "shell-call.1.sse") };
  });
  b = makeSandbox({ config: { provider: { name: "openai-responses", base_url: fake.url, model: "gpt-fake-reasoner" }, mode: "autonomous" } });
  const r = await spawnAirlock(b, ["run", "say what the shell prints", "--output-format", "json", "--data-dir", b.dataDir]).done;
  if (r.code !== 0) console.error(r.stderr);
  expect(r.code).toBe(0);
  const result = JSON.parse(r.stdout);
  // tool_calls counts the whole tree: the model's code_execution call and the shell call its script made
  expect(result).toMatchObject({ status: "completed", result: "The shell printed responses-e2e-42.", tool_calls: 2, error: null });
  expect(fake.rejections).toEqual([]);
  expect(fake.requests).toHaveLength(2);
  const second = fake.requests[1].input as any[];
  // the reasoning item came back unchanged (no id), right before its call, and the call was answered with the shell's output
  expect(second.map((i) => i.type ?? i.role)).toEqual(["message", "reasoning", "function_call", "function_call_output"]);
  expect(second[1]).toEqual({ type: "reasoning", encrypted_content: "enc:e2e:final:c2hlbGw=", summary: [{ type: "summary_text", text: "**Running a shell command**" }] });
  expect(second[2]).toMatchObject({ type: "function_call", call_id: "call_e2e", name: "code_execution__execute" });
  expect(second[3].call_id).toBe("call_e2e");
  expect(second[3].output).toContain("responses-e2e-42");
  expect(fake.requests[0]).toMatchObject({ store: false, include: ["reasoning.encrypted_content"], stream: true, model: "gpt-fake-reasoner" });
  expect(typeof fake.requests[0].instructions).toBe("string");
}, 120_000);
