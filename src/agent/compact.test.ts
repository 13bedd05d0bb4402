/**
 * History shrinking (agent/compact.ts) against an in-process model: the context defaults per model
 * family; what is sent keeps the pairing rules (an assistant message with several calls keeps all its
 * results, in order, elided or whole; a summary replaces whole turns only); the same request is sent
 * again until the next shrink (PreCompact once per shrink); PreCompact's `continue: false` stops the
 * turn; the estimate calibrates on the reported input tokens.
 */
import { describe, expect, test } from "bun:test";
import { AirlockError } from "../errors.ts";
import type { Message } from "../session/types.ts";
import { contextTokensFor, elisionMarker, HistoryCompactor, SUMMARY_MESSAGE_NAME, UNKNOWN_MODEL_CONTEXT_TOKENS } from "./compact.ts";
import type { HookDirective, HookTurn } from "./loop.ts";
import type { ModelRequest, Provider } from "./providers/provider.ts";

describe("contextTokensFor", () => {
  test("known families, a vendor prefix, the configured value, unknown models and the scripted provider", () => {
    expect(contextTokensFor({ name: "openai", model: "gpt-4o-mini" })).toBe(128_000);
    expect(contextTokensFor({ name: "openai", model: "openai/gpt-4o" })).toBe(128_000);
    expect(contextTokensFor({ name: "openai", model: "gpt-4.1-nano" })).toBe(1_000_000);
    expect(contextTokensFor({ name: "openai" })).toBe(1_000_000); // the adapter's default model, gpt-4.1-mini
    expect(contextTokensFor({ name: "openai", model: "gpt-5-mini" })).toBe(272_000);
    expect(contextTokensFor({ name: "openai", model: "o4-mini" })).toBe(200_000);
    expect(contextTokensFor({ name: "openai", model: "o1-mini" })).toBe(128_000);
    expect(contextTokensFor({ name: "anthropic" })).toBe(200_000);
    expect(contextTokensFor({ name: "anthropic", model: "claude-opus-4-1" })).toBe(200_000);
    expect(contextTokensFor({ name: "openai", model: "deepseek-chat" })).toBe(128_000);
    expect(contextTokensFor({ name: "openai", model: "qwen2.5-coder:7b" })).toBe(8_192);
    expect(contextTokensFor({ name: "openai", model: "meta-llama/Llama-3.1-8B-Instruct" })).toBe(8_192);
    expect(contextTokensFor({ name: "openai", model: "llama3.1" })).toBe(8_192);
    expect(contextTokensFor({ name: "openai", model: "some-new-model" })).toBe(UNKNOWN_MODEL_CONTEXT_TOKENS);
    expect(contextTokensFor({ name: "openai", model: "gpt-4o", context_tokens: 50_000 })).toBe(50_000);
    expect(contextTokensFor({ name: "scripted" })).toBeNull();
    expect(contextTokensFor({ name: "scripted", context_tokens: 4096 })).toBe(4096);
  });
});

const SID = "ses_compact_test";
let seq = 0;
function msg(role: Message["role"], content: string, extra: Partial<Message> = {}): Message {
  seq++;
  return { id: `msg_${String(seq).padStart(6, "0")}`, session_id: SID, turn_id: "turn_1", role, content, created_at: new Date(1_760_000_000_000 + seq).toISOString(), ...extra };
}

/** A history of `groups` model turns, each an assistant message with `per` calls and their results of `bytes` each. */
function history(groups: number, per: number, bytes: number, o: { state?: boolean } = {}): Message[] {
  const out: Message[] = [msg("user", "do the work")];
  for (let g = 0; g < groups; g++) {
    const calls = Array.from({ length: per }, (_, j) => ({ id: `call_${g}_${j}`, name: "developer__read_file", arguments: { path: `f${j}.txt` } }));
    out.push(msg("assistant", `step ${g}`, { tool_calls: calls, ...(o.state ? { provider_state: { provider: "anthropic", data: { content: [{ type: "thinking", thinking: `t${g}`, signature: `s${g}` }] } } } : {}) }));
    for (const c of calls) out.push(msg("tool", `${c.id}:` + "x".repeat(bytes), { tool_call_id: c.id, name: c.name }));
  }
  return out;
}

