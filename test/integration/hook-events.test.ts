/**
 * The hook events around the agent loop over the real runtime (real hook processes under bubblewrap,
 * the scripted provider): each event's stdin has Claude Code's documented fields; Stop hooks keep a
 * turn going (bounded); PostToolUse formats, logs and gives feedback with the result; UserPromptSubmit
 * blocks a prompt or adds context; SessionStart context reaches the model; Notification fires when a
 * card parks without delaying it.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AgentHooks } from "../../src/agent/hooks.ts";
import type { EventData } from "../../src/bus/bus.ts";
import { startHarness, waitForBus, type Harness } from "../harness.ts";
import { processesWith, waitFor } from "../processes.ts";
import { decide } from "./gate-helpers.ts";

let h: Harness | undefined;
let rec: string | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
  if (rec) rmSync(rec, { recursive: true, force: true });
  rec = undefined;
});

/** A folder outside the data dir (it outlives the runtime, so SessionEnd's record can be read after close). */
function recordDir(): string {
  rec = mkdtempSync(join(tmpdir(), "airlock-hook-rec-"));
  return rec;
}

/** Writes an executable hook script into `dir` and returns its path. */
function script(dir: string, name: string, text: string): string {
  const p = join(dir, name);
  writeFileSync(p, text);
  chmodSync(p, 0o755);
  return p;
}

const hook = (command: string, timeout = 30) => ({ hooks: [{ type: "command", command, timeout }] });
const json = (p: string) => JSON.parse(readFileSync(p, "utf8"));

/** Every hook_message published from now on. */
function hookMessages(hh: Harness): EventData<"hook_message">[] {
  const out: EventData<"hook_message">[] = [];
  hh.rt.bus.subscribeAll((ev) => {
    if (ev.type === "hook_message") out.push(ev.data);
  });
  return out;
}

/** Claude Code's common input fields (hooks reference, "Hook Input"), then airlock's own. */
const COMMON = ["session_id", "transcript_path", "cwd", "permission_mode", "hook_event_name", "parent_session_id", "ancestors"];

