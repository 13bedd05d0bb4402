/**
 * @module test/security/acp-client-writes-never-follow-a-path-swapped-after-the-check.test
 * `airlock acp` with the client's `fs/write_text_file` (src/tool/files.ts `writeText`): airlock resolves and
 * checks the real path, opens it without following links, then hands the *path string* to the editor and
 * closes its fd. The editor writes by path later, after a JSON-RPC round trip over the pipes.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, renameSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as acp from "@agentclientprotocol/sdk";
import { removeAfterAllTests } from "../cleanup.ts";
import { compiledBinary } from "../harness-binary.ts";
import { writeScriptedConfig } from "../integration/attach-helpers.ts";
import { newSession, startAcp, stopAcpRuns } from "../e2e/acp-helpers.ts";

let bin: string;
beforeAll(async () => {
  bin = await compiledBinary();
}, 240_000);
afterAll(() => stopAcpRuns());

// Left as a todo: the fix is not small (the editor cannot be handed airlock's fd; it needs either a
// re-check of the real path's every component after the editor answers — which cannot undo a write —
// or refusing client writes under folders a confined process can rename, e.g. writing through the
// disk and only telling the editor to reload).
// Input: the model runs a background shell command in the workspace (workspace-write sandbox) that loops
// `mv ws/sub ws/sub.old; ln -s /outside ws/sub` while a subagent calls developer__write_file
// `sub/x.txt`. What happens: airlock checks `<ws>/sub/x.txt` (a real dir then), sends that path in
// fs/write_text_file; if the swap lands inside the round trip, the editor (which writes by path, following
// links, e.g. Zed's/Node's writeFile) writes `/outside/x.txt` — outside the workspace, or into the data dir
// (the data-dir refusal and `.git` protection are also checked only before the round trip). The window is
// the whole request round trip plus however long the editor takes (it may wait on a save dialog), not a
// few syscalls as on the disk path. Why it matters: workspace-write promises writes stay in the workspace;
// docs/acp.md step 3 says the checked real path goes to the editor, but not that the path may change after.
// The body shows it (`bun test --todo` runs it and it fails today): the swap is done at the start of the
// editor's fs/write_text_file handler, i.e. inside the window, then the editor writes by path as editors do.
test.todo("a file tool's write through the editor never lands outside the workspace when a folder on its path is swapped for a symlink after the check", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "airlock-acp-toctou-"));
  removeAfterAllTests(dataDir);
  const wsDir = mkdtempSync(join(tmpdir(), "airlock-acp-toctou-ws-"));
  removeAfterAllTests(wsDir);
  const outside = mkdtempSync(join(tmpdir(), "airlock-acp-toctou-outside-"));
  removeAfterAllTests(outside);
  writeScriptedConfig(
    dataDir,
    ["turns:", '  - tool_calls: [{ name: developer__write_file, arguments: { path: "sub/x.txt", content: "escaped" } }]', '  - text: "done"', ""].join("\n"),
  );
  let workspace = "";
  const run = await startAcp(bin, dataDir, { fs: { readTextFile: false, writeTextFile: true } }, {
    write: (req) => {
      // the racing process's swap, landing inside the round trip
      renameSync(join(workspace, "sub"), join(workspace, "sub.old"));
      symlinkSync(outside, join(workspace, "sub"));
      writeFileSync(req.path, req.content);
    },
  });
  const session = await newSession(run, "ws", wsDir);
  workspace = session.workspace;
  mkdirSync(join(workspace, "sub"));
  run.respond = async () => ({ outcome: { outcome: "selected", optionId: "allow_once" } });
  const res = await run.ctx.request(acp.methods.agent.session.prompt, { sessionId: session.sessionId, prompt: [{ type: "text", text: "go" }] });
  expect(res.stopReason).toBe("end_turn");
  expect(existsSync(join(outside, "x.txt"))).toBe(false);
}, 120_000);
