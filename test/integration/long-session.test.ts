/**
 * Long sessions (issue 19): a turn of 500 tool calls against a local OpenAI-compatible server that, like
 * the real API, answers HTTP 400 `context_length_exceeded` to a request over its token limit (counted
 * its own way: characters / 3, not airlock's bytes / 4, so the estimate must calibrate on the reported
 * usage). The turn completes: old tool outputs are elided, then older turns summarised by a model call,
 * the pairing rules hold in every request, `PreCompact` hooks fire with `trigger: "auto"`, and the
 * stored conversation keeps every output whole. Prints the request size before and after shrinking.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { toOpenAIMessages, toOpenAITools } from "../../src/agent/providers/openai.ts";
import { estimateTextTokens } from "../../src/agent/compact.ts";
import { startFakeOpenAI, textChunks, toolCallChunks, usageChunk, type FakeOpenAI } from "../fixtures/fake-openai.ts";
import { startHarness, type Harness } from "../harness.ts";

let h: Harness | undefined;
let fake: FakeOpenAI | undefined;
let rec: string | undefined;
afterEach(async () => {
  await h?.close();
  await fake?.close();
  if (rec) rmSync(rec, { recursive: true, force: true });
  h = fake = rec = undefined;
});

/** The fake server's token count of a request: JSON characters / 3 (a tokenizer airlock does not know). */
const serverTokens = (body: any): number => Math.ceil(JSON.stringify({ messages: body.messages, tools: body.tools ?? [] }).length / 3);

const LIMIT = 24_000;
const CALLS = 500;
const PER_TURN = 5;
const FILES = 20;

describe("long sessions: what is sent shrinks, the stored conversation does not", () => {
  test(`a turn of ${CALLS} tool calls against a server that rejects requests over ${LIMIT} tokens completes`, async () => {
    rec = mkdtempSync(join(tmpdir(), "airlock-compact-rec-"));
    const recorder = join(rec, "record.sh");
    writeFileSync(recorder, `#!/bin/sh\ncat >> "${rec}/precompact.jsonl"\necho >> "${rec}/precompact.jsonl"\n`);
    chmodSync(recorder, 0o755);
    let rejected = 0;
    let summaries = 0;
    let modelTurns = 0;
    const sizes: { bytes: number; tokens: number }[] = [];
    fake = startFakeOpenAI((body) => {
      const tokens = serverTokens(body);
      if (tokens > LIMIT) {
        rejected++;
        return {
          status: 400,
          body: {
            error: {
              message: `This model's maximum context length is ${LIMIT} tokens. However, your messages resulted in ${tokens} tokens. Please reduce the length of the messages.`,
              type: "invalid_request_error",
              param: "messages",
              code: "context_length_exceeded",
            },
          },
        };
      }
      const usage = { prompt_tokens: tokens, completion_tokens: 20 };
      if (!body.tools) {
        // a summary request: no tools offered
        summaries++;
        const seen = (body.messages.at(-1).content.match(/f\d+\.txt/g) ?? []).length;
        return textChunks(`The agent has been reading the workspace files one by one (${seen} file reads in this part); every read succeeded.`, { usage });
      }
      sizes.push({ bytes: JSON.stringify(body.messages).length, tokens });
      if (modelTurns * PER_TURN >= CALLS) return textChunks(`done after ${modelTurns * PER_TURN} calls`, { usage });
      const calls = Array.from({ length: PER_TURN }, (_, j) => {
        const k = modelTurns * PER_TURN + j;
        return { name: "developer__read_file", arguments: { path: `f${k % FILES}.txt` }, id: `call_${k}` };
      });
      modelTurns++;
      return [...toolCallChunks(calls, { pieces: 2 }), usageChunk(usage.prompt_tokens, usage.completion_tokens)];
    });
    const workspaceFiles = Object.fromEntries(Array.from({ length: FILES }, (_, i) => [`f${i}.txt`, `file ${i}\n${"lorem ipsum dolor sit amet ".repeat(110)}\n`]));
    h = await startHarness({
      config: {
        provider: { name: "openai", base_url: fake.url, model: "fake-model", context_tokens: LIMIT, max_retries: 0 },
        mode: "autonomous",
        limits: { max_iterations: 200 },
        hooks: { PreCompact: [{ matcher: "", hooks: [{ type: "command", command: recorder, timeout: 30 }] }] },
      },
      workspaceFiles,
    });
    const s = await h.createSession();
    const r = await h.rt.runTurn(s.id, "read the workspace files, five at a time, until told to stop");
    expect(r.error).toBeNull();
    expect(r.status).toBe("completed");
    expect(r.tool_calls).toBe(CALLS);
    expect(r.answer).toBe(`done after ${CALLS} calls`);
    expect(rejected).toBe(0);
    expect(summaries).toBeGreaterThan(0);

    // every request the model got stayed under the limit, and the later ones carried the markers and the summary
    const requests = fake.requests.filter((b) => b.tools);
    const last = requests.at(-1);
    const lastText = JSON.stringify(last.messages);
    expect(lastText).toContain("[tool output elided: ");
    expect(last.messages[1].role).toBe("user");
    expect(last.messages[1].content).toStartWith("[Summary of the earlier conversation");
    // the latest turn's results are whole
    expect(last.messages.at(-1).role).toBe("tool");
    expect(last.messages.at(-1).content).toContain("lorem ipsum");

    // the stored conversation keeps everything
    const stored = await h.rt.store.listMessages(s.id);
    const tools = stored.filter((m) => m.role === "tool");
    expect(tools.length).toBe(CALLS);
    expect(tools.every((m) => m.content.includes("lorem ipsum") && !m.content.includes("elided"))).toBe(true);

    // PreCompact fired before shrinking, trigger auto
    const inputs = readFileSync(join(rec, "precompact.jsonl"), "utf8").split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l));
    expect(inputs.length).toBeGreaterThan(0);
    expect(inputs[0]).toMatchObject({ hook_event_name: "PreCompact", trigger: "auto", custom_instructions: "", session_id: s.id });

    // the figure: the request the last model call would have been unshrunk, and what was sent
    const full = toOpenAIMessages(last.messages[0].content, stored.slice(0, -1));
    const fullBytes = Buffer.byteLength(JSON.stringify({ messages: full, tools: toOpenAITools(last.tools.map((t: any) => ({ name: t.function.name, description: t.function.description, parameters: t.function.parameters }))) }));
    const sentBytes = Buffer.byteLength(JSON.stringify({ messages: last.messages, tools: last.tools }));
    const maxSent = Math.max(...sizes.map((x) => x.tokens));
    console.log(
      `long-session figure: ${CALLS} calls, ${requests.length} model calls + ${summaries} summary calls; last request unshrunk ${fullBytes} B ` +
        `(~${estimateTextTokens(JSON.stringify(full))} tokens est., ${Math.ceil(JSON.stringify({ messages: full }).length / 3)} server tokens), ` +
        `sent ${sentBytes} B (~${Math.ceil(sentBytes / 4)} tokens est., ${serverTokens(last)} server tokens); largest request sent ${maxSent} server tokens (limit ${LIMIT})`,
    );
    expect(fullBytes).toBeGreaterThan(sentBytes * 10);
  }, 600_000);
});
