/**
 * `airlock acp` (issue 21): the ACP SDK's own client side drives the compiled binary over pipes, with the
 * scripted model. A subagent's card becomes `session/request_permission` (titled with its chain); allow-once
 * runs the call once; reject denies it and the model's tool result says so; `session/cancel` ends the turn
 * `cancelled`; a client that declares it answers no permission requests gets `no_human_surface`; stdout
 * carries nothing but protocol lines.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as acp from "@agentclientprotocol/sdk";
import { removeAfterAllTests } from "../cleanup.ts";
import { compiledBinary } from "../harness-binary.ts";
import { waitFor } from "../processes.ts";
import { SUBAGENT_CARD_SCRIPT, writeScriptedConfig } from "../integration/attach-helpers.ts";
import { callUpdates, newSession as newSessionIn, startAcp as startAcpOn, statuses, stopAcpRuns, type AcpRun } from "./acp-helpers.ts";

const dir = mkdtempSync(join(tmpdir(), "airlock-acp-"));
removeAfterAllTests(dir);
let bin: string;
const startAcp = (capabilities: acp.ClientCapabilities = {}) => startAcpOn(bin, dir, capabilities);
const newSession = (run: AcpRun, name: string) => newSessionIn(run, name, dir);

beforeAll(async () => {
  writeScriptedConfig(dir, SUBAGENT_CARD_SCRIPT);
  bin = await compiledBinary();
}, 240_000);

afterAll(() => stopAcpRuns());

describe("airlock acp: cards as permission requests", () => {
  let run: AcpRun;
  beforeAll(async () => {
    run = await startAcp({ fs: { readTextFile: false, writeTextFile: false } });
  }, 60_000);

  test("a subagent's card becomes session/request_permission titled with its chain; allow-once runs the call once", async () => {
    const { sessionId, workspace } = await newSession(run, "ws-allow");
    run.respond = async () => ({ outcome: { outcome: "selected", optionId: "allow_once" } });
    const res = await run.ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "write it" }] });
    run.respond = undefined;
    expect(res.stopReason).toBe("end_turn");
    const asked = run.permissions.filter((p) => p.sessionId === sessionId);
    expect(asked).toHaveLength(1);
    expect(asked[0]!.toolCall.title).toContain("[root›subagent#0] developer__write_file out.txt");
    expect(asked[0]!.options.map((o) => o.kind)).toContain("allow_once");
    expect(asked[0]!.options.map((o) => o.kind)).toContain("reject_once");
    // smart mode's ask offers a rule for the session: "Allow for this session" names it
    const always = asked[0]!.options.find((o) => o.kind === "allow_always");
    expect(always?.optionId).toBe("allow_session");
    expect(always?.name).toStartWith("Allow for this session: ");
    expect(readFileSync(join(workspace, "out.txt"), "utf8")).toBe("w");
    const write = callUpdates(run, sessionId, /subagent#0\] developer__write_file/);
    expect(statuses(write)).toEqual(["pending", "in_progress", "completed"]);
    expect(asked[0]!.toolCall.toolCallId).toBe(write[0]!.toolCallId);
    expect((write[0] as { rawInput?: unknown }).rawInput).toEqual({ path: "out.txt", content: "w" });
    // the root's own spawn call, and its answer streamed as a message chunk
    expect(statuses(callUpdates(run, sessionId, /^subagent__spawn/))).toEqual(["pending", "in_progress", "completed"]);
    const text = run.updates.filter((n) => n.sessionId === sessionId && n.update.sessionUpdate === "agent_message_chunk").map((n) => (n.update as { content: { text: string } }).content.text);
    expect(text.join("")).toContain("root done");
    expect(run.strayStdout).toEqual([]);
  }, 120_000);

  test("reject denies the call: nothing is written and the model's tool result says denied", async () => {
    const { sessionId, workspace } = await newSession(run, "ws-reject");
    run.respond = async () => ({ outcome: { outcome: "selected", optionId: "deny" } });
    const res = await run.ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "write it" }] });
    run.respond = undefined;
    expect(res.stopReason).toBe("end_turn");
    expect(existsSync(join(workspace, "out.txt"))).toBe(false);
    const write = callUpdates(run, sessionId, /subagent#0\] developer__write_file/);
    expect(statuses(write)).toEqual(["pending", "failed"]);
    expect(JSON.stringify(write.at(-1))).toContain("denied");
  }, 120_000);

  test("a permission request the client cancels is a deny", async () => {
    const { sessionId, workspace } = await newSession(run, "ws-client-cancel");
    run.respond = async () => ({ outcome: { outcome: "cancelled" } });
    const res = await run.ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "write it" }] });
    run.respond = undefined;
    expect(res.stopReason).toBe("end_turn");
    expect(existsSync(join(workspace, "out.txt"))).toBe(false);
    expect(statuses(callUpdates(run, sessionId, /subagent#0\] developer__write_file/))).toEqual(["pending", "failed"]);
  }, 120_000);

  test("session/cancel while the card waits ends the turn cancelled and withdraws the permission request", async () => {
    const { sessionId, workspace } = await newSession(run, "ws-cancel");
    const before = run.permissions.length;
    const prompt = run.ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "write it" }] });
    await waitFor(() => run.permissions.length > before, "the permission request");
    await run.ctx.notify(acp.methods.agent.session.cancel, { sessionId });
    const res = await prompt;
    expect(res.stopReason).toBe("cancelled");
    expect(existsSync(join(workspace, "out.txt"))).toBe(false);
    // the card was withdrawn with the turn (the editor's request cancelled), and the model was not called again
    await waitFor(() => run.withdrawn.some((p) => p.sessionId === sessionId), "the permission request to be withdrawn");
    const text = run.updates.filter((n) => n.sessionId === sessionId && n.update.sessionUpdate === "agent_message_chunk");
    expect(text).toEqual([]);
    expect(statuses(callUpdates(run, sessionId, /subagent#0\] developer__write_file/)).at(-1)).toBe("failed");
  }, 120_000);
});

describe("airlock acp: a client that answers no permission requests", () => {
  test("asks are refused no_human_surface, never sent as requests", async () => {
    const run = await startAcp({ _meta: { airlock: { requestPermission: false } } });
    const { sessionId, workspace } = await newSession(run, "ws-headless");
    const res = await run.ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "write it" }] });
    expect(res.stopReason).toBe("end_turn");
    expect(run.permissions).toEqual([]);
    expect(existsSync(join(workspace, "out.txt"))).toBe(false);
    const write = callUpdates(run, sessionId, /subagent#0\] developer__write_file/);
    expect(statuses(write)).toEqual(["pending", "failed"]);
    expect(JSON.stringify(write.at(-1))).toContain("no_human_surface");
  }, 120_000);
});

describe("airlock acp: notes about a workspace's Claude Code hooks", () => {
  test("each is said once on stderr: an untrusted folder's hooks not run, and a settings file that cannot be read", async () => {
    const own = mkdtempSync(join(tmpdir(), "airlock-acp-notes-"));
    removeAfterAllTests(own);
    writeScriptedConfig(own, 'turns:\n  - text: "done"\n');
    writeFileSync(join(own, "airlock.yaml"), "hooks: { import_claude_settings: true }\n", { flag: "a" });
    const run = await startAcpOn(bin, own);
    for (const name of ["ws-hooks", "ws-fifo"]) mkdirSync(join(own, name, ".claude"), { recursive: true });
    writeFileSync(join(own, "ws-hooks", ".claude", "settings.json"), JSON.stringify({ hooks: { PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: "true" }] }] } }));
    expect(Bun.spawnSync(["mkfifo", join(own, "ws-fifo", ".claude", "settings.json")]).exitCode).toBe(0);
    await newSessionIn(run, "ws-hooks", own);
    await newSessionIn(run, "ws-fifo", own);
    await waitFor(() => run.stderr().includes("not a regular file"), "the note about the FIFO settings file", 30_000);
    const lines = run.stderr().split("\n");
    // was twice: the runtime's `airlock: WARNING:` line and acp's own `airlock acp:` copy; the unreadable file only by acp
    expect(lines.filter((l) => l.includes("its hooks are NOT run"))).toHaveLength(1);
    expect(lines.filter((l) => l.includes("not a regular file"))).toHaveLength(1);
    expect(lines.filter((l) => l.includes("settings.json")).every((l) => l.startsWith("airlock: WARNING: "))).toBe(true);
  }, 60_000);
});

describe("airlock acp: allow for this session", () => {
  test("choosing allow_session stores the card's rule for the tree: the same call later runs without asking", async () => {
    const own = mkdtempSync(join(tmpdir(), "airlock-acp-session-rule-"));
    removeAfterAllTests(own);
    writeScriptedConfig(
      own,
      [
        "turns:",
        '  - tool_calls: [{ name: developer__write_file, arguments: { path: "out.txt", content: "one" } }]',
        '  - tool_calls: [{ name: developer__write_file, arguments: { path: "out.txt", content: "two" } }]',
        '  - text: "done"',
        "",
      ].join("\n"),
    );
    const run = await startAcpOn(bin, own);
    const { sessionId, workspace } = await newSessionIn(run, "ws", own);
    run.respond = async () => ({ outcome: { outcome: "selected", optionId: "allow_session" } });
    const res = await run.ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "write twice" }] });
    expect(res.stopReason).toBe("end_turn");
    expect(run.permissions).toHaveLength(1);
    const calls = run.updates.filter((n) => n.update.sessionUpdate === "tool_call_update" && n.update.status === "completed");
    expect(calls).toHaveLength(2);
    expect(readFileSync(join(workspace, "out.txt"), "utf8")).toBe("two");
  }, 120_000);
});
