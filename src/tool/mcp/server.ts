/**
 * @module tool/mcp/server
 * One configured stdio MCP server: started lazily through the launcher's one confinement plan
 * (launcher/setup.ts with `MCP_SERVER_PROCESS`, allow-listed environment), shared by every session, restarted after a
 * crash or hang with bounded backoff, its process tree killed on close.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import type { Config, McpServerConfig } from "../../config/schema.ts";
import { AirlockError } from "../../errors.ts";
import { expandCredentialPaths } from "../../launcher/credentials.ts";
import { sanitizedEnv } from "../../launcher/env.ts";
import { MCP_SERVER_PROCESS } from "../../launcher/plan.ts";
import type { SandboxPolicy } from "../../launcher/policy.ts";
import { BWRAP_INSTALL_HINT } from "../../launcher/probe.ts";
import { findInPath, resolveRealPath } from "../../launcher/resolve.ts";
import { checkWarning, recheckRoot, releaseRoot, type PreparedRoot, type RootCheck } from "../../launcher/roots.ts";
import { confinementFor, setUpSandbox } from "../../launcher/setup.ts";
import { DEFAULT_BACKOFF, restartPlan, type BackoffPolicy } from "./backoff.ts";
import type { McpCallResult } from "./result.ts";
import { loadMcpSdk, mcpSdk } from "./sdk.ts";
import { ProcessTransport, type ProcessExit } from "./transport.ts";

const CLIENT_INFO = { name: "airlock", version: "0.1.0" };
/** Lines of a server's stderr kept for error messages. */
const STDERR_TAIL = 20;

export interface McpServerOptions {
  /** The key under `mcp_servers` (the tool prefix is `${name}__`). */
  name: string;
  server: McpServerConfig;
  /** The whole config: default `sandbox`, `allow_unenforced`, `execution_backend`. */
  config: Config;
  /** airlock's default workspace (absolute): the server's cwd and writable root unless it sets `cwd`. */
  workspace: string;
  /** Where the server's stderr lines and lifecycle notes go (airlock's stderr). */
  log: (line: string) => void;
  backoff?: BackoffPolicy;
  /** The bubblewrap binary; default `bwrap` on PATH; `null` = treat as missing (tests). */
  bwrapPath?: string | null;
  /** Folders hidden from the confined server (airlock's data dir). */
  hiddenPaths?: string[];
}

interface Connection {
  client: Client;
  transport: ProcessTransport;
  tools: Tool[];
  /** Set when the connection ended (crash, kill, recycle, close). */
  closed: boolean;
  /** True when airlock ended it on purpose (close, recycle): not reported as a crash. */
  byUs: boolean;
  /** True once this connection's failure is recorded for backoff (recorded once). */
  failed: boolean;
  stderrTail: string[];
  /** The workspace as prepared at start (workspace-write): checked for new repository metadata after each call. */
  prepared?: PreparedRoot[];
  /** The check after the server stopped ({@link releaseRoot}), once it began: awaited by `stop`. */
  released?: Promise<void>;
}

