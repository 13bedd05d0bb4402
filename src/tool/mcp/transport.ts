/**
 * @module tool/mcp/transport
 * The MCP stdio transport airlock uses: the SDK's own newline-delimited JSON-RPC framing
 * (`ReadBuffer`, `serializeMessage`), over a process that WE spawn — in its own process group,
 * with exactly the environment we give it (the SDK's transport adds `SHELL` & co.), stderr as lines.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, readFileSync } from "node:fs";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { holdLifeline, killTree } from "../../launcher/tree.ts";
import { mcpSdk } from "./sdk.ts";

export interface ProcessTransportOptions {
  /** The full argv to execute (already wrapped in bubblewrap where the policy says so). */
  argv: string[];
  /** Exactly the environment of the process (nothing is merged in). */
  env: Record<string, string>;
  cwd: string;
  /** Called with each complete line the process writes on stderr (no trailing newline). */
  onStderrLine?: (line: string) => void;
  /**
   * Open fds given to the process as its fds 3, 4, … (bubblewrap's `--seccomp` filter). The transport
   * owns them: they are closed once the process is spawned, or could not be.
   */
  extraFds?: number[];
  /**
   * Add a lifeline socket as the fd after `extraFds` (bwrap.ts `withLifeline`): the transport keeps
   * its end, unwritten, until the process has exited, so the server's namespace dies with airlock.
   */
  lifeline?: boolean;
  /**
   * With `lifeline`: airlock's fd of the reaper's mark (launcher/reaper.ts), given as the fd after the
   * lifeline. Not owned by the transport: never closed here.
   */
  reaperFd?: number;
}

/** How the process ended, once it has. */
export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/**
 * A `Transport` over a child process's stdin/stdout. `start()` resolves once the process is
 * spawned (rejects if it cannot be); `close()` kills the whole process tree (process group and
 * descendants, via the launcher's `killTree`) and resolves when the process is gone.
 */
export class ProcessTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private child?: ChildProcess;
  private readonly buffer = new (mcpSdk().ReadBuffer)();
  private stderrRest = "";
  private exited?: Promise<void>;
  /** Set once the process has exited. */
  exit?: ProcessExit;

  constructor(private readonly opts: ProcessTransportOptions) {}

  /** The process id (of bubblewrap, when confined), once started. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  start(): Promise<void> {
    if (this.child) throw new Error("ProcessTransport already started");
    const [cmd, ...args] = this.opts.argv;
    return new Promise<void>((resolve, reject) => {
      const child = spawn(cmd!, args, {
        cwd: this.opts.cwd,
        env: this.opts.env,
        detached: true, // own session and process group: the tree is killed as one
        stdio: ["pipe", "pipe", "pipe", ...(this.opts.extraFds ?? []), ...(this.opts.lifeline ? (["pipe"] as const) : []), ...(this.opts.lifeline && this.opts.reaperFd !== undefined ? [this.opts.reaperFd] : [])],
      });
      this.child = child;
      const closeExtra = () => {
        for (const fd of this.opts.extraFds ?? []) {
          try {
            closeSync(fd);
          } catch {
            // closed already
          }
        }
      };
      let spawned = false;
      this.exited = new Promise<void>((done) => {
        child.on("close", (code, signal) => {
          this.exit ??= { code, signal };
          this.flushStderr();
          done();
          this.onclose?.();
        });
      });
      child.on("exit", (code, signal) => {
        this.exit = { code, signal };
        // Whatever the server left behind in its group dies with it (its pipes then close too).
        if (child.pid !== undefined) {
          try {
            process.kill(-child.pid, "SIGKILL");
          } catch {
            // group already empty
          }
        }
      });
      child.on("error", (e) => {
        closeExtra();
        if (!spawned) reject(e);
        else this.onerror?.(e);
      });
      const onSpawned = () => {
        if (spawned) return;
        closeExtra();
        spawned = true;
        resolve();
      };
      child.on("spawn", onSpawned);
      // A pid means the process exists: Bun does not always emit "spawn" for a child with an extra
      // "pipe" beyond stdio (seen with the lifeline socket), and start() must not wait for it.
      if (child.pid !== undefined) queueMicrotask(onSpawned);
      if (this.opts.lifeline) holdLifeline(child, 3 + (this.opts.extraFds?.length ?? 0));
      child.stdin!.on("error", (e) => this.onerror?.(e));
      child.stdout!.on("data", (chunk: Buffer) => {
        this.buffer.append(chunk);
        for (;;) {
          let msg: JSONRPCMessage | null;
          try {
            msg = this.buffer.readMessage();
          } catch (e) {
            // A line that is not JSON-RPC (a server printing to stdout): report it, keep reading.
            this.onerror?.(e as Error);
            continue;
          }
          if (msg === null) break;
          this.onmessage?.(msg);
        }
      });
      child.stderr!.on("data", (chunk: Buffer) => {
        const text = this.stderrRest + chunk.toString("utf8");
        const lines = text.split("\n");
        this.stderrRest = lines.pop() ?? "";
        for (const line of lines) this.opts.onStderrLine?.(line.replace(/\r$/, ""));
        if (this.stderrRest.length > 64 * 1024) this.flushStderr();
      });
    });
  }

  private flushStderr(): void {
    if (this.stderrRest) this.opts.onStderrLine?.(this.stderrRest);
    this.stderrRest = "";
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const stdin = this.child?.stdin;
      if (!stdin || this.exit || stdin.destroyed) return reject(new Error("MCP server process is not running"));
      if (stdin.write(mcpSdk().serializeMessage(message))) resolve();
      else stdin.once("drain", resolve);
    });
  }

  /**
   * Kills the process tree (no grace period: an MCP server holds no state airlock relies on) and
   * resolves once every process of it is gone (exited or a zombie awaiting its reaper; at most ~2 s).
   */
  async close(): Promise<void> {
    const child = this.child;
    if (!child) return;
    const pids = !this.exit && child.pid !== undefined ? killTree(child.pid) : [];
    await this.exited;
    await waitGone(pids, 2000);
    this.buffer.clear();
  }
}

/** True while `pid` exists and is not a zombie. */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state !== "Z" && state !== "X";
  } catch {
    return false;
  }
}

/** Polls /proc until none of `pids` runs (SIGKILL is delivered asynchronously), or `maxMs` passed. */
async function waitGone(pids: number[], maxMs: number): Promise<void> {
  const until = Date.now() + maxMs;
  while (pids.some(running) && Date.now() < until) await new Promise((r) => setTimeout(r, 5));
}