describe("each event's hook input", () => {
  test("every event's stdin carries Claude Code's common fields and the event's own, with the session's values", async () => {
    const dir = recordDir();
    // records its stdin as <dir>/<event>.json
    const recorder = script(dir, "record.sh", `#!/bin/sh\nin=$(cat)\nev=$(printf '%s' "$in" | jq -r .hook_event_name)\nprintf '%s' "$in" > "${dir}/$ev.json"\n`);
    const all = hook(recorder);
    h = await startHarness({
      config: {
        provider: { name: "scripted", script: "turns.yaml" },
        mode: "autonomous",
        tools: { developer__write_file: { permission: "ask" } },
        hooks: {
          UserPromptSubmit: [all],
          SessionStart: [all],
          PostToolUse: [{ matcher: "Write", ...all }],
          Stop: [all],
          SubagentStop: [all],
          // says something once recorded, so the test can wait for it (Notification runs detached)
          Notification: [{ matcher: "permission_prompt", ...hook(`${recorder} && echo '{"systemMessage":"recorded"}'`) }],
          SessionEnd: [all],
          PreCompact: [all],
        },
      },
      files: {
        "turns.yaml": `
turns:
  - tool_calls: [{ name: developer__write_file, arguments: { path: "hello.txt", content: "hi" } }]
  - tool_calls: [{ name: subagent__spawn, arguments: { instructions: "say done" } }]
  - text: "all done"
subagents:
  - turns:
      - text: "child done"
`,
      },
    });
    const said = hookMessages(h);
    const s = await h.createSession({ mode: "autonomous" });
    const started = await h.rt.startTurn(s.id, "go");
    await waitForBus(h.rt, () => h!.rt.cards.size === 1);
    const card = ((await (await h.api(`/sessions/${s.id}/actions`)).json()) as any).actions[0];
    expect((await decide(h, s.id, card.request_id, "allow_once")).status).toBe(200);
    const r = await started.done;
    expect(r).toMatchObject({ status: "completed", answer: "all done" });
    const child = (await h.rt.store.listSessions({ parent: s.id }))[0]!;
    const writeCall = (await h.rt.store.listMessages(s.id)).find((m) => m.tool_calls?.[0]?.name === "developer__write_file")!.tool_calls![0]!;
    // PreCompact fired directly, with trigger "manual" (history shrinking fires it with "auto": test/integration/long-session.test.ts)
    const compactHooks = new AgentHooks({ bus: h.rt.bus, store: h.rt.store, configFor: (x) => h!.rt.configFor(x), tool: (n) => h!.rt.registry.get(n), transcriptPath: (id) => h!.rt.transcriptPath(id) });
    await compactHooks.preCompact({ session: await h.rt.store.requireSession(s.id), turnId: r.turn_id, signal: new AbortController().signal }, "manual", "keep the test names");
    await waitForBus(h.rt, () => said.some((m) => m.event === "Notification"), 60_000);
    expect(said).toEqual([{ session_id: s.id, event: "Notification", hook: expect.any(String), kind: "system_message", message: "recorded" }]);
    const workspace = s.workspace as string;
    const transcript = (id: string) => h!.rt.transcriptPath(id);
    const rootTranscript = await transcript(s.id);
    const childTranscript = await transcript(child.id);
    await h.close(); // SessionEnd fires as the runtime closes
    h = undefined;

    const root = { session_id: s.id, cwd: workspace, permission_mode: "bypassPermissions", parent_session_id: null, ancestors: [], transcript_path: rootTranscript };
    const expected: Record<string, Record<string, unknown>> = {
      SessionStart: { ...root, source: "startup" },
      UserPromptSubmit: { ...root, prompt: "go" },
      PostToolUse: {
        ...root,
        tool_name: "Write",
        airlock_tool_name: "developer__write_file",
        tool_input: { file_path: join(workspace, "hello.txt"), content: "hi" },
        tool_use_id: writeCall.id,
        tool_response: { path: join(workspace, "hello.txt"), bytes: 2 },
      },
      Notification: { ...root, message: expect.any(String), notification_type: "permission_prompt", title: "airlock: permission needed" },
      SubagentStop: { ...root, session_id: child.id, transcript_path: childTranscript, parent_session_id: s.id, ancestors: [s.id], stop_hook_active: false, last_assistant_message: "child done" },
      Stop: { ...root, stop_hook_active: false, last_assistant_message: "all done" },
      PreCompact: { ...root, trigger: "manual", custom_instructions: "keep the test names" },
      SessionEnd: { ...root, reason: "other" },
    };
    for (const [event, want] of Object.entries(expected)) {
      const got = json(join(dir, `${event}.json`));
      expect({ event, keys: Object.keys(got).sort() }).toEqual({ event, keys: [...COMMON, ...Object.keys(want)].filter((k, i, a) => a.indexOf(k) === i).sort() });
      expect(got).toMatchObject({ hook_event_name: event, ...want });
    }
    const note = json(join(dir, "Notification.json"));
    expect(note.message).toContain("developer__write_file");
    expect(note.message).toContain(s.id);
  });
});

