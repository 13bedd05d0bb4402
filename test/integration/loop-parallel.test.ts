/**
 * Parallel tool calls through the real runtime (issue 19): the calls of one model turn run at once,
 * each through the gate; results are stored in the model's order; a card on one call does not hold
 * the others; cancel and a PostToolUse `continue: false` end every call of the turn.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { defineTool } from "../../src/tool/tool.ts";
import { harnessSse, startHarness, type Harness } from "../harness.ts";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** A shell command that creates `mine`, then waits (at most ~60 s) for `theirs`, and says whether it came. */
const handshake = (mine: string, theirs: string) =>
  `touch ${mine}; i=0; while [ ! -f ${theirs} ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; [ -f ${theirs} ] && echo saw-${theirs}`;

const scripted = (turns: string, extra: Record<string, unknown> = {}) => ({
  config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous", sandbox: "workspace-write", ...extra },
  files: { "turns.yaml": turns },
});

describe("parallel tool calls", () => {
  test("two shell calls that each wait for a file the other creates both finish (impossible one after the other)", async () => {
    h = await startHarness(
      scripted(`
turns:
  - tool_calls:
      - { name: developer__shell, arguments: { command: ${JSON.stringify(handshake("a", "b"))} } }
      - { name: developer__shell, arguments: { command: ${JSON.stringify(handshake("b", "a"))} } }
  - text: "both met"
`),
    );
    const s = await h.createSession();
    const r = await h.rt.runTurn(s.id, "meet");
    expect(r).toMatchObject({ status: "completed", answer: "both met", tool_calls: 2 });
    const tools = (await h.rt.store.listMessages(s.id)).filter((m) => m.role === "tool");
    expect(tools.map((m) => m.is_error)).toEqual([false, false]);
    expect(tools[0]!.content).toContain("saw-b");
    expect(tools[1]!.content).toContain("saw-a");
  }, 120_000);

  test("results are stored in the model's order although the second call finishes first", async () => {
    h = await startHarness(
      scripted(`
turns:
  - tool_calls:
      - { name: developer__shell, arguments: { command: ${JSON.stringify(handshake("first-started", "second-reported") + "; echo first")} } }
      - { name: developer__shell, arguments: { command: "echo second" } }
  - text: "ordered"
`),
    );
    const s = await h.createSession();
    const finished: string[] = [];
    h.rt.bus.subscribeAll((ev) => {
      if (ev.type !== "tool_result" || ev.session_id !== s.id) return;
      finished.push(ev.data.call_id);
      // the first call goes on only once the second's result is out
      if (ev.data.ok && JSON.stringify(ev.data.result).includes("second")) writeFileSync(join(h!.workspace, "second-reported"), "");
    });
    expect(await h.rt.runTurn(s.id, "go")).toMatchObject({ status: "completed", answer: "ordered" });
    const msgs = await h.rt.store.listMessages(s.id);
    const assistant = msgs.find((m) => m.role === "assistant" && m.tool_calls?.length)!;
    const ids = assistant.tool_calls!.map((c) => c.id);
    // the second call ended first (the first waited for it) …
    expect(finished).toEqual([ids[1]!, ids[0]!]);
    // … but the results follow the assistant message in the model's order, right after it
    const at = msgs.indexOf(assistant);
    expect(msgs.slice(at + 1, at + 3).map((m) => [m.role, m.tool_call_id])).toEqual([
      ["tool", ids[0]],
      ["tool", ids[1]],
    ]);
    expect(msgs[at + 1]!.content).toContain("first");
    expect(msgs[at + 2]!.content).toContain("second");
  }, 120_000);

  test("a card on the first call does not hold the second: its tool_result arrives before the card is answered", async () => {
    h = await startHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "smart", sandbox: "workspace-write" },
      files: {
        "turns.yaml": `
turns:
  - tool_calls:
      - { name: developer__write_file, arguments: { path: "made.txt", content: "approved" } }
      - { name: developer__list_dir, arguments: { path: "." } }
  - text: "done"
`,
      },
    });
    const s = await h.createSession({ mode: "smart" });
    const reply = await harnessSse(h, `/sessions/${s.id}/reply`, { method: "POST", json: { message: "go" } });
    const card = await reply.waitFor((e) => e.event === "action_required");
    expect(card.data.tool).toBe("developer__write_file");
    // the read-only call ran and returned while the card waits
    const listed = await reply.waitFor((e) => e.event === "tool_result" && e.data.tool === "developer__list_dir");
    expect(listed.data.ok).toBe(true);
    expect(reply.events.some((e) => e.event === "action_resolved")).toBe(false);
    expect(h.rt.inflight.has(s.id)).toBe(true);
    const res = await h.api(`/sessions/${s.id}/actions/${card.data.request_id}`, { method: "POST", json: { decision: "allow_once" } });
    expect(res.status).toBe(200);
    const fin = await reply.waitFor((e) => e.event === "turn_finished");
    expect(fin.data).toMatchObject({ status: "completed", answer: "done" });
    const order = reply.events.filter((e) => e.event === "tool_result" || e.event === "action_resolved").map((e) => (e.event === "tool_result" ? e.data.tool : e.event));
    expect(order).toEqual(["developer__list_dir", "action_resolved", "developer__write_file"]);
    const tools = (await h.rt.store.listMessages(s.id)).filter((m) => m.role === "tool");
    expect(tools.map((m) => [m.name, m.is_error])).toEqual([
      ["developer__write_file", false],
      ["developer__list_dir", false],
    ]);
    reply.close();
  }, 120_000);

  test("cancel mid-way ends every running call at once; a call that finished keeps its result, the others are answered cancelled", async () => {
    h = await startHarness(
      scripted(`
turns:
  - tool_calls:
      - { name: developer__shell, arguments: { command: "sleep 60" } }
      - { name: developer__list_dir, arguments: { path: "." } }
      - { name: developer__shell, arguments: { command: "sleep 60" } }
  - text: "after cancel"
`),
    );
    const s = await h.createSession();
    const reply = await harnessSse(h, `/sessions/${s.id}/reply`, { method: "POST", json: { message: "go" } });
    await reply.waitFor((e) => e.event === "tool_result" && e.data.tool === "developer__list_dir");
    await reply.waitFor(() => reply.events.filter((e) => e.event === "tool_request" && e.data.tool === "developer__shell").length === 2);
    expect(h.rt.cancel(s.id)).toBe(true);
    const fin = await reply.waitFor((e) => e.event === "turn_finished");
    expect(fin.data.status).toBe("cancelled");
    const tools = (await h.rt.store.listMessages(s.id)).filter((m) => m.role === "tool");
    expect(tools.map((m) => [m.name, m.is_error])).toEqual([
      ["developer__shell", true],
      ["developer__list_dir", false],
      ["developer__shell", true],
    ]);
    expect(JSON.parse(tools[0]!.content).error.code).toBe("cancelled");
    expect(JSON.parse(tools[2]!.content).error.code).toBe("cancelled");
    // the history is valid: the next turn runs
    expect(await h.rt.runTurn(s.id, "again")).toMatchObject({ status: "completed", answer: "after cancel" });
    reply.close();
  }, 120_000);

  test("a PostToolUse continue:false on one call cancels the other calls of the turn, which ends hook_stopped", async () => {
    h = await startHarness(
      scripted(
        `
turns:
  - tool_calls:
      - { name: developer__shell, arguments: { command: "sleep 60" } }
      - { name: developer__list_dir, arguments: { path: "." } }
  - text: "never"
`,
        { hooks: { PostToolUse: [{ matcher: "developer__list_dir", hooks: [{ type: "command", command: `echo '{"continue": false, "stopReason": "enough listing"}'`, timeout: 30 }] }] } },
      ),
    );
    const s = await h.createSession();
    const r = await h.rt.runTurn(s.id, "go");
    expect(r.status).toBe("failed");
    expect(r.error!.code).toBe("hook_stopped");
    expect(r.error!.message).toContain("enough listing");
    const tools = (await h.rt.store.listMessages(s.id)).filter((m) => m.role === "tool");
    expect(tools.map((m) => [m.name, m.is_error])).toEqual([
      ["developer__shell", true],
      ["developer__list_dir", false],
    ]);
    expect(JSON.parse(tools[0]!.content).error.code).toBe("cancelled");
  }, 120_000);

  test("a call that ignores its cancel is answered cancelled in its own place after its grace; the results keep the model's order", async () => {
    h = await startHarness(
      scripted(`
turns:
  - tool_calls:
      - { name: test__stubborn, arguments: {} }
      - { name: developer__list_dir, arguments: { path: "." } }
  - text: "after cancel"
`),
    );
    // a tool that never ends and ignores its signal (as a misbehaving MCP server's call might)
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    h.rt.registry.register(
      defineTool({
        name: "test__stubborn",
        description: "never returns",
        schema: z.object({}),
        readOnly: true,
        execute: () => {
          started();
          return new Promise(() => {});
        },
      }),
    );
    const s = await h.createSession();
    const reply = await harnessSse(h, `/sessions/${s.id}/reply`, { method: "POST", json: { message: "go" } });
    await running;
    await reply.waitFor((e) => e.event === "tool_result" && e.data.tool === "developer__list_dir");
    expect(h.rt.cancel(s.id)).toBe(true);
    const fin = await reply.waitFor((e) => e.event === "turn_finished");
    expect(fin.data.status).toBe("cancelled");
    const msgs = await h.rt.store.listMessages(s.id);
    const calls = msgs.find((m) => m.role === "assistant")!.tool_calls!.map((c) => c.id);
    const tools = msgs.filter((m) => m.role === "tool");
    expect(tools.map((m) => [m.tool_call_id, m.is_error])).toEqual([
      [calls[0], true],
      [calls[1], false],
    ]);
    expect(JSON.parse(tools[0]!.content).error.code).toBe("cancelled");
    expect(await h.rt.runTurn(s.id, "again")).toMatchObject({ status: "completed", answer: "after cancel" });
    reply.close();
  }, 120_000);
});
