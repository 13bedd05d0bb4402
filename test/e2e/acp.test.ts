/**
 * `airlock acp` (issue 21): the ACP SDK's own client side drives the compiled binary over pipes, with the
 * scripted model. A subagent's card becomes `session/request_permission` (titled with its chain); allow-once
 * runs the call once; reject denies it and the model's tool result says so; `session/cancel` ends the turn
 * `cancelled`; a client that declares it answers no permission requests gets `no_human_surface`; stdout
 * carries nothing but protocol lines.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import * as acp from "@agentclientprotocol/sdk";
import { removeAfterAllTests } from "../cleanup.ts";
import { compiledBinary } from "../harness-binary.ts";
import { waitFor } from "../processes.ts";
import { SUBAGENT_CARD_SCRIPT, writeScriptedConfig } from "../integration/attach-helpers.ts";

const dir = mkdtempSync(join(tmpdir(), "airlock-acp-"));
removeAfterAllTests(dir);
let bin: string;

/** One `airlock acp` process and an SDK client connected to it through its stdin/stdout. */
interface AcpRun {
  proc: Bun.Subprocess<"pipe", "pipe", "pipe">;
  updates: acp.SessionNotification[];
  permissions: acp.RequestPermissionRequest[];
  /** Permission requests the agent withdrew (`$/cancel_request`) before they were answered. */
  withdrawn: acp.RequestPermissionRequest[];
  /** How the next permission request is answered (default: wait until `respond` is set). */
  respond: ((req: acp.RequestPermissionRequest, signal: AbortSignal) => Promise<acp.RequestPermissionResponse>) | undefined;
  /** Every stdout line that was not a JSON-RPC message. */
  strayStdout: string[];
  stderr(): string;
  ctx: acp.ClientContext;
  done: Promise<void>;
  finish(): void;
}

const running: AcpRun[] = [];

/** The client's fs methods, for a client that offers them. */
interface ClientFs {
  read?(req: acp.ReadTextFileRequest): acp.ReadTextFileResponse;
  write?(req: acp.WriteTextFileRequest): void;
}

/** Spawns `airlock acp` on `dataDir` (its airlock.yaml) and connects the SDK client (initialize sent with `capabilities`). */
async function startAcp(capabilities: acp.ClientCapabilities = {}, dataDir = dir, fs: ClientFs = {}): Promise<AcpRun> {
  const proc = Bun.spawn([bin, "acp", "--data-dir", dataDir, "--config", join(dataDir, "airlock.yaml")], {
    cwd: dirname(bin),
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: "/usr/bin:/bin", HOME: dirname(bin) },
  });
  let err = "";
  void (async () => {
    for await (const c of proc.stderr.pipeThrough(new TextDecoderStream())) err += c;
  })();
  // stdout is read twice: the protocol stream, and a check that every line is a JSON-RPC message
  const [forClient, forCheck] = proc.stdout.tee();
  const run = { proc, updates: [], permissions: [], withdrawn: [], respond: undefined, strayStdout: [], stderr: () => err } as unknown as AcpRun;
  void (async () => {
    let buf = "";
    for await (const c of forCheck.pipeThrough(new TextDecoderStream())) {
      buf += c;
      let i: number;
      while ((i = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        try {
          if ((JSON.parse(line) as { jsonrpc?: string }).jsonrpc !== "2.0") run.strayStdout.push(line);
        } catch {
          run.strayStdout.push(line);
        }
      }
    }
  })();
  const output = new WritableStream<Uint8Array>({
    async write(chunk) {
      proc.stdin.write(chunk);
      await proc.stdin.flush();
    },
    async close() {
      await proc.stdin.end();
    },
  });
  const app = acp
    .client({ name: "airlock-acp-test" })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      run.updates.push(params);
    })
    .onRequest(acp.methods.client.session.requestPermission, async ({ params, signal }) => {
      run.permissions.push(params);
      await waitFor(() => run.respond !== undefined || signal.aborted, "the test to answer the permission request");
      if (signal.aborted) {
        run.withdrawn.push(params);
        return { outcome: { outcome: "cancelled" } };
      }
      return run.respond!(params, signal);
    })
    .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => {
      if (!fs.read) throw acp.RequestError.methodNotFound("fs/read_text_file");
      return fs.read(params);
    })
    .onRequest(acp.methods.client.fs.writeTextFile, ({ params }) => {
      if (!fs.write) throw acp.RequestError.methodNotFound("fs/write_text_file");
      fs.write(params);
      return {};
    });
  let finish!: () => void;
  const finished = new Promise<void>((r) => (finish = r));
  let ready!: (ctx: acp.ClientContext) => void;
  const gotCtx = new Promise<acp.ClientContext>((r) => (ready = r));
  run.done = app.connectWith(acp.ndJsonStream(output, forClient), async (ctx) => {
    ready(ctx);
    await finished;
  });
  run.finish = finish;
  run.ctx = await gotCtx;
  running.push(run);
  const init = await run.ctx.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: capabilities });
  expect(init.protocolVersion).toBe(acp.PROTOCOL_VERSION);
  return run;
}

