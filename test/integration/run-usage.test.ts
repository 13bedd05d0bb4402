/**
 * Token usage and the run's token budget (issue 19) through the real runtime: usage per model call
 * summed per turn (`turn_finished`), session and subtree (`GET /sessions/:id`, `/usage`) and run (the
 * result object); unknown usage is null, never zero; `limits.max_tokens_per_run` ends a run `failed`
 * with `token_budget`, its history valid, subagents included; `tool_calls` counts the whole tree.
 */
import { afterEach, describe, expect, test } from "bun:test";
import type { EventData } from "../../src/bus/events.ts";
import { runOnce } from "../../src/run/run-once.ts";
import { startFakeOpenAI, textChunks, toolCallChunks, type FakeOpenAI } from "../fixtures/fake-openai.ts";
import { startHarness, type Harness } from "../harness.ts";

let h: Harness | undefined;
let fake: FakeOpenAI | undefined;
afterEach(async () => {
  await h?.close();
  await fake?.close();
  h = fake = undefined;
});

const scripted = (turns: string, extra: Record<string, unknown> = {}) => ({
  config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous", ...extra },
  files: { "turns.yaml": turns },
});

/** Every turn_finished of the runtime, in order. */
function finishes(hh: Harness): EventData<"turn_finished">[] {
  const out: EventData<"turn_finished">[] = [];
  hh.rt.bus.subscribeAll((ev) => {
    if (ev.type === "turn_finished") out.push(ev.data);
  });
  return out;
}

const TREE = `
turns:
  - usage: { input_tokens: 100, output_tokens: 10, cached_input_tokens: 40 }
    tool_calls:
      - name: code_execution__execute
        arguments:
          code: |
            await tools.developer__list_dir({ path: "." });
            return await tools.developer__read_file({ path: "a.txt" });
      - { name: subagent__spawn, arguments: { instructions: "look" } }
  - usage: { input_tokens: 200, output_tokens: 20, reasoning_tokens: 5 }
    text: "root done"
subagents:
  - turns:
      - usage: { input_tokens: 50, output_tokens: 5 }
        tool_calls: [{ name: developer__list_dir, arguments: { path: "." } }]
      - text: "child done"
`;

describe("token usage", () => {
  test("usage is summed per turn, session, subtree and run; a call without usage is counted as unreported, not as zero", async () => {
    h = await startHarness({ ...scripted(TREE), workspaceFiles: { "a.txt": "alpha" } });
    const fins = finishes(h);
    const r = await runOnce(h.rt, { prompt: "go", headless: true, workspace: h.workspace });
    expect(r).toMatchObject({ status: "completed", result: "root done" });
    // the run: root (2 calls) + subagent (2 calls, the second without usage)
    expect(r.usage).toEqual({ input_tokens: 350, output_tokens: 35, cached_input_tokens: 40, reasoning_tokens: 5, model_calls: 4, unreported_calls: 1 });
    const root = r.session_id!;
    const child = (await h.rt.store.listSessions({ parent: root }))[0]!.id;
    // turn_finished carries the turn's usage
    expect(fins.find((f) => f.session_id === root)!.usage).toEqual({ input_tokens: 300, output_tokens: 30, cached_input_tokens: 40, reasoning_tokens: 5, model_calls: 2 });
    expect(fins.find((f) => f.session_id === child)!.usage).toEqual({ input_tokens: 50, output_tokens: 5, model_calls: 2, unreported_calls: 1 });
    // GET /sessions/:id: the session's own and its subtree's
    const got = (await (await h.api(`/sessions/${root}`)).json()) as any;
    expect(got.usage).toEqual({
      session: { input_tokens: 300, output_tokens: 30, cached_input_tokens: 40, reasoning_tokens: 5, model_calls: 2 },
      subtree: r.usage,
    });
    const childUsage = (await (await h.api(`/sessions/${child}/usage`)).json()) as any;
    expect(childUsage.session).toEqual(childUsage.subtree);
    expect(childUsage.session.input_tokens).toBe(50);
  });

  test("a provider that reports no usage: null in the result and the API, absent from turn_finished", async () => {
    h = await startHarness(scripted(`turns:\n  - text: "plain"\n`));
    const fins = finishes(h);
    const r = await runOnce(h.rt, { prompt: "go", headless: true, workspace: h.workspace });
    expect(r).toMatchObject({ status: "completed", result: "plain", usage: null });
    expect(fins[0]!).not.toHaveProperty("usage");
    const got = (await (await h.api(`/sessions/${r.session_id}`)).json()) as any;
    expect(got.usage).toEqual({ session: null, subtree: null });
  });

  test("tool_calls in the result counts the whole tree: direct calls, calls from scripts and subagents' calls", async () => {
    h = await startHarness({ ...scripted(TREE), workspaceFiles: { "a.txt": "alpha" } });
    const r = await runOnce(h.rt, { prompt: "go", headless: true, workspace: h.workspace });
    // root: execute + spawn; the script: list_dir + read_file; the subagent: list_dir
    expect(r.tool_calls).toBe(5);
  });
});

