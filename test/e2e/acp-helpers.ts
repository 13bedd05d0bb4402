/**
 * @module test/e2e/acp-helpers
 * What the `airlock acp` tests share: the compiled binary run as `airlock acp` through pipes, driven by the
 * ACP SDK's own client side (`client()` + `ndJsonStream`), which records every `session/update`, answers
 * `session/request_permission` as the test says, and checks that stdout carries nothing but JSON-RPC lines.
 */
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import * as acp from "@agentclientprotocol/sdk";
import { expect } from "bun:test";
import { waitFor } from "../processes.ts";

export interface AcpRun {
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

/** Ends every `airlock acp` started by {@link startAcp} (afterAll). */
export function stopAcpRuns(): void {
  for (const r of running.splice(0)) {
    r.finish();
    r.proc.kill("SIGKILL");
  }
}

/** The client's fs methods, for a client that offers them. */
export interface ClientFs {
  read?(req: acp.ReadTextFileRequest): acp.ReadTextFileResponse;
  write?(req: acp.WriteTextFileRequest): void;
}

/** Spawns the binary `bin` as `airlock acp` on `dataDir` (its airlock.yaml) and connects the SDK client (initialize sent with `capabilities`). */
export async function startAcp(bin: string, dataDir: string, capabilities: acp.ClientCapabilities = {}, fs: ClientFs = {}): Promise<AcpRun> {
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

/** A new ACP session in its own workspace folder `under/<name>`. */
export async function newSession(run: AcpRun, name: string, under: string): Promise<{ sessionId: string; workspace: string }> {
  const workspace = join(under, name);
  mkdirSync(workspace, { recursive: true });
  const r = await run.ctx.request(acp.methods.agent.session.new, { cwd: workspace, mcpServers: [] });
  return { sessionId: r.sessionId, workspace };
}

/** The session's tool call updates for the call titled like `re`, in order. */
export function callUpdates(run: AcpRun, sessionId: string, re: RegExp): acp.ToolCallUpdate[] {
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

export const statuses = (us: Array<{ status?: string | null }>) => us.map((u) => u.status).filter(Boolean);