describe("Stop hooks", () => {
  test("a Stop hook that blocks twice then allows: the model gets two continuations with the reasons, stop_hook_active false then true", async () => {
    const dir = recordDir();
    const stop = script(
      dir,
      "stop.sh",
      `#!/bin/sh\nn=$(cat "${dir}/n" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "${dir}/n"\ncat > "${dir}/in-$n.json"\nif [ $n -le 2 ]; then echo "tests still fail ($n)" >&2; exit 2; fi\nexit 0\n`,
    );
    h = await startHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous", hooks: { Stop: [hook(stop)] } },
      files: { "turns.yaml": "turns:\n  - text: first\n  - text: second\n  - text: third\n" },
    });
    const s = await h.createSession({ mode: "autonomous" });
    const r = await h.rt.runTurn(s.id, "fix the tests");
    expect(r).toMatchObject({ status: "completed", answer: "third", iterations: 3 });
    const msgs = (await h.rt.store.listMessages(s.id)).map((m) => ({ role: m.role, content: m.content, ...(m.name ? { name: m.name } : {}) }));
    expect(msgs).toEqual([
      { role: "user", content: "fix the tests" },
      { role: "assistant", content: "first" },
      { role: "user", content: "[Stop hook feedback]\ntests still fail (1)", name: "hook" },
      { role: "assistant", content: "second" },
      { role: "user", content: "[Stop hook feedback]\ntests still fail (2)", name: "hook" },
      { role: "assistant", content: "third" },
    ]);
    expect([1, 2, 3].map((n) => json(join(dir, `in-${n}.json`)))).toMatchObject([
      { stop_hook_active: false, last_assistant_message: "first" },
      { stop_hook_active: true, last_assistant_message: "second" },
      { stop_hook_active: true, last_assistant_message: "third" },
    ]);
  });

  test("a Stop hook that always blocks keeps the turn going limits.max_stop_continuations times, then is not run again and the turn ends", async () => {
    const dir = recordDir();
    const stop = script(dir, "stop.sh", `#!/bin/sh\ncat >/dev/null\necho run >> "${dir}/runs"\necho "not yet" >&2\nexit 2\n`);
    h = await startHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous", limits: { max_stop_continuations: 2 }, hooks: { Stop: [hook(stop)] } },
      files: { "turns.yaml": "turns:\n  - text: a\n  - text: b\n  - text: c\n  - text: d\n" },
    });
    const said = hookMessages(h);
    const s = await h.createSession({ mode: "autonomous" });
    const r = await h.rt.runTurn(s.id, "go");
    expect(r).toMatchObject({ status: "completed", answer: "c", iterations: 3 });
    expect(readFileSync(join(dir, "runs"), "utf8").trim().split("\n").length).toBe(2);
    expect(said).toMatchObject([{ event: "Stop", kind: "skipped", hook: stop, turn_id: r.turn_id }]);
    expect(said[0]!.message).toContain("limits.max_stop_continuations");
  });

  test("a Stop hook that crashes does not keep the turn going; its failure is a hook_message", async () => {
    h = await startHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous", hooks: { Stop: [hook("exit 7")] } },
      files: { "turns.yaml": "turns:\n  - text: a\n  - text: b\n" },
    });
    const said = hookMessages(h);
    const s = await h.createSession({ mode: "autonomous" });
    expect(await h.rt.runTurn(s.id, "go")).toMatchObject({ status: "completed", answer: "a", iterations: 1 });
    expect(said).toMatchObject([{ event: "Stop", kind: "failed", code: "hook_error", hook: "exit 7" }]);
  });
});

