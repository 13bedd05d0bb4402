/**
 * `airlock acp` with a client that offers `fs/read_text_file` and `fs/write_text_file` (issue 21): the file
 * tools read the editor's buffer and write through the editor, but only the I/O moves. The gate judges the
 * call first and the tool's own checks run before the editor is asked: a write outside the workspace, a read
 * of the data dir's token, and a read through a link leading out of the workspace are refused and never reach
 * the editor.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as acp from "@agentclientprotocol/sdk";
import { removeAfterAllTests } from "../cleanup.ts";
import { compiledBinary } from "../harness-binary.ts";
import { writeScriptedConfig } from "../integration/attach-helpers.ts";
import { callUpdates, newSession, startAcp, statuses, stopAcpRuns } from "../e2e/acp-helpers.ts";

let bin: string;
beforeAll(async () => {
  bin = await compiledBinary();
}, 240_000);
afterAll(() => stopAcpRuns());

describe("file tools through the editor keep every wall", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "airlock-acp-fs-"));
  removeAfterAllTests(dataDir);
  // the workspace outside the data dir: a path in the data dir is refused before anything else
  const wsDir = mkdtempSync(join(tmpdir(), "airlock-acp-fs-ws-"));
  removeAfterAllTests(wsDir);
  const outside = mkdtempSync(join(tmpdir(), "airlock-acp-fs-outside-"));
  removeAfterAllTests(outside);
  const reads: acp.ReadTextFileRequest[] = [];
  const writes: acp.WriteTextFileRequest[] = [];

  test("reads get the editor's buffer and writes go to the editor, after airlock's checks; refused paths never reach it", async () => {
    writeFileSync(join(outside, "secret.txt"), "outside");
    writeScriptedConfig(
      dataDir,
      [
        "turns:",
        '  - tool_calls: [{ name: developer__read_file, arguments: { path: "in.txt" } }]',
        '  - tool_calls: [{ name: developer__write_file, arguments: { path: "out.txt", content: "from the model" } }]',
        '  - tool_calls: [{ name: developer__write_file, arguments: { path: "../outside.txt", content: "x" } }]',
        `  - tool_calls: [{ name: developer__read_file, arguments: { path: ${JSON.stringify(join(dataDir, "approver-token"))} } }]`,
        '  - tool_calls: [{ name: developer__read_file, arguments: { path: "link.txt" } }]',
        '  - text: "done"',
        "",
      ].join("\n"),
    );
    const run = await startAcp(bin, dataDir, { fs: { readTextFile: true, writeTextFile: true } }, {
      read: (req) => {
        reads.push(req);
        return { content: "the editor's unsaved buffer" };
      },
      write: (req) => void writes.push(req),
    });
    const { sessionId, workspace } = await newSession(run, "ws", wsDir);
    writeFileSync(join(workspace, "in.txt"), "on disk");
    symlinkSync(join(outside, "secret.txt"), join(workspace, "link.txt"));
    run.respond = async () => ({ outcome: { outcome: "selected", optionId: "allow_once" } });
    const res = await run.ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "go" }] });
    expect(res.stopReason).toBe("end_turn");
    // only the one read and the one write that passed every check reached the editor
    expect(reads.map((r) => [r.sessionId, r.path])).toEqual([[sessionId, join(workspace, "in.txt")]]);
    expect(writes.map((w) => [w.sessionId, w.path, w.content])).toEqual([[sessionId, join(workspace, "out.txt"), "from the model"]]);
    const read = callUpdates(run, sessionId, /^developer__read_file in\.txt/);
    expect(statuses(read)).toEqual(["pending", "in_progress", "completed"]);
    expect(JSON.stringify(read.at(-1)!.rawOutput)).toContain("the editor's unsaved buffer");
    const out = callUpdates(run, sessionId, /^developer__write_file \.\.\/outside\.txt/);
    expect(statuses(out).at(-1)).toBe("failed");
    expect(JSON.stringify(out.at(-1))).toContain("path_outside_workspace");
    expect(existsSync(join(wsDir, "outside.txt"))).toBe(false);
    const token = callUpdates(run, sessionId, /^developer__read_file .*approver-token/);
    expect(statuses(token).at(-1)).toBe("failed");
    expect(JSON.stringify(token.at(-1))).toContain("data_dir_refused");
    const link = callUpdates(run, sessionId, /^developer__read_file link\.txt/);
    expect(statuses(link).at(-1)).toBe("failed");
    expect(JSON.stringify(link.at(-1))).toContain("path_outside_workspace");
    expect(run.strayStdout).toEqual([]);
  }, 120_000);
});