/** The state of one server, for status and tests. */
export interface McpServerStatus {
  name: string;
  running: boolean;
  pid?: number;
  policy: SandboxPolicy;
  /** Failure times (ms since epoch) still inside the backoff window. */
  recentFailures: number[];
  /** Processes started so far. */
  starts: number;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(cancelled());
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(cancelled());
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** `p`, or `cancelled` as soon as `signal` aborts (the work behind `p` goes on for whoever else waits on it). */
function whileWanted<T>(p: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return p;
  if (signal.aborted) return Promise.reject(cancelled());
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(cancelled());
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

function cancelled(): AirlockError {
  return new AirlockError("cancelled", "the MCP tool call was cancelled (the turn was cancelled or the call timed out)");
}

function describeExit(exit: ProcessExit | undefined): string {
  if (!exit) return "it closed its connection";
  return exit.signal ? `it was killed by ${exit.signal}` : `it exited with code ${exit.code}`;
}


/** One MCP server. `tools()` and `call()` start it when needed; `close()` stops it for good. */
export class McpServer {
  readonly name: string;
  readonly policy: SandboxPolicy;
  private conn?: Connection;
  private starting?: Promise<Connection>;
  /** Aborts the start in progress (on close: shutdown does not wait out timeout_s). */
  private startAbort?: AbortController;
  private failures: number[] = [];
  /** The last tool list seen: offered while the server is down, so calls can fail with a reason. */
  private lastTools: Tool[] = [];
  private starts = 0;
  private closing = false;
  private warnedUnconfined = false;
  private lastListError?: string;
  /** Why the last listing failed (the start error's message); undefined after a successful one. */
  private lastListFailure?: string;

  constructor(private readonly opts: McpServerOptions) {
    this.name = opts.name;
    this.policy = opts.server.sandbox ?? opts.config.sandbox;
  }

  private get timeoutMs(): number {
    return Math.round(this.opts.server.timeout_s * 1000);
  }

  /** Seconds allowed for start-up and the first listing: `startup_timeout_s`, else `timeout_s`. */
  private get startupS(): number {
    return this.opts.server.startup_timeout_s ?? this.opts.server.timeout_s;
  }

  status(): McpServerStatus {
    const now = Date.now();
    const windowMs = (this.opts.backoff ?? DEFAULT_BACKOFF).windowMs;
    return {
      name: this.name,
      running: !!this.conn && !this.conn.closed,
      pid: this.conn && !this.conn.closed ? this.conn.transport.pid : undefined,
      policy: this.policy,
      recentFailures: this.failures.filter((t) => now - t < windowMs),
      starts: this.starts,
    };
  }

  /**
   * The server's tools. Starts the server if it is not running and no backoff delay is pending;
   * otherwise (or when the start fails) returns the last list seen (empty before any success), and logs why.
   */
  async tools(): Promise<Tool[]> {
    try {
      const conn = await this.connection({ wait: false });
      this.lastListError = undefined;
      this.lastListFailure = undefined;
      return conn.tools;
    } catch (e) {
      this.lastListFailure = (e as Error).message;
      const msg = `[mcp:${this.name}] tools not listed: ${(e as Error).message}`;
      // Listing happens on every model call: say it once per distinct reason, not every time.
      const key = msg.replace(/\d+/g, "#");
      if (key !== this.lastListError) this.opts.log(msg);
      this.lastListError = key;
      return this.lastTools;
    }
  }

  /** Why the last `tools()` could not list (the start or backoff error's message), or undefined when it listed. */
  listFailure(): string | undefined {
    return this.lastListFailure;
  }

  /**
   * Calls tool `tool` (the server's own name) with `args`. Throws AirlockError:
   * `mcp_server_unavailable` (cannot start, crashed during the call, in backoff), `mcp_timeout`
   * (no answer within `timeout_s`; the connection is recycled), `mcp_tool_error` (a protocol-level
   * error for this call), `cancelled` (`signal` aborted), `external_backend`, `sandbox_unavailable`.
   * An `isError` result is returned as is (the caller turns it into an error).
   */
  async call(tool: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<McpCallResult> {
    const conn = await this.connection({ wait: true, signal });
    try {
      const res = (await conn.client.callTool({ name: tool, arguments: args }, undefined, { signal, timeout: this.timeoutMs })) as McpCallResult;
      const check = await this.recheck(conn);
      if (check.quarantined.length === 0 && check.incomplete.length === 0) return res;
      return { ...res, ...(check.quarantined.length > 0 ? { quarantined: check.quarantined } : {}), ...(check.incomplete.length > 0 ? { checkIncomplete: check.incomplete } : {}) };
    } catch (e) {
      await this.recheck(conn);
      if (signal?.aborted) throw cancelled();
      const { McpError, ErrorCode: McpErrorCode } = mcpSdk();
      if (e instanceof McpError && e.code === McpErrorCode.RequestTimeout) {
        await this.recycle(conn, `no answer to ${tool} within ${this.opts.server.timeout_s} s`);
        throw new AirlockError(
          "mcp_timeout",
          `MCP server "${this.name}" did not answer ${tool} within ${this.opts.server.timeout_s} s (mcp_servers.${this.name}.timeout_s); ` +
            `the server was stopped and will be restarted on the next call`,
          { server: this.name, tool },
        );
      }
      if (conn.closed || (e instanceof McpError && e.code === McpErrorCode.ConnectionClosed)) {
        throw this.unavailable(`stopped during the call to ${tool}: ${describeExit(conn.transport.exit)}`, conn, tool);
      }
      throw new AirlockError("mcp_tool_error", `MCP server "${this.name}" rejected ${tool}: ${(e as Error).message}`, { server: this.name, tool });
    }
  }

  /**
   * Quarantines repository metadata the server created, moved or replaced in its workspace since it
   * started (workspace-write only; SPEC §9). Returns what it found (also logged). Never throws.
   */
  private async recheck(conn: Connection): Promise<RootCheck> {
    if (!conn.prepared || conn.prepared.length === 0) return { quarantined: [], incomplete: [] };
    const check = await recheckRoot(conn.prepared);
    const warning = checkWarning(check);
    if (warning) this.opts.log(`[mcp:${this.name}] ${warning}`);
    return check;
  }

  /** Stops the server (its whole process tree) and refuses further starts. */
  async close(): Promise<void> {
    this.closing = true;
    this.startAbort?.abort();
    const starting = this.starting;
    if (starting) await starting.catch(() => {});
    const conn = this.conn;
    this.conn = undefined;
    if (conn) await this.stop(conn);
  }

  /** Kills the running process tree (tests: simulates a crash). Returns the pid killed, if any. */
  kill(sig: NodeJS.Signals = "SIGKILL"): number | undefined {
    const pid = this.conn?.transport.pid;
    if (pid !== undefined) process.kill(pid, sig);
    return pid;
  }

  private unavailable(why: string, conn: Connection | undefined, tool?: string): AirlockError {
    const tail = conn?.stderrTail.length ? ` Its stderr ended with: ${conn.stderrTail.slice(-5).join(" | ")}` : "";
    return new AirlockError(
      "mcp_server_unavailable",
      `MCP server "${this.name}" ${why}; it will be restarted on the next call (check mcp_servers.${this.name} in airlock.yaml if this repeats).${tail}`,
      { server: this.name, ...(tool ? { tool } : {}) },
    );
  }

  private async stop(conn: Connection): Promise<void> {
    conn.byUs = true;
    await conn.client.close().catch(() => {});
    await conn.transport.close().catch(() => {});
    await conn.released;
  }

  private markFailed(conn: Connection): void {
    if (conn.failed) return;
    conn.failed = true;
    this.failures.push(Date.now());
  }

  /** Stops a misbehaving server (counted as a failure for backoff); resolves when its tree is gone. */
  private async recycle(conn: Connection, why: string): Promise<void> {
    if (conn.byUs) return;
    this.markFailed(conn);
    this.opts.log(`[mcp:${this.name}] stopping the server: ${why}`);
    if (this.conn === conn) this.conn = undefined;
    await this.stop(conn);
  }

  /** The live connection, starting the server when needed (honouring backoff; `wait: false` = do not wait for a delay). */
  private async connection(o: { wait: boolean; signal?: AbortSignal }): Promise<Connection> {
    if (this.closing) throw new AirlockError("mcp_server_unavailable", `MCP server "${this.name}" is shut down (airlock is stopping)`, { server: this.name });
    if (this.conn && !this.conn.closed) return this.conn;
    if (this.starting) return whileWanted(this.starting, o.signal);
    const plan = restartPlan(this.failures, Date.now(), this.opts.backoff);
    if (!plan.start) {
      const secs = Math.max(1, Math.ceil((plan.retryAtMs - Date.now()) / 1000));
      throw this.unavailable(`failed ${this.status().recentFailures.length} times recently and is not restarted for another ${secs} s`, undefined);
    }
    if (plan.waitMs > 0) {
      if (!o.wait) throw this.unavailable("is down (a restart is pending)", undefined);
      await sleep(plan.waitMs, o.signal);
      if (this.conn && !this.conn.closed) return this.conn;
      if (this.starting) return whileWanted(this.starting, o.signal);
    }
    this.starting = this.start().finally(() => {
      this.starting = undefined;
    });
    // The start is shared (other calls may wait on it): a caller that is cancelled stops waiting, not the start.
    return whileWanted(this.starting, o.signal);
  }

  /**
   * The argv and environment of the server process under its policy: the launcher's one plan
   * (launcher/setup.ts, `MCP_SERVER_PROCESS`), its named `credentials` kept visible. Throws the launcher's refusals.
   */
  private async command(): Promise<{ argv: string[]; env: Record<string, string>; cwd: string; prepared?: PreparedRoot[]; extraFds?: number[]; lifeline?: boolean; reaperFd?: number }> {
    const { server, config } = this.opts;
    if (config.execution_backend === "external") {
      throw new AirlockError(
        "external_backend",
        `MCP server "${this.name}" was not started: this airlock is configured with execution_backend: external, so it runs no local host processes; remove mcp_servers.${this.name} or set execution_backend: local`,
        { server: this.name },
      );
    }
    // A server with its own `cwd` has that folder as its workspace (writable under workspace-write);
    // otherwise it works in airlock's default workspace. Either way: one workspace per shared server.
    const base = resolveRealPath("/", this.opts.workspace);
    const workspace = server.cwd ? resolveRealPath(base, server.cwd) : base;
    const cwd = workspace;
    if (!existsSync(cwd)) throw this.unavailable(`could not start: its working directory ${cwd} does not exist`, undefined);
    // The user configured these entries for this server: names that look secret pass (an API key for the server).
    const env = sanitizedEnv(server.env, { allowSecretNames: true });
    const command = server.command.includes("/") && !path.isAbsolute(server.command) ? path.resolve(cwd, server.command) : server.command;
    const exe = findInPath(command, env.PATH);
    if (!exe) throw this.unavailable(`could not start: command not found: ${server.command} (searched PATH=${env.PATH})`, undefined);
    const argv = [exe, ...server.args];
    const confinement = await confinementFor(this.policy, this.opts.bwrapPath, env.PATH, config.allow_unenforced, MCP_SERVER_PROCESS);
    switch (confinement.kind) {
      case "refuse":
        throw new AirlockError(
          "sandbox_unavailable",
          `MCP server "${this.name}" was not started: sandbox policy "${this.policy}" cannot be enforced: ${confinement.why}. To fix: ${BWRAP_INSTALL_HINT}`,
          { server: this.name, policy: this.policy },
        );
      case "direct":
        if (!this.warnedUnconfined) {
          this.opts.log(
            confinement.unconfined
              ? `[mcp:${this.name}] WARNING: running UNCONFINED: sandbox policy "${this.policy}" is not enforced (${confinement.why}; allow_unenforced: true)`
              : `[mcp:${this.name}] WARNING: bubblewrap cannot run here, so this "${this.policy}" server's process tree is not tied to airlock's lifetime`,
          );
        }
        this.warnedUnconfined = true;
        return { argv, env, cwd };
      case "bwrap": {
        const setup = await setUpSandbox(confinement, {
          policy: this.policy,
          options: MCP_SERVER_PROCESS,
          argv,
          cwd,
          writableRoots: [workspace],
          homes: [env.HOME, process.env.HOME],
          dataDirs: this.opts.hiddenPaths ?? [],
          namedCredentials: expandCredentialPaths(server.credentials ?? [], env.HOME),
          unixSockets: config.sandbox_unix_sockets ?? [],
          maxFolders: config.sandbox_scan_max_folders,
          refuse: (why) => this.unavailable(`could not start: ${why}`, undefined),
        });
        return {
          argv: setup.argv,
          env,
          cwd,
          ...(confinement.confined ? { prepared: setup.prepared } : {}),
          lifeline: true,
          reaperFd: setup.reaperFd,
          ...(setup.seccompFd !== undefined ? { extraFds: [setup.seccompFd] } : {}),
        };
      }
      default: {
        const never: never = confinement;
        throw new AirlockError("internal", `unknown confinement ${String(never)}`);
      }
    }
  }

  private async start(): Promise<Connection> {
    await loadMcpSdk();
    const { argv, env, cwd, prepared, extraFds, lifeline, reaperFd } = await this.command();
    const stderrTail: string[] = [];
    const transport = new ProcessTransport({
      argv,
      env,
      cwd,
      extraFds,
      lifeline,
      reaperFd,
      onStderrLine: (line) => {
        stderrTail.push(line);
        if (stderrTail.length > STDERR_TAIL) stderrTail.shift();
        this.opts.log(`[mcp:${this.name}] ${line}`);
      },
    });
    const { Client, McpError, ErrorCode: McpErrorCode, ToolListChangedNotificationSchema } = mcpSdk();
    const client = new Client(CLIENT_INFO, { capabilities: {} });
    const conn: Connection = { client, transport, tools: [], closed: false, byUs: false, failed: false, stderrTail, prepared };
    client.onclose = () => {
      if (prepared && !conn.released) {
        conn.released = releaseRoot(prepared).then((check) => {
          const warning = checkWarning(check);
          if (warning) this.opts.log(`[mcp:${this.name}] ${warning}`);
        });
      }
      conn.closed = true;
      if (this.conn === conn) this.conn = undefined;
      if (!conn.byUs) {
        this.markFailed(conn);
        this.opts.log(`[mcp:${this.name}] server stopped: ${describeExit(transport.exit)}; it will be restarted on the next call`);
      }
    };
    client.onerror = (e) => this.opts.log(`[mcp:${this.name}] protocol error: ${e.message}`);
    this.starts++;
    const t0 = performance.now();
    const abort = (this.startAbort = new AbortController());
    try {
      await client.connect(transport, { timeout: Math.round(this.startupS * 1000), signal: abort.signal });
      conn.tools = await this.listAll(client, abort.signal, Math.round(this.startupS * 1000));
    } catch (e) {
      const timedOut = e instanceof McpError && e.code === McpErrorCode.RequestTimeout;
      this.markFailed(conn);
      await this.stop(conn);
      if (abort.signal.aborted) throw new AirlockError("mcp_server_unavailable", `MCP server "${this.name}" is shut down (airlock is stopping)`, { server: this.name });
      if (timedOut) {
        throw new AirlockError(
          "mcp_timeout",
          `MCP server "${this.name}" did not finish starting within ${this.startupS} s (mcp_servers.${this.name}.${this.opts.server.startup_timeout_s !== undefined ? "startup_timeout_s" : "timeout_s"}); it will be tried again on the next call`,
          { server: this.name },
        );
      }
      const why = conn.transport.exit || conn.closed ? describeExit(conn.transport.exit) : (e as Error).message;
      throw this.unavailable(`failed to start (${this.opts.server.command} under ${this.policy}): ${why}`, conn);
    }
    this.lastTools = conn.tools;
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      try {
        conn.tools = await this.listAll(client);
        this.lastTools = conn.tools;
      } catch (e) {
        this.opts.log(`[mcp:${this.name}] could not refresh the tool list: ${(e as Error).message}`);
      }
    });
    this.opts.log(`[mcp:${this.name}] started (pid ${transport.pid}, ${this.policy}, ${conn.tools.length} tools, ${Math.round(performance.now() - t0)} ms)`);
    if (this.closing) {
      await this.stop(conn);
      throw new AirlockError("mcp_server_unavailable", `MCP server "${this.name}" is shut down (airlock is stopping)`, { server: this.name });
    }
    this.conn = conn;
    return conn;
  }

  private async listAll(client: Client, signal?: AbortSignal, timeoutMs: number = this.timeoutMs): Promise<Tool[]> {
    const tools: Tool[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 100; page++) {
      const res = await client.listTools(cursor ? { cursor } : undefined, { timeout: timeoutMs, ...(signal ? { signal } : {}) });
      tools.push(...res.tools);
      cursor = res.nextCursor;
      if (!cursor) break;
    }
    return tools;
  }
}