/** An in-process model that answers summary requests and records them. */
function summarizer(): Provider & { requests: ModelRequest[] } {
  const requests: ModelRequest[] = [];
  return {
    name: "test",
    requests,
    async complete(req) {
      requests.push(req);
      return { text: `summary #${requests.length}`, tool_calls: [], stop_reason: "end_turn", truncated: false };
    },
  };
}

function turn(): HookTurn {
  return {
    session: { id: SID, parent_session_id: null, spawn_index: null } as HookTurn["session"],
    turnId: "turn_1",
    signal: new AbortController().signal,
  };
}

/** The pairing rule of chat completions: every assistant tool call answered by the tool messages right after it, in order. */
function pairingOk(sent: Message[]): boolean {
  for (let i = 0; i < sent.length; i++) {
    const m = sent[i]!;
    if (m.role === "tool" && (i === 0 || (sent[i - 1]!.role !== "tool" && !sent[i - 1]!.tool_calls?.length))) return false;
    if (m.role === "assistant" && m.tool_calls?.length) {
      const ids = m.tool_calls.map((c) => c.id);
      const next = sent.slice(i + 1, i + 1 + ids.length).map((t) => (t.role === "tool" ? t.tool_call_id : null));
      if (JSON.stringify(next) !== JSON.stringify(ids)) return false;
    }
  }
  return true;
}

const bytesOf = (ms: Message[]) => ms.reduce((n, m) => n + Buffer.byteLength(m.content) + JSON.stringify(m.tool_calls ?? []).length, 0);

