/**
 * @module cli/acp
 * `airlock acp`: airlock as an Agent Client Protocol agent over stdio (ACP v1, `@agentclientprotocol/sdk`),
 * for editors such as Zed. Each ACP session is an airlock root session in the editor's `cwd`; a prompt is one
 * turn, streamed as `session/update`s (message chunks, tool calls with status, subagents' calls titled with
 * their chain); every card surfaced at the root becomes `session/request_permission`, answered through the
 * same authority rules as any surface. Stdout carries the protocol only: everything else goes to stderr.
 */
import { isAbsolute } from "node:path";
import { readTokenIfUsable } from "../config/paths.ts";
import type * as Acp from "@agentclientprotocol/sdk";
import type { AnyEvent, TypedEvent } from "../bus/bus.ts";
import type { Card } from "../bus/events.ts";
import type { Decision } from "../card/authority.ts";
import { assertNever } from "../errors.ts";
import { callTitle } from "./call-summary.ts";
import type { Runtime } from "../runtime.ts";
import type { Session } from "../session/types.ts";
import type { ClientFiles } from "../tool/tool.ts";
import { knownAncestors } from "../session/graph.ts";
import { chainPrefixes } from "./chain-prefix.ts";
import type { CommonOptions } from "./context.ts";
import { version as AIRLOCK_VERSION } from "../../package.json" with { type: "json" };

/** Options of `airlock acp` (parsed by main.ts). */
export interface AcpOptions extends CommonOptions {
  /** `--headless`: no person answers through the editor: every ask is refused `no_human_surface`. */
  headless?: boolean;
}

/**
 * Where a client says it cannot answer permission requests (ACP v1 has no capability for it: the method
 * is baseline): `clientCapabilities._meta.airlock.requestPermission === false` in `initialize`.
 */
export const NO_PERMISSION_META = { airlock: { requestPermission: false } } as const;

/** The permission options airlock offers (`optionId`s are airlock's card decisions). */
const OPTION_ALLOW_ONCE: Acp.PermissionOption = { optionId: "allow_once", name: "Allow once", kind: "allow_once" };
const OPTION_REJECT: Acp.PermissionOption = { optionId: "deny", name: "Reject", kind: "reject_once" };

/** One ACP session: an airlock root session and what its current prompt needs. */
interface AcpSession {
  root: string;
  /** Tree membership by session id (the root's descendants), cached. */
  member: Map<string, boolean>;
  /** Tool calls not yet finished, by `${session}:${call_id}`: their tool, arguments and whether an update said `in_progress`. */
  calls: Map<string, { session: string; tool: string; args: unknown; running: boolean }>;
  /** Session updates are sent one after another, in publish order; the prompt's answer waits for the last. */
  queue: Promise<void>;
  /** Set by `session/cancel` during the current prompt. */
  cancelled: boolean;
  /** Aborted when a card of this tree ends by other means than our answer (expired, withdrawn). */
  permissionAborts: Map<string, AbortController>;
  off: () => void;
}

/**
 * Runs `airlock acp` until stdin closes (the editor ends the connection) or SIGINT/SIGTERM: one runtime on
 * the data dir (its default workspace the process cwd), the ACP agent on stdin/stdout.
 * @returns 0 after the connection closed.
 * @throws AirlockError `usage` / `config_invalid` (bad config, missing `provider.script`), `data_dir_unusable` (exit 2 via main.ts).
 */