describe("PostToolUse hooks", () => {
  test("a formatter hook rewrites the file after Edit: the file on disk is formatted and the model gets the edit's result", async () => {
    const dir = recordDir();
    // strips trailing blanks from the edited file, as a formatter would
    const fmt = script(dir, "format.sh", `#!/bin/sh\nf=$(jq -r .tool_input.file_path)\nsed -i 's/[[:space:]]*$//' "$f"\n`);
    h = await startHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous", hooks: { PostToolUse: [{ matcher: "Edit|Write", ...hook(fmt) }] } },
      files: {
        "turns.yaml": `
turns:
  - tool_calls: [{ name: developer__edit_file, arguments: { path: "main.py", old_string: "x = 1", new_string: "x = 2    " } }]
  - text: "edited"
`,
      },
      workspaceFiles: { "main.py": "x = 1\nprint(x)\n" },
    });
    const s = await h.createSession({ mode: "autonomous" });
    expect(await h.rt.runTurn(s.id, "edit")).toMatchObject({ status: "completed", answer: "edited" });
    expect(readFileSync(join(h.workspace, "main.py"), "utf8")).toBe("x = 2\nprint(x)\n");
    const tool = (await h.rt.store.listMessages(s.id)).find((m) => m.role === "tool")!;
    expect(tool.is_error).toBe(false);
    expect(JSON.parse(tool.content)).toMatchObject({ path: join(s.workspace as string, "main.py") });
  });

  test("a logger in the style of public PostToolUse loggers runs unchanged and appends tool_name and tool_response", async () => {
    const dir = recordDir();
    const log = join(dir, "tools.log");
    const logger = script(
      dir,
      "log_tool.py",
      `#!/usr/bin/python3
import json, sys
data = json.load(sys.stdin)
with open(${JSON.stringify(log)}, "a") as f:
    f.write(json.dumps({"tool": data["tool_name"], "response": data["tool_response"]}) + "\\n")
sys.exit(0)
`,
    );
    h = await startHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous", hooks: { PostToolUse: [{ matcher: "", ...hook(logger) }] } },
      files: {
        "turns.yaml": `
turns:
  - tool_calls:
      - { name: developer__write_file, arguments: { path: "a.txt", content: "abc" } }
      - { name: developer__shell, arguments: { command: "echo hello" } }
  - text: "ok"
`,
      },
    });
    const s = await h.createSession({ mode: "autonomous" });
    expect(await h.rt.runTurn(s.id, "go")).toMatchObject({ status: "completed", answer: "ok" });
    // the two calls run in parallel and each one's hook runs as it returns: put the lines in the model's order
    const lines = readFileSync(log, "utf8").trim().split("\n").map((l) => JSON.parse(l)).sort((a, b) => (a.tool === "Write" ? -1 : b.tool === "Write" ? 1 : 0));
    expect(lines.map((l) => l.tool)).toEqual(["Write", "Bash"]);
    expect(lines[0].response).toMatchObject({ bytes: 3 });
    expect(JSON.stringify(lines[1].response)).toContain("hello");
    // a logger says nothing: the results reach the model unchanged
    const tools = (await h.rt.store.listMessages(s.id)).filter((m) => m.role === "tool");
    expect(tools.every((m) => !m.content.includes("hook"))).toBe(true);
  });

  test("decision block: the reason reaches the model with the result (the call ran), additionalContext too", async () => {
    const answer = JSON.stringify({ decision: "block", reason: "lint: missing newline at end of a.txt", hookSpecificOutput: { hookEventName: "PostToolUse", additionalContext: "run the linter again" } });
    h = await startHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous", hooks: { PostToolUse: [{ matcher: "Write", ...hook(`cat >/dev/null; echo '${answer}'`) }] } },
      files: { "turns.yaml": "turns:\n  - tool_calls: [{ name: developer__write_file, arguments: { path: \"a.txt\", content: \"abc\" } }]\n  - text: fixed\n" },
    });
    const s = await h.createSession({ mode: "autonomous" });
    expect(await h.rt.runTurn(s.id, "go")).toMatchObject({ status: "completed", answer: "fixed" });
    expect(readFileSync(join(h.workspace, "a.txt"), "utf8")).toBe("abc");
    const tool = (await h.rt.store.listMessages(s.id)).find((m) => m.role === "tool")!;
    const [result, ...notes] = tool.content.split("\n\n");
    expect(JSON.parse(result!)).toMatchObject({ bytes: 3 });
    expect(notes).toEqual(["[PostToolUse hook feedback]\nlint: missing newline at end of a.txt", "[PostToolUse hook context]\nrun the linter again"]);
  });

  test("continue: false stops the turn after the result is stored (hook_stopped), with stopReason and systemMessage shown to the person", async () => {
    const answer = JSON.stringify({ continue: false, stopReason: "build is red", systemMessage: "stopping here" });
    h = await startHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous", hooks: { PostToolUse: [hook(`cat >/dev/null; echo '${answer}'`)] } },
      files: { "turns.yaml": "turns:\n  - tool_calls: [{ name: developer__write_file, arguments: { path: \"a.txt\", content: \"abc\" } }]\n  - text: never\n" },
    });
    const said = hookMessages(h);
    const s = await h.createSession({ mode: "autonomous" });
    const r = await h.rt.runTurn(s.id, "go");
    expect(r).toMatchObject({ status: "failed", error: { code: "hook_stopped" }, iterations: 1 });
    expect(r.error!.message).toContain("build is red");
    expect((await h.rt.store.listMessages(s.id)).map((m) => m.role)).toEqual(["user", "assistant", "tool"]);
    expect(said).toMatchObject([
      { event: "PostToolUse", kind: "system_message", message: "stopping here" },
      { event: "PostToolUse", kind: "stopped", message: "build is red" },
    ]);
  });
});