describe("limits.max_tokens_per_run", () => {
  test("the model call that crosses it ends the run failed with token_budget; its calls are answered, no further model call is made", async () => {
    h = await startHarness(
      scripted(
        `
turns:
  - usage: { input_tokens: 600, output_tokens: 100 }
    tool_calls: [{ name: developer__list_dir, arguments: { path: "." } }]
  - usage: { input_tokens: 700, output_tokens: 100 }
    tool_calls: [{ name: developer__list_dir, arguments: { path: "." } }]
  - text: "never"
`,
        { limits: { max_tokens_per_run: 1000 } },
      ),
    );
    const r = await runOnce(h.rt, { prompt: "go", headless: true, workspace: h.workspace });
    expect(r.status).toBe("failed");
    expect(r.error!.code).toBe("token_budget");
    expect(r.error!.message).toContain("max_tokens_per_run");
    expect(r.usage).toMatchObject({ input_tokens: 1300, output_tokens: 200, model_calls: 2 });
    const msgs = await h.rt.store.listMessages(r.session_id!);
    // user, assistant+call, result, assistant+call (kept), its call answered token_budget
    expect(msgs.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant", "tool"]);
    expect(JSON.parse(msgs[4]!.content).error.code).toBe("token_budget");
    expect((await h.rt.store.listTurns(r.session_id!))[0]!.status).toBe("failed");
  });

  test("a subagent crossing the run's budget stops the whole run: the parent waiting on it fails token_budget", async () => {
    h = await startHarness(
      scripted(
        `
turns:
  - usage: { input_tokens: 100, output_tokens: 10 }
    tool_calls: [{ name: subagent__spawn, arguments: { instructions: "spend" } }]
  - text: "never"
subagents:
  - turns:
      - usage: { input_tokens: 100, output_tokens: 10 }
        tool_calls: [{ name: developer__list_dir, arguments: { path: "." } }]
      - usage: { input_tokens: 900, output_tokens: 10 }
        tool_calls: [{ name: developer__list_dir, arguments: { path: "." } }]
      - text: "never"
`,
        { limits: { max_tokens_per_run: 1000 } },
      ),
    );
    const fins = finishes(h);
    const r = await runOnce(h.rt, { prompt: "go", headless: true, workspace: h.workspace });
    expect(r.status).toBe("failed");
    expect(r.error!.code).toBe("token_budget");
    const child = (await h.rt.store.listSessions({ parent: r.session_id! }))[0]!.id;
    expect(fins.find((f) => f.session_id === child)).toMatchObject({ status: "failed", error: { code: "token_budget" } });
    expect(fins.find((f) => f.session_id === r.session_id)).toMatchObject({ status: "failed", error: { code: "token_budget" } });
    // the root made one model call only: it did not go on after its subagent's failure
    expect((await h.rt.store.listMessages(r.session_id!)).filter((m) => m.role === "assistant")).toHaveLength(1);
    // both histories are valid: every call has its result
    for (const sid of [r.session_id!, child]) {
      const msgs = await h.rt.store.listMessages(sid);
      const calls = msgs.flatMap((m) => m.tool_calls ?? []).map((c) => c.id);
      expect(msgs.filter((m) => m.role === "tool").map((m) => m.tool_call_id)).toEqual(calls);
    }
  });

  test("over the OpenAI wire: usage chunks count, the run fails token_budget, and the stored history is valid for the next request", async () => {
    fake = startFakeOpenAI((_body, n) => {
      if (n === 0) return toolCallChunks({ name: "developer__list_dir", arguments: { path: "." }, id: "call_1" }, { usage: { prompt_tokens: 400, completion_tokens: 50 } });
      if (n === 1) return toolCallChunks({ name: "developer__list_dir", arguments: { path: "." }, id: "call_2" }, { usage: { prompt_tokens: 500, completion_tokens: 60 } });
      return textChunks("after", { usage: { prompt_tokens: 10, completion_tokens: 1 } });
    });
    h = await startHarness({ config: { provider: { name: "openai", base_url: fake.url, model: "fake-model" }, mode: "autonomous", limits: { max_tokens_per_run: 1000 } } });
    const r = await runOnce(h.rt, { prompt: "go", headless: true, workspace: h.workspace });
    expect(r).toMatchObject({ status: "failed", error: { code: "token_budget" }, usage: { input_tokens: 900, output_tokens: 110, model_calls: 2 } });
    expect(fake.requests).toHaveLength(2);
    // the next turn's request passes the fake server's pairing check (every tool call answered, in order)
    expect(await h.rt.runTurn(r.session_id!, "again")).toMatchObject({ status: "completed", answer: "after" });
    expect(fake.requests[2].messages.filter((m: any) => m.role === "tool").map((m: any) => m.tool_call_id)).toEqual(["call_1", "call_2"]);
  });
});