describe("HistoryCompactor", () => {
  test("under the trigger nothing changes and nothing fires", async () => {
    let fired = 0;
    const c = new HistoryCompactor({ contextTokens: () => 100_000, hooks: { preCompact: async () => ((fired++, { context: [] }) as HookDirective) } });
    const msgs = history(3, 2, 1000);
    const sent = await c.prepare(turn(), { messages: msgs, system: "sys", tools: [], provider: summarizer() });
    expect(sent).toEqual(msgs);
    expect(fired).toBe(0);
    expect(c.describe(SID)).toBeNull();
  });

  test("old tool outputs are elided first, with their size; an assistant's several calls keep all their results in order; the latest turns stay whole", async () => {
    let fired: string[] = [];
    const c = new HistoryCompactor({ contextTokens: () => 20_000, hooks: { preCompact: async (_t, trigger, instr) => ((fired.push(`${trigger}:${instr}`), { context: [] }) as HookDirective) } });
    const model = summarizer();
    const msgs = history(12, 3, 2000); // ~18k raw tokens
    const sent = await c.prepare(turn(), { messages: msgs, system: "sys", tools: [], provider: model });
    expect(fired).toEqual(["auto:"]);
    expect(model.requests.length).toBe(0); // eliding was enough
    expect(sent.length).toBe(msgs.length);
    expect(pairingOk(sent)).toBe(true);
    const first = sent.find((m) => m.role === "tool")!;
    expect(first.content).toBe(elisionMarker(2000 + "call_0_0:".length));
    expect(first.tool_call_id).toBe("call_0_0");
    expect(sent.at(-1)!.content).toBe(msgs.at(-1)!.content);
    expect(bytesOf(sent)).toBeLessThan(20_000 * 0.6 * 4);
    // the stored messages were not touched
    expect(msgs[2]!.content.startsWith("call_0_0:xxx")).toBe(true);
  });

  test("the same request is sent again until the next shrink, and PreCompact fires once per shrink", async () => {
    let fired = 0;
    const c = new HistoryCompactor({ contextTokens: () => 20_000, hooks: { preCompact: async () => ((fired++, { context: [] }) as HookDirective) } });
    const model = summarizer();
    const msgs = history(12, 3, 2000);
    const a = await c.prepare(turn(), { messages: msgs, system: "sys", tools: [], provider: model });
    const more = [...msgs, ...history(1, 1, 100).slice(1)];
    const b = await c.prepare(turn(), { messages: more, system: "sys", tools: [], provider: model });
    expect(fired).toBe(1);
    expect(JSON.stringify(b.slice(0, a.length))).toBe(JSON.stringify(a));
  });

  test("past what eliding can do, older turns become one summary message (user, named summary, marked), cut at a turn's start", async () => {
    const c = new HistoryCompactor({ contextTokens: () => 8_000 });
    const model = summarizer();
    const msgs = history(150, 3, 600);
    const sent = await c.prepare(turn(), { messages: msgs, system: "sys", tools: [], provider: model });
    expect(model.requests.length).toBeGreaterThan(0);
    expect(model.requests[0]!.tools).toEqual([]);
    expect(model.requests[0]!.messages[0]!.content).toContain("developer__read_file");
    expect(sent[0]).toMatchObject({ role: "user", name: SUMMARY_MESSAGE_NAME });
    expect(sent[0]!.content).toStartWith("[Summary of the earlier conversation");
    expect(sent[0]!.content).toContain(`summary #${model.requests.length}`);
    expect(sent[1]!.role).toBe("assistant");
    expect(pairingOk(sent)).toBe(true);
    expect(bytesOf(sent)).toBeLessThan(8_000 * 0.85 * 4);
    expect(sent.at(-1)!.content).toBe(msgs.at(-1)!.content);
  });

  test("a prefix-pinned provider state (Anthropic thinking) is dropped from every message before the shrink, kept after it", async () => {
    const c = new HistoryCompactor({ contextTokens: () => 20_000 });
    const msgs = history(12, 3, 2000, { state: true });
    const sent = await c.prepare(turn(), { messages: msgs, system: "sys", tools: [], provider: summarizer() });
    expect(sent.filter((m) => m.provider_state).length).toBe(0);
    const later = [...msgs, ...history(1, 1, 10, { state: true }).slice(1)];
    const sent2 = await c.prepare(turn(), { messages: later, system: "sys", tools: [], provider: summarizer() });
    expect(sent2.filter((m) => m.provider_state).length).toBe(1);
    // another provider's state is never dropped
    const other = history(12, 3, 2000).map((m) => (m.role === "assistant" ? { ...m, provider_state: { provider: "openai", data: { reasoning_content: "r" } } } : m));
    const c2 = new HistoryCompactor({ contextTokens: () => 20_000 });
    const sent3 = await c2.prepare({ ...turn(), session: { ...turn().session, id: "ses_other" } }, { messages: other, system: "sys", tools: [], provider: summarizer() });
    expect(sent3.filter((m) => m.provider_state).length).toBe(12);
  });

  test("PreCompact's continue: false stops the turn (hook_stopped) before anything is shrunk", async () => {
    const c = new HistoryCompactor({ contextTokens: () => 20_000, hooks: { preCompact: async () => ({ context: [], stop: "no compaction today" }) } });
    const err = await c.prepare(turn(), { messages: history(12, 3, 2000), system: "sys", tools: [], provider: summarizer() }).catch((e) => e);
    expect(err).toBeInstanceOf(AirlockError);
    expect(err.code).toBe("hook_stopped");
    expect(err.message).toContain("no compaction today");
  });

  test("the estimate calibrates on the reported input tokens: a provider counting twice as many tokens makes it shrink earlier", async () => {
    const msgs = history(8, 3, 2000); // ~12k raw tokens: under 0.85 × 20k uncalibrated
    const plain = new HistoryCompactor({ contextTokens: () => 20_000 });
    expect(await plain.prepare(turn(), { messages: msgs, system: "sys", tools: [], provider: summarizer() })).toEqual(msgs);
    const calibrated = new HistoryCompactor({ contextTokens: () => 20_000 });
    const small = msgs.slice(0, 5);
    await calibrated.prepare(turn(), { messages: small, system: "sys", tools: [], provider: summarizer() });
    const raw = Math.ceil(bytesOf(small) / 4);
    calibrated.observe(SID, { input_tokens: raw * 2, output_tokens: 1 });
    const sent = await calibrated.prepare(turn(), { messages: msgs, system: "sys", tools: [], provider: summarizer() });
    expect(sent).not.toEqual(msgs);
    expect(calibrated.describe(SID)!.ratio).toBeGreaterThan(1.5);
  });
});