describe("UserPromptSubmit and SessionStart hooks", () => {
  const GUARD = `#!/usr/bin/python3
import json, re, sys
data = json.load(sys.stdin)
if re.search(r"sk-[A-Za-z0-9]{20,}", data["prompt"]):
    print("the prompt contains what looks like an API key; remove it", file=sys.stderr)
    sys.exit(2)
print(json.dumps({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "current branch: main"}}))
`;

  test("a prompt with a secret-looking string is blocked before the model sees it; a clean one gets the hook's context", async () => {
    const dir = recordDir();
    const guard = script(dir, "guard.py", GUARD);
    h = await startHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous", hooks: { UserPromptSubmit: [hook(guard)] } },
      files: { "turns.yaml": "turns:\n  - text: hello\n" },
    });
    const s = await h.createSession({ mode: "autonomous" });
    const blocked = await h.rt.runTurn(s.id, "use key sk-abcdefghijklmnopqrstuvwxyz123 please");
    expect(blocked).toMatchObject({ status: "failed", iterations: 0, error: { code: "prompt_blocked" } });
    expect(blocked.error!.message).toContain("looks like an API key");
    expect(await h.rt.store.listMessages(s.id)).toEqual([]);
    const ok = await h.rt.runTurn(s.id, "say hello");
    expect(ok).toMatchObject({ status: "completed", answer: "hello" });
    expect((await h.rt.store.listMessages(s.id)).map((m) => [m.role, m.content, m.name ?? null])).toEqual([
      ["user", "say hello", null],
      ["user", "[UserPromptSubmit hook context]\ncurrent branch: main", "hook"],
      ["assistant", "hello", null],
    ]);
  });

  test("a UserPromptSubmit hook that fails blocks the prompt (fail closed), naming the failure", async () => {
    h = await startHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous", hooks: { UserPromptSubmit: [hook("cat >/dev/null; echo boom >&2; exit 1")] } },
      files: { "turns.yaml": "turns:\n  - text: hello\n" },
    });
    const s = await h.createSession({ mode: "autonomous" });
    const r = await h.rt.runTurn(s.id, "hi");
    expect(r).toMatchObject({ status: "failed", iterations: 0, error: { code: "prompt_blocked" } });
    expect(r.error!.message).toContain("hook_error");
    expect(r.error!.message).toContain("boom");
  });

  test("SessionStart's plain-text output reaches the model at the session's first turn, once", async () => {
    h = await startHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous", hooks: { SessionStart: [{ matcher: "startup", ...hook("cat >/dev/null; echo 'this project uses tabs'") }] } },
      files: { "turns.yaml": "turns:\n  - text: one\n  - text: two\n" },
    });
    const s = await h.createSession({ mode: "autonomous" });
    await h.rt.runTurn(s.id, "first");
    await h.rt.runTurn(s.id, "second");
    expect((await h.rt.store.listMessages(s.id)).map((m) => [m.role, m.content])).toEqual([
      ["user", "first"],
      ["user", "[SessionStart hook context]\nthis project uses tabs"],
      ["assistant", "one"],
      ["user", "second"],
      ["assistant", "two"],
    ]);
  });
});