export async function acp(opts: AcpOptions): Promise<number> {
  const { resolveContext } = await import("./context.ts");
  const { createRuntime } = await import("../runtime.ts");
  const sdk = await (await import("../side/modules.ts")).side.acp();
  // stdout is the protocol: anything written with console.log/info/debug goes to stderr instead
  for (const k of ["log", "info", "debug"] as const) console[k] = (...a: unknown[]) => console.error(...a);
  const ctx = await resolveContext(opts);
  const rt = await createRuntime({ config: ctx.config, configDir: ctx.configDir, configPath: ctx.configPath, dataDir: ctx.dataDir, workspace: process.cwd() });
  try {
    rt.checkProvider();
  } catch (e) {
    await rt.close();
    throw e;
  }
  const output = new WritableStream<Uint8Array>({
    write: (chunk) => new Promise<void>((resolve, reject) => void process.stdout.write(chunk, (err) => (err ? reject(err) : resolve()))),
  });
  const input = Bun.stdin.stream() as ReadableStream<Uint8Array>;
  const app = acpAgent(rt, sdk, { headless: opts.headless === true, log: rt.log });
  const conn = app.connect(sdk.ndJsonStream(output, input));
  const stop = (sig: string) => {
    rt.log(`airlock acp: ${sig}: closing the connection`);
    conn.close();
  };
  const onInt = () => stop("SIGINT");
  const onTerm = () => stop("SIGTERM");
  process.on("SIGINT", onInt);
  process.on("SIGTERM", onTerm);
  rt.log(`airlock acp: ready on stdio (data dir ${ctx.dataDir}); approver token from ${rt.tokens.approverTokenPath}`);
  try {
    await conn.closed;
  } finally {
    process.off("SIGINT", onInt);
    process.off("SIGTERM", onTerm);
    await rt.close();
    // main.ts exits the process next: the last protocol lines must have left the pipe first
    await new Promise<void>((resolve) => void process.stdout.write("", () => resolve()));
  }
  return 0;
}

/**
 * The ACP agent app over a runtime: `initialize`, `session/new`, `session/prompt`, `session/cancel`.
 * `headless`: every session is headless (asks refused `no_human_surface`), as when the client opts out of
 * permission requests ({@link NO_PERMISSION_META}). `log`: one line per call, never stdout.
 */
