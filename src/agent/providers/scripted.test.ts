/**
 * @module agent/providers/scripted.test
 * The scripted provider (SPEC §3) from real YAML files: root and subagent turns, script end,
 * validation errors naming the key path, error and delay turns, and `createProvider` dispatch.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ProviderConfig } from "../../config/schema.ts";
import { AirlockError } from "../../errors.ts";
import type { Message } from "../../session/types.ts";
import { createProvider, NO_MODEL_CONFIGURED, parseScript } from "./index.ts";
import type { ModelRequest } from "./provider.ts";
import { msg } from "../../../test/fixtures/messages.ts";

const dir = mkdtempSync(join(tmpdir(), "airlock-scripted-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const SCRIPT = `
turns:
  - text: "Looking."
    tool_calls:
      - name: code_execution__execute
        arguments: { code: "return await tools.developer__shell({ command: 'ls' })" }
  - text: "Listed the workspace."
subagents:
  - turns:
      - tool_calls: [{ name: developer__shell, arguments: { command: "date" } }]
      - text: "child 0 done"
  - turns:
      - text: "child 1 done"
`;

function scripted(yaml: string, name = `s-${Math.random().toString(36).slice(2)}.yaml`) {
  writeFileSync(join(dir, name), yaml);
  return createProvider(ProviderConfig.parse({ name: "scripted", script: name }), { configDir: dir });
}

function request(session: Partial<ModelRequest["session"]>, messages: Message[], extra: Partial<ModelRequest> = {}): ModelRequest {
  return {
    session: { id: "ses_root", parent_session_id: null, spawn_index: null, ...session },
    messages,
    tools: [],
    signal: new AbortController().signal,
    ...extra,
  };
}

async function failure(p: Promise<unknown>): Promise<AirlockError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof AirlockError) return e;
    throw e;
  }
  throw new Error("expected the call to fail");
}

const anyCallId = expect.stringMatching(/^call_[0-9a-f]{32}$/);

describe("scripted provider", () => {
  test("root session: the k-th model call gets turns[k], then (script ended)", async () => {
    const p = scripted(SCRIPT);
    const deltas: string[] = [];
    const t0 = await p.complete(request({}, [msg("user", "go")], { onDelta: (t) => deltas.push(t) }));
    expect(t0).toEqual({
      text: "Looking.",
      tool_calls: [{ id: anyCallId, name: "code_execution__execute", arguments: { code: "return await tools.developer__shell({ command: 'ls' })" } }],
      stop_reason: "tool_calls",
      truncated: false,
      usage: undefined,
    });
    expect(deltas).toEqual(["Looking."]);
    const history = [msg("user", "go"), msg("assistant", "Looking.", { tool_calls: t0.tool_calls }), msg("tool", "{}", { tool_call_id: t0.tool_calls[0]!.id })];
    const t1 = await p.complete(request({}, history));
    expect(t1).toEqual({ text: "Listed the workspace.", tool_calls: [], stop_reason: "end_turn", truncated: false, usage: undefined });
    // a later reply continues counting across the whole history
    const t2 = await p.complete(request({}, [...history, msg("assistant", t1.text), msg("user", "more?")]));
    expect(t2).toEqual({ text: "(script ended)", tool_calls: [], stop_reason: "end_turn", truncated: false, usage: undefined });
  });

  test("subagent with spawn_index N uses subagents[N].turns", async () => {
    const p = scripted(SCRIPT);
    const child = { id: "ses_child", parent_session_id: "ses_root", spawn_index: 0 };
    const c0 = await p.complete(request(child, [msg("user", "do it")]));
    expect(c0).toEqual({ text: "", tool_calls: [{ id: anyCallId, name: "developer__shell", arguments: { command: "date" } }], stop_reason: "tool_calls", truncated: false, usage: undefined });
    const c1 = await p.complete(request(child, [msg("user", "do it"), msg("assistant", "", { tool_calls: c0.tool_calls }), msg("tool", "ok")]));
    expect(c1.text).toBe("child 0 done");
    const second = await p.complete(request({ id: "ses_c2", parent_session_id: "ses_child", spawn_index: 1 }, [msg("user", "x")]));
    expect(second).toEqual({ text: "child 1 done", tool_calls: [], stop_reason: "end_turn", truncated: false, usage: undefined });
    const beyond = await p.complete(request({ id: "ses_c3", parent_session_id: "ses_root", spawn_index: 7 }, [msg("user", "x")]));
    expect(beyond.text).toBe("(script ended)");
  });

  test("tool call ids are fresh on every call", async () => {
    const p = scripted(SCRIPT);
    const a = await p.complete(request({}, [msg("user", "go")]));
    const b = await p.complete(request({}, [msg("user", "go")]));
    expect(a.tool_calls[0]!.id).not.toBe(b.tool_calls[0]!.id);
  });

  test("bad YAML shape: the error names the key path", () => {
    const bad = `turns:\n  - text: ok\n  - tool_calls:\n      - arguments: { a: 1 }\n`;
    let err: unknown;
    try {
      parseScript(bad, "turns.yaml");
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(AirlockError);
    expect((err as AirlockError).code).toBe("config_invalid");
    expect((err as AirlockError).message).toStartWith("script turns.yaml: turns[1].tool_calls[0].name: Required");
  });

  test("unknown keys, wrong types and YAML syntax errors are reported with the file name", () => {
    expect(() => parseScript("turns:\n  - txt: hi\n", "a.yaml")).toThrow(/^script a\.yaml: turns\[0\]: .*txt/);
    expect(() => parseScript("turns:\n  - delay_ms: soon\n", "b.yaml")).toThrow(/^script b\.yaml: turns\[0\]\.delay_ms: /);
    expect(() => parseScript("turns: [\n", "c.yaml")).toThrow(/^script c\.yaml: not valid YAML/);
    expect(parseScript("", "empty.yaml")).toEqual({ turns: [], subagents: [] });
  });

  test("createProvider with a missing or invalid script file fails with config_invalid", () => {
    let err: unknown;
    try {
      createProvider(ProviderConfig.parse({ name: "scripted", script: "nope.yaml" }), { configDir: dir });
    } catch (e) {
      err = e;
    }
    expect((err as AirlockError).code).toBe("config_invalid");
    expect((err as AirlockError).message).toContain(join(dir, "nope.yaml"));
    expect(() => scripted("subagents:\n  - turns:\n      - tool_calls: [{ name: 3 }]\n", "bad.yaml")).toThrow("script bad.yaml: subagents[0].turns[0].tool_calls[0].name");
  });

  test("no script configured: every call says no model is configured (not a silent (script ended))", async () => {
    const p = createProvider(ProviderConfig.parse({}), { configDir: dir });
    expect(p.name).toBe("scripted");
    const deltas: string[] = [];
    const t = await p.complete(request({}, [msg("user", "hi")], { onDelta: (d) => deltas.push(d) }));
    expect(t).toEqual({ text: NO_MODEL_CONFIGURED, tool_calls: [], stop_reason: "end_turn", truncated: false, usage: undefined });
    expect(t.text).toStartWith("(no model configured: airlock.yaml sets no provider");
    expect(t.text).toContain("docs/quickstart.md §6");
    expect(deltas).toEqual([NO_MODEL_CONFIGURED]);
    const child = await p.complete(request({ id: "ses_c", parent_session_id: "ses_root", spawn_index: 0 }, [msg("user", "x")]));
    expect(child.text).toBe(NO_MODEL_CONFIGURED);
  });

  test("a missing script file: config_invalid naming the file and the folder it was relative to", () => {
    const cfg = ProviderConfig.parse({ name: "scripted", script: "nope.yaml" });
    const e1 = (() => {
      try {
        createProvider(cfg, { configDir: dir });
      } catch (e) {
        return e as AirlockError;
      }
    })();
    expect(e1?.code).toBe("config_invalid");
    expect(e1?.message).toContain(`cannot read ${join(dir, "nope.yaml")} (ENOENT)`);
    expect(e1?.message).toContain(`relative provider.script resolves against the config file's folder (${dir})`);
    expect(() => createProvider({ ...cfg, script: join(dir, "nope.yaml") }, { configDir: dir, scriptOrigin: "recipe r.yaml" })).toThrow(
      "a relative provider.script resolves against the folder of recipe r.yaml",
    );
  });

  test("an error turn throws provider_error; the next call of that session moves on", async () => {
    const p = scripted(`turns:\n  - error: "model exploded"\n  - text: recovered\n`);
    const err = await failure(p.complete(request({}, [msg("user", "a")])));
    expect(err.code).toBe("provider_error");
    expect(err.message).toContain("model exploded");
    const t = await p.complete(request({}, [msg("user", "a"), msg("user", "b")]));
    expect(t.text).toBe("recovered");
  });

  test("delay_ms streams the text first, then waits; aborting during the wait rejects with cancelled", async () => {
    const p = scripted(`turns:\n  - text: "thinking"\n    delay_ms: 60000\n`);
    const ac = new AbortController();
    const deltas: string[] = [];
    const pending = p.complete(
      request({}, [msg("user", "a")], {
        signal: ac.signal,
        onDelta: (t) => {
          deltas.push(t);
          queueMicrotask(() => ac.abort());
        },
      }),
    );
    const err = await failure(pending);
    expect(err.code).toBe("cancelled");
    expect(deltas).toEqual(["thinking"]);
  });

  test("a short delay completes normally", async () => {
    const p = scripted(`turns:\n  - text: "slow"\n    delay_ms: 5\n`);
    expect(await p.complete(request({}, [msg("user", "a")]))).toEqual({ text: "slow", tool_calls: [], stop_reason: "end_turn", truncated: false, usage: undefined });
  });
});

describe("scripted usage", () => {
  test("a turn's usage is reported as the model call's; a turn without it reports none (unknown, not zero)", async () => {
    const p = scripted(`
turns:
  - usage: { input_tokens: 120, output_tokens: 7, cached_input_tokens: 100, reasoning_tokens: 3 }
    tool_calls: [{ name: developer__list_dir, arguments: { path: "." } }]
  - text: "done"
`);
    const first = await p.complete(request({}, [msg("user", "go")]));
    expect(first.usage).toEqual({ input_tokens: 120, output_tokens: 7, cached_input_tokens: 100, reasoning_tokens: 3 });
    const second = await p.complete(request({}, [msg("user", "go"), msg("assistant", "", { tool_calls: first.tool_calls })]));
    expect(second.text).toBe("done");
    expect(second.usage).toBeUndefined();
  });

  test("a usage with a missing or unknown field is config_invalid naming the key path", () => {
    expect(() => parseScript(`turns:\n  - usage: { input_tokens: 1 }\n`, "t.yaml")).toThrow(/turns\[0\]\.usage\.output_tokens/);
    expect(() => parseScript(`turns:\n  - usage: { input_tokens: 1, output_tokens: 1, tokens: 2 }\n`, "t.yaml")).toThrow(/turns\[0\]\.usage/);
  });
});