describe("Notification hooks", () => {
  test("a parked card fires Notification with the card's message; the card is listed while the slow hook still runs", async () => {
    const dir = recordDir();
    // records its input, then waits until the test releases it, then says so
    const slow = script(
      dir,
      "notify.sh",
      `#!/bin/sh\ncat > "${dir}/in.json"\nwhile [ ! -e "${dir}/release" ]; do sleep 0.05; done\necho '{"systemMessage":"notified"}'\n`,
    );
    h = await startHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "smart", hooks: { Notification: [hook(slow, 120)] } },
      files: { "turns.yaml": "turns:\n  - tool_calls: [{ name: developer__write_file, arguments: { path: \"n.txt\", content: \"x\" } }]\n  - text: done\n" },
    });
    const said = hookMessages(h);
    const s = await h.createSession({ mode: "smart" });
    const started = await h.rt.startTurn(s.id, "go");
    await waitForBus(h.rt, () => h!.rt.cards.size === 1);
    const actions = ((await (await h.api(`/sessions/${s.id}/actions`)).json()) as any).actions;
    expect(actions.length).toBe(1);
    expect(said).toEqual([]); // the hook has not finished: the card did not wait for it
    writeFileSync(join(dir, "release"), "");
    await waitForBus(h.rt, () => said.length > 0, 60_000);
    expect(said).toMatchObject([{ session_id: s.id, event: "Notification", kind: "system_message", message: "notified" }]);
    const input = json(join(dir, "in.json"));
    expect(input).toMatchObject({ hook_event_name: "Notification", notification_type: "permission_prompt", session_id: s.id });
    expect(input.message).toContain("developer__write_file");
    expect(input.message).toContain(actions[0].reason);
    expect((await decide(h, s.id, actions[0].request_id, "allow_once")).status).toBe(200);
    expect(await started.done).toMatchObject({ status: "completed", answer: "done" });
  });
});

describe("Notification hooks, none configured", () => {
  test("a card whose session has no Notification hook reads no session row once it is published (the read ran before its SSE frame was sent)", async () => {
    h = await startHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "smart", hooks: { PreToolUse: [{ matcher: "Glob", ...hook("true") }] } },
      files: { "turns.yaml": "turns:\n  - tool_calls: [{ name: developer__write_file, arguments: { path: \"n.txt\", content: \"x\" } }]\n  - text: done\n" },
    });
    const s = await h.createSession({ mode: "smart" });
    // session reads made after the card was published, until it is answered
    let published = false;
    let reads = 0;
    h.rt.bus.subscribeAll((ev) => {
      if (ev.type === "action_required") published = true;
    });
    const store = h.rt.store;
    const getSession = store.getSession.bind(store);
    store.getSession = async (id: string) => {
      if (published) reads++;
      return getSession(id);
    };
    const started = await h.rt.startTurn(s.id, "go");
    await waitForBus(h.rt, () => h!.rt.cards.size === 1);
    // the listener's deferred work would have run by now: two turns of the event loop and a timer
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    await Bun.sleep(20);
    expect(published).toBe(true);
    expect(reads).toBe(0);
    const [card] = h.rt.cards.listForSession(s.id);
    expect((await decide(h, s.id, card!.request_id, "allow_once")).status).toBe(200);
    expect(await started.done).toMatchObject({ status: "completed", answer: "done" });
  });
});