export function acpAgent(rt: Runtime, sdk: typeof Acp, opts: { headless: boolean; log: (line: string) => void }): Acp.AgentApp {
  const sessions = new Map<string, AcpSession>();
  let canAsk = !opts.headless;
  /** The client's fs methods, from `initialize`. */
  let fs = { readTextFile: false, writeTextFile: false };
  let client: Acp.AgentContext | undefined;
  const { methods, RequestError } = sdk;

  /** Queues one `session/update` of `s` (sent in order; a failed send is logged, never thrown). */
  const update = (s: AcpSession, u: Acp.SessionUpdate): void => {
    const c = client;
    if (!c) return;
    s.queue = s.queue.then(() => c.notify(methods.client.session.update, { sessionId: s.root, update: u })).catch((e: unknown) => opts.log(`airlock acp: session/update failed: ${(e as Error).message}`));
  };

  /** The `[root›subagent#0] ` before a subagent's call titles (cli/chain-prefix.ts, as `airlock run` says it). */
  const chains = chainPrefixes(rt.store);
  const inTree = (s: AcpSession, id: string): boolean => {
    let m = s.member.get(id);
    if (m === undefined) {
      try {
        // the tree's sessions were made (their chains read) in this process: known without a query
        m = id === s.root || knownAncestors(rt.store, id).includes(s.root);
      } catch {
        m = false;
      }
      s.member.set(id, m);
      // its name for chain labels, read now (a label asked for before it arrives shows the id)
      if (m && id !== s.root) chains.learn(id);
    }
    return m;
  };

  /** `[root›subagent#0] ` for a subagent's call, empty for the root's own. */
  const chainPrefix = (s: AcpSession, sessionId: string): string => chains.prefix(s.root, sessionId);

  const onEvent = (s: AcpSession, ev: AnyEvent): void => {
    if (!inTree(s, ev.session_id)) return;
    switch (ev.type) {
      case "delta":
        if (ev.session_id === s.root) update(s, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: ev.data.text } });
        return;
      case "tool_request": {
        const d = ev.data;
        const key = `${d.session_id}:${d.call_id}`;
        const known = s.calls.get(key);
        s.calls.set(key, { session: d.session_id, tool: d.tool, args: d.arguments, running: false });
        const fields = { toolCallId: key, title: callTitle(chainPrefix(s, d.session_id), d.tool, d.arguments), kind: toolKind(d.tool), rawInput: d.arguments };
        // a hook's rewrite of the same call replaces its input; a new call starts pending (judged, maybe asked)
        if (known) update(s, { sessionUpdate: "tool_call_update", ...fields });
        else update(s, { sessionUpdate: "tool_call", ...fields, status: "pending" });
        return;
      }
      case "tool_result": {
        const d = ev.data;
        const key = `${d.session_id}:${d.call_id}`;
        s.calls.delete(key);
        update(s, {
          sessionUpdate: "tool_call_update",
          toolCallId: key,
          status: d.ok ? "completed" : "failed",
          rawOutput: d.ok ? d.result : { error: d.error },
          content: [{ type: "content", content: { type: "text", text: d.ok ? resultText(d.result) : `${d.error?.code}: ${d.error?.message}` } }],
        });
        return;
      }
      case "action_required":
        if (ev.data.surfaced_in === s.root) void askPermission(s, ev as TypedEvent<"action_required">);
        return;
      case "action_resolved": {
        const abort = s.permissionAborts.get(ev.data.request_id);
        if (abort) {
          s.permissionAborts.delete(ev.data.request_id);
          abort.abort();
        }
        return;
      }
      case "turn_started":
      case "message":
      case "error":
      case "turn_finished":
      case "hook_message":
        return;
      default:
        assertNever(ev, "bus event");
    }
  };

  /** The running call a card asks about: the home session's unfinished call of that tool with the same arguments (else the latest of that tool). */
  const callOfCard = (s: AcpSession, card: Card): string => {
    let byTool: string | undefined;
    const want = JSON.stringify(card.arguments);
    for (const [key, c] of s.calls) {
      if (c.session !== card.home_session_id || c.tool !== card.tool) continue;
      if (JSON.stringify(c.args) === want) return key;
      byTool = key;
    }
    return byTool ?? `${card.home_session_id}:${card.request_id}`;
  };

  /** One card → `session/request_permission`; the answer goes to `Cards.resolve` from the root (the editor is the root's surface). */
  const askPermission = async (s: AcpSession, ev: TypedEvent<"action_required">): Promise<void> => {
    const card = ev.data;
    const c = client;
    if (!c) return;
    const toolCallId = callOfCard(s, card);
    const abort = new AbortController();
    s.permissionAborts.set(card.request_id, abort);
    const options = card.suggested_rule
      ? [OPTION_ALLOW_ONCE, { optionId: "allow_session", name: `Allow for this session: ${card.suggested_rule}`, kind: "allow_always" } satisfies Acp.PermissionOption, OPTION_REJECT]
      : [OPTION_ALLOW_ONCE, OPTION_REJECT];
    const title = `${callTitle(chainPrefix(s, card.home_session_id), card.tool, card.arguments)} — ${card.inspector}: ${card.reason}${card.will_fail ? ` (${card.will_fail})` : ""}`;
    await s.queue; // the tool_call this asks about reaches the client first
    let decision: Decision = "deny";
    let reason = "rejected in the editor";
    try {
      const res = await c.request(
        methods.client.session.requestPermission,
        { sessionId: s.root, toolCall: { toolCallId, title, kind: toolKind(card.tool), status: "pending", rawInput: card.arguments }, options },
        { cancellationSignal: abort.signal, stopWaitingOnCancel: true },
      );
      if (res.outcome.outcome === "selected") {
        const id = res.outcome.optionId;
        if (id === "allow_once" || id === "allow_session") decision = id;
        else if (id !== "deny") reason = `the editor answered with an unknown option ${JSON.stringify(id)}: denied`;
      } else reason = "the permission request was cancelled in the editor: denied";
    } catch (e) {
      if (abort.signal.aborted) return; // the card ended first (expired, withdrawn by a cancel): nothing to answer
      reason = `the permission request failed (${(e as Error).message}): denied`;
    } finally {
      s.permissionAborts.delete(card.request_id);
    }
    let approverToken: string | null = null;
    if (decision !== "deny" && card.requires_user_proof) {
      approverToken = readTokenIfUsable(rt.tokens.approverTokenPath);
      if (!approverToken) {
        opts.log(
          `airlock acp: ${card.request_id} needs user proof and the approver token could not be read from ${rt.tokens.approverTokenPath}: the card is refused (denied), never allowed`,
        );
        decision = "deny";
        reason = `allowed in the editor, but the card needs user proof and airlock acp could not read the approver token from ${rt.tokens.approverTokenPath}: denied`;
      }
    }
    const r = await rt.cards.resolve(card.request_id, decision, { sessionId: s.root, approverToken, actor: "acp", ...(decision === "deny" ? { reason } : {}) });
    if (!r.ok) {
      opts.log(`airlock acp: the answer to ${card.request_id} was not applied: ${r.error.code}: ${r.error.message}`);
      // an allow that was refused (proof) must not leave the call waiting for an answer that cannot come
      if (decision !== "deny") await rt.cards.resolve(card.request_id, "deny", { sessionId: s.root, actor: "acp", reason: `the allow was refused: ${r.error.message}` });
      return;
    }
  };

  /** The gate lets a call run: shown `in_progress` (once). */
  const onRun = (r: { session_id: string; call_id: string }): void => {
    for (const s of sessions.values()) {
      if (!inTree(s, r.session_id)) continue;
      const key = `${r.session_id}:${r.call_id}`;
      const call = s.calls.get(key);
      if (!call || call.running) return;
      call.running = true;
      update(s, { sessionUpdate: "tool_call_update", toolCallId: key, status: "in_progress" });
      return;
    }
  };

  /** The editor's fs methods for the file tools of a session in one of this connection's trees (when the client offers them). */
  const clientFilesFor = (session: Session): ClientFiles | undefined => {
    const c = client;
    if (!c || (!fs.readTextFile && !fs.writeTextFile)) return undefined;
    const s = [...sessions.values()].find((x) => inTree(x, session.id));
    if (!s) return undefined;
    const files: ClientFiles = {};
    if (fs.readTextFile) {
      files.readTextFile = async (path, signal) => (await c.request(methods.client.fs.readTextFile, { sessionId: s.root, path }, { cancellationSignal: signal, stopWaitingOnCancel: true })).content;
    }
    if (fs.writeTextFile) {
      files.writeTextFile = async (path, content, signal) => {
        await c.request(methods.client.fs.writeTextFile, { sessionId: s.root, path, content }, { cancellationSignal: signal, stopWaitingOnCancel: true });
      };
    }
    return files;
  };
  const offGate = [rt.gate.onRun(onRun), rt.gate.useClientFiles(clientFilesFor)];
  rt.onClose(() => offGate.forEach((off) => off()));

  const app = sdk
    .agent({ name: "airlock" })
    .onConnect((conn) => {
      client = conn.client;
    })
    .onRequest(methods.agent.initialize, ({ params }) => {
      const meta = params.clientCapabilities?._meta as { airlock?: { requestPermission?: unknown } } | null | undefined;
      if (meta?.airlock?.requestPermission === false) canAsk = false;
      fs = { readTextFile: params.clientCapabilities?.fs?.readTextFile === true, writeTextFile: params.clientCapabilities?.fs?.writeTextFile === true };
      if (fs.readTextFile || fs.writeTextFile) opts.log(`airlock acp: file tools ${[fs.readTextFile && "read", fs.writeTextFile && "write"].filter(Boolean).join(" and ")} through the editor (fs/*_text_file), after airlock's own checks`);
      if (!canAsk) opts.log("airlock acp: no permission requests (headless): every call that needs a person is refused no_human_surface");
      return {
        protocolVersion: sdk.PROTOCOL_VERSION,
        agentCapabilities: {
          loadSession: false,
          promptCapabilities: { image: false, audio: false, embeddedContext: true },
          mcpCapabilities: { http: false, sse: false },
        },
        authMethods: [],
        agentInfo: { name: "airlock", title: "airlock", version: AIRLOCK_VERSION },
      };
    })
    .onRequest(methods.agent.session.new, async ({ params }) => {
      if (!isAbsolute(params.cwd)) throw RequestError.invalidParams({ cwd: params.cwd }, "cwd must be an absolute path");
      if (params.mcpServers.length > 0) {
        opts.log(`airlock acp: the editor's ${params.mcpServers.length} MCP server(s) are not started: airlock runs only the MCP servers of its own config (mcp_servers:)`);
      }
      let session;
      try {
        session = await rt.createSession({ workspace: params.cwd, headless: !canAsk });
      } catch (e) {
        throw RequestError.invalidParams({ code: (e as { code?: string }).code }, (e as Error).message);
      }
      const s: AcpSession = {
        root: session.id,
        member: new Map([[session.id, true]]),
        calls: new Map(),
        queue: Promise.resolve(),
        cancelled: false,
        permissionAborts: new Map(),
        off: () => {},
      };
      s.off = rt.bus.subscribeAll((ev) => onEvent(s, ev));
      sessions.set(session.id, s);
      await rt.logHookNotes(session.id); // stderr, each note once (the runtime logged its import's already)
      return { sessionId: session.id };
    })
    .onRequest(methods.agent.session.prompt, async ({ params }) => {
      const s = sessions.get(params.sessionId);
      if (!s) throw RequestError.sessionNotFound(params.sessionId);
      let turn;
      try {
        turn = await rt.startTurn(s.root, promptText(params.prompt));
      } catch (e) {
        throw RequestError.invalidRequest({ code: (e as { code?: string }).code }, (e as Error).message);
      }
      s.cancelled = false;
      const result = await turn.done;
      await s.queue;
      if (s.cancelled || result.status === "cancelled") return { stopReason: "cancelled" };
      if (result.status === "completed") return { stopReason: "end_turn" };
      const err = result.error ?? { code: "internal", message: "the turn failed" };
      if (err.code === "max_iterations") return { stopReason: "max_turn_requests" };
      if (err.code === "prompt_blocked" || err.code === "hook_stopped") {
        update(s, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: `airlock: ${err.code}: ${err.message}` } });
        await s.queue;
        return { stopReason: "refusal" };
      }
      throw RequestError.internalError({ code: err.code }, `${err.code}: ${err.message}`);
    })
    .onNotification(methods.agent.session.cancel, ({ params }) => {
      const s = sessions.get(params.sessionId);
      if (!s) return;
      s.cancelled = true;
      rt.cancel(s.root, "cancelled by the editor (session/cancel)");
    });
  return app;
}