/** A new ACP session in its own workspace folder `dir/<name>`. */
async function newSession(run: AcpRun, name: string, under = dir): Promise<{ sessionId: string; workspace: string }> {
  const workspace = join(under, name);
  mkdirSync(workspace, { recursive: true });
  const r = await run.ctx.request(acp.methods.agent.session.new, { cwd: workspace, mcpServers: [] });
  return { sessionId: r.sessionId, workspace };
}

/** The session's tool call updates for the call titled like `re`, in order. */
function callUpdates(run: AcpRun, sessionId: string, re: RegExp): acp.ToolCallUpdate[] {
  const out: acp.ToolCallUpdate[] = [];
  let id: string | undefined;
  for (const n of run.updates) {
    if (n.sessionId !== sessionId) continue;
    const u = n.update;
    if (u.sessionUpdate === "tool_call" && re.test(u.title)) id ??= u.toolCallId;
    if ((u.sessionUpdate === "tool_call" || u.sessionUpdate === "tool_call_update") && u.toolCallId === id) out.push(u);
  }
  return out;
}

const statuses = (us: Array<{ status?: string | null }>) => us.map((u) => u.status).filter(Boolean);

beforeAll(async () => {
  writeScriptedConfig(dir, SUBAGENT_CARD_SCRIPT);
  bin = await compiledBinary();
}, 240_000);

afterAll(async () => {
  for (const r of running) {
    r.finish();
    r.proc.kill("SIGKILL");
  }
});

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

describe("airlock acp: file tools through the editor's fs methods", () => {
  const fsDir = mkdtempSync(join(tmpdir(), "airlock-acp-fs-"));
  removeAfterAllTests(fsDir);
  // the workspace outside the data dir: a path in the data dir is refused before anything else
  const wsDir = mkdtempSync(join(tmpdir(), "airlock-acp-fs-ws-"));
  removeAfterAllTests(wsDir);
  const reads: acp.ReadTextFileRequest[] = [];
  const writes: acp.WriteTextFileRequest[] = [];

  test("reads get the editor's buffer and writes go to the editor, after airlock's checks; a write outside the workspace never reaches it", async () => {
    writeScriptedConfig(
      fsDir,
      [
        "turns:",
        '  - tool_calls: [{ name: developer__read_file, arguments: { path: "in.txt" } }]',
        '  - tool_calls: [{ name: developer__write_file, arguments: { path: "out.txt", content: "from the model" } }]',
        '  - tool_calls: [{ name: developer__write_file, arguments: { path: "../outside.txt", content: "x" } }]',
        '  - text: "done"',
        "",
      ].join("\n"),
    );
    const run = await startAcp({ fs: { readTextFile: true, writeTextFile: true } }, fsDir, {
      read: (req) => {
        reads.push(req);
        return { content: "the editor's unsaved buffer" };
      },
      write: (req) => void writes.push(req),
    });
    const { sessionId, workspace } = await newSession(run, "ws", wsDir);
    await Bun.write(join(workspace, "in.txt"), "on disk");
    run.respond = async () => ({ outcome: { outcome: "selected", optionId: "allow_once" } });
    const res = await run.ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "go" }] });
    expect(res.stopReason).toBe("end_turn");
    expect(reads.map((r) => [r.sessionId, r.path])).toEqual([[sessionId, join(workspace, "in.txt")]]);
    const read = callUpdates(run, sessionId, /^developer__read_file in\.txt/);
    expect(statuses(read)).toEqual(["pending", "in_progress", "completed"]);
    expect(JSON.stringify(read.at(-1)!.rawOutput)).toContain("the editor's unsaved buffer");
    expect(writes.map((w) => [w.sessionId, w.path, w.content])).toEqual([[sessionId, join(workspace, "out.txt"), "from the model"]]);
    const outside = callUpdates(run, sessionId, /^developer__write_file \.\.\/outside\.txt/);
    expect(statuses(outside).at(-1)).toBe("failed");
    expect(JSON.stringify(outside.at(-1))).toContain("path_outside_workspace");
    expect(existsSync(join(wsDir, "outside.txt"))).toBe(false);
  }, 120_000);
});

describe("airlock acp: cards that need user proof", () => {
  const proofDir = mkdtempSync(join(tmpdir(), "airlock-acp-proof-"));
  removeAfterAllTests(proofDir);
  const wsDir = mkdtempSync(join(tmpdir(), "airlock-acp-proof-ws-"));
  removeAfterAllTests(wsDir);
  let run: AcpRun;
  beforeAll(async () => {
    // a file-tool write under .git is the security floor's ask, which needs user proof
    writeScriptedConfig(proofDir, ["turns:", '  - tool_calls: [{ name: developer__write_file, arguments: { path: ".git/notes.txt", content: "n" } }]', '  - text: "done"', ""].join("\n"));
    run = await startAcp({}, proofDir);
    run.respond = async () => ({ outcome: { outcome: "selected", optionId: "allow_once" } });
  }, 60_000);

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
});