describe("hooks and the turn's life", () => {
  test.each([
    ["UserPromptSubmit", 4711],
    ["Stop", 4712],
  ])("cancelling the turn while a %s hook runs ends the turn cancelled and kills the hook", async (event, marker) => {
    h = await startHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous", hooks: { [event]: [hook(`cat >/dev/null; sleep ${marker}`, 600)] } },
      files: { "turns.yaml": "turns:\n  - text: a\n" },
    });
    const s = await h.createSession({ mode: "autonomous" });
    const started = await h.rt.startTurn(s.id, "go");
    await waitFor(() => processesWith(`sleep ${marker}`).length > 0, `the ${event} hook to start`);
    expect(h.rt.cancel(s.id)).toBe(true);
    expect(await started.done).toMatchObject({ status: "cancelled", error: { code: "cancelled" } });
    await waitFor(() => processesWith(`sleep ${marker}`).length === 0, `the ${event} hook to be killed`);
  });

  test("SessionStart says startup at a new session's first turn and resume at its first turn after a restart; SessionEnd fires when the runtime closes", async () => {
    const dir = recordDir();
    const recorder = script(dir, "record.sh", `#!/bin/sh\njq -c '{e: .hook_event_name, s: (.source // .reason)}' >> "${dir}/events"\n`);
    const dataDir = mkdtempSync(join(tmpdir(), "airlock-hook-restart-"));
    const opts = {
      dataDir,
      config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous", hooks: { SessionStart: [hook(recorder)], SessionEnd: [hook(recorder)] } },
      files: { "turns.yaml": "turns:\n  - text: a\n  - text: b\n  - text: c\n" },
    };
    try {
      h = await startHarness(opts);
      const s = await h.createSession({ mode: "autonomous" });
      await h.rt.runTurn(s.id, "one");
      await h.rt.runTurn(s.id, "two");
      await h.close();
      h = await startHarness(opts);
      await h.rt.runTurn(s.id, "three");
      await h.close();
      h = undefined;
      const events = readFileSync(join(dir, "events"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
      expect(events).toEqual([
        { e: "SessionStart", s: "startup" },
        { e: "SessionEnd", s: "other" },
        { e: "SessionStart", s: "resume" },
        { e: "SessionEnd", s: "other" },
      ]);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe("Notification hooks, from run overrides and imported settings (no read skipped wrongly)", () => {
  const turns = "subagents:\n  - turns:\n    - tool_calls: [{ name: developer__write_file, arguments: { path: \"n.txt\", content: \"x\" } }]\n    - text: done\n";
  test.each(["run overrides of the root (a recipe's hooks), card in a subagent", "~/.claude/settings.json (import_claude_settings), card in a subagent"])("%s", async (how) => {
    const dir = recordDir();
    const notify = script(dir, "notify.sh", `#!/bin/sh\ncat > "${dir}/in.json"\necho '{"systemMessage":"notified"}'\n`);
    const imported = how.includes("settings.json");
    const home = mkdtempSync(join(tmpdir(), "airlock-home-"));
    const oldHome = process.env.HOME;
    if (imported) {
      mkdirSync(join(home, ".claude"));
      writeFileSync(join(home, ".claude", "settings.json"), JSON.stringify({ hooks: { Notification: [{ matcher: "", hooks: [{ type: "command", command: notify }] }] } }));
      process.env.HOME = home;
    }
    try {
      h = await startHarness({
        config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "smart", hooks: { import_claude_settings: imported, PreToolUse: [{ matcher: "Glob", ...hook("true") }] } },
        files: { "turns.yaml": turns },
      });
      const said = hookMessages(h);
      const root = await h.createSession({ mode: "smart" });
      if (!imported) h.rt.setRunOverrides(root.id, { hooks: { Notification: [hook(notify)] } } as never);
      const child = await h.rt.createSession({ parent_session_id: root.id, mode: "smart" } as never);
      const started = await h.rt.startTurn(child.id, "go");
      await waitForBus(h.rt, () => h!.rt.cards.size === 1);
      await waitForBus(h.rt, () => said.length > 0, 60_000);
      expect(said).toMatchObject([{ session_id: child.id, event: "Notification", message: "notified" }]);
      expect(json(join(dir, "in.json"))).toMatchObject({ hook_event_name: "Notification", session_id: child.id });
      const [card] = h.rt.cards.listForSession(child.id);
      expect((await decide(h, child.id, card!.request_id, "allow_once")).status).toBe(200);
      expect(await started.done).toMatchObject({ status: "completed" });
    } finally {
      process.env.HOME = oldHome;
      rmSync(home, { recursive: true, force: true });
    }
  });
});