/** The prompt's blocks as one message: text as is, a link as `@uri`, an embedded text resource as a fenced block under its uri. */
export function promptText(blocks: readonly Acp.ContentBlock[]): string {
  const parts: string[] = [];
  for (const b of blocks) {
    switch (b.type) {
      case "text":
        parts.push(b.text);
        break;
      case "resource_link":
        parts.push(`@${b.uri}`);
        break;
      case "resource":
        if ("text" in b.resource) parts.push(`${b.resource.uri}:\n\`\`\`\n${b.resource.text}\n\`\`\``);
        else parts.push(`@${b.resource.uri}`);
        break;
      case "image":
      case "audio":
        parts.push(`(an ${b.type} block was left out: airlock takes text)`);
        break;
      default:
        assertNever(b, "prompt content block");
    }
  }
  return parts.join("\n\n");
}

/** The ACP tool kind of an airlock tool (icons in the editor). */
function toolKind(tool: string): Acp.ToolKind {
  switch (tool) {
    case "developer__read_file":
    case "developer__list_dir":
      return "read";
    case "developer__write_file":
    case "developer__edit_file":
      return "edit";
    case "developer__shell":
    case "interpreter__python":
    case "interpreter__js":
    case "code_execution__execute":
      return "execute";
    default:
      return "other";
  }
}

/** A tool result as text for the editor (strings as is, anything else as JSON), at most 64 KiB. */
function resultText(result: unknown): string {
  const text = typeof result === "string" ? result : (JSON.stringify(result, null, 2) ?? "");
  return text.length > 65_536 ? `${text.slice(0, 65_536)}\n… (cut)` : text;
}


