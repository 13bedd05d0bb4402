/**
 * `airlock acp` (issue 21): the editor is the person's surface for its root, and an allow on a card that needs
 * user proof (here the security floor's ask for a file-tool write under `.git`) carries the approver token read
 * from the data dir `airlock acp` runs with, at the moment of the answer. With no token readable there, the
 * editor's allow does not allow: the card is denied, and the model's result and stderr say why. A FIFO put where
 * the token was (anyone who can write the data dir can) is no token: the card is denied at once, and the agent
 * does not hang in the read (it did: the token was read by path with a blocking open).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as acp from "@agentclientprotocol/sdk";
import { removeAfterAllTests } from "../cleanup.ts";
import { compiledBinary } from "../harness-binary.ts";
import { writeScriptedConfig } from "../integration/attach-helpers.ts";
import { callUpdates, newSession, startAcp, statuses, stopAcpRuns, type AcpRun } from "../e2e/acp-helpers.ts";

afterAll(() => stopAcpRuns());

describe("proof cards answered from an editor need the data dir's approver token", () => {
  const proofDir = mkdtempSync(join(tmpdir(), "airlock-acp-proof-"));
  removeAfterAllTests(proofDir);
  const wsDir = mkdtempSync(join(tmpdir(), "airlock-acp-proof-ws-"));
  removeAfterAllTests(wsDir);
  let run: AcpRun;
  beforeAll(async () => {
    // a file-tool write under .git is the security floor's ask, which needs user proof
    writeScriptedConfig(proofDir, ["turns:", '  - tool_calls: [{ name: developer__write_file, arguments: { path: ".git/notes.txt", content: "n" } }]', '  - text: "done"', ""].join("\n"));
    run = await startAcp(await compiledBinary(), proofDir);
    run.respond = async () => ({ outcome: { outcome: "selected", optionId: "allow_once" } });
  }, 240_000);

  test("an allow in the editor carries the approver token read from the data dir", async () => {
    const { sessionId } = await newSession(run, "ws-proof", wsDir);
    const res = await run.ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "note it" }] });
    expect(res.stopReason).toBe("end_turn");
    const asked = run.permissions.filter((p) => p.sessionId === sessionId);
    expect(asked).toHaveLength(1);
    expect(asked[0]!.toolCall.title).toContain("sensitive_ops");
    const write = callUpdates(run, sessionId, /^developer__write_file \.git\/notes\.txt/);
    expect(statuses(write)).toContain("in_progress");
    expect(JSON.stringify(write.at(-1))).not.toContain("denied");
    expect(JSON.stringify(write.at(-1))).not.toContain("user_proof");
  }, 120_000);

  test("with no approver token readable in the data dir, the card is refused, never allowed, and the message says why", async () => {
    rmSync(join(proofDir, "approver-token"));
    const { sessionId, workspace } = await newSession(run, "ws-no-token", wsDir);
    const res = await run.ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "note it" }] });
    expect(res.stopReason).toBe("end_turn");
    expect(run.permissions.filter((p) => p.sessionId === sessionId)).toHaveLength(1);
    const write = callUpdates(run, sessionId, /^developer__write_file \.git\/notes\.txt/);
    expect(statuses(write)).toEqual(["pending", "failed"]);
    expect(JSON.stringify(write.at(-1))).toContain("denied");
    expect(JSON.stringify(write.at(-1))).toContain("approver token");
    expect(existsSync(join(workspace, ".git", "notes.txt"))).toBe(false);
    expect(run.stderr()).toContain("approver token could not be read");
  }, 120_000);

  test("a FIFO at approver-token is no token: the card is refused at once and the agent keeps answering", async () => {
    rmSync(join(proofDir, "approver-token"), { force: true });
    expect(spawnSync("mkfifo", ["-m", "600", join(proofDir, "approver-token")]).status).toBe(0);
    const { sessionId, workspace } = await newSession(run, "ws-fifo-token", wsDir);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const hung = new Promise<"hung">((r) => (timer = setTimeout(() => r("hung"), 60_000)));
    const res = await Promise.race([run.ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "note it" }] }), hung]);
    clearTimeout(timer);
    expect(res).not.toBe("hung");
    const write = callUpdates(run, sessionId, /^developer__write_file \.git\/notes\.txt/);
    expect(statuses(write)).toEqual(["pending", "failed"]);
    expect(JSON.stringify(write.at(-1))).toContain("approver token");
    expect(existsSync(join(workspace, ".git", "notes.txt"))).toBe(false);
  }, 120_000);
});
