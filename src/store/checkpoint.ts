/**
 * @module store/checkpoint
 * Keeps SQLite's WAL checkpoint off the commits of the serving connection. The serving connection's own
 * automatic checkpoint is raised from SQLite's 1,000 pages to {@link WAL_BOUND_BYTES} (a backstop only);
 * a timer on the serving thread watches the `-wal` file, and once it passes {@link START_BYTES} a worker
 * thread with its own connection runs PASSIVE checkpoints (they block no writer in WAL mode), so the
 * copy into the database file and its fsyncs happen beside the commits, not inside one. Short-lived
 * commands whose WAL stays small never start the thread. Crash consistency is SQLite's: a commit is in
 * the WAL before it returns, and a WAL left by a killed process is replayed on the next open.
 */
import type { Database } from "bun:sqlite";
import { realpathSync, statSync } from "node:fs";

/**
 * The bound on the WAL, bytes: once it holds this much the serving connection checkpoints inside its
 * commit (SQLite's automatic checkpoint), whatever the thread does; a commit made while the thread's own
 * checkpoint holds SQLite's checkpoint lock adds to it until the next commit after that checkpoint. Also
 * the size the `-wal` file is cut back to when it starts over (`journal_size_limit`).
 */
export const WAL_BOUND_BYTES = 16 * 1024 * 1024;
/** The `-wal` file size from which the checkpoint thread is started, bytes. */
export const START_BYTES = 1024 * 1024;
/** How often the serving thread looks at the `-wal` file's size (one `stat`) and asks the thread for a checkpoint, ms. */
export const TICK_MS = 100;
/** SQLite's default automatic checkpoint, pages: put back on the serving connection when the thread fails. */
const SQLITE_DEFAULT_AUTOCHECKPOINT = 1000;
/** Longest `close()` waits for the thread to close its connection, ms. */
const CLOSE_TIMEOUT_MS = 5000;

/** A message to the checkpoint thread. */
export type CheckpointRequest = { kind: "open"; path: string } | { kind: "checkpoint" } | { kind: "close" };
/** The checkpoint thread's answer to one {@link CheckpointRequest}, in order. */
export type CheckpointReply =
  | { kind: "opened" }
  | { kind: "checkpointed"; busy: number; log: number; checkpointed: number }
  | { kind: "closed" }
  | { kind: "failed"; message: string };

/** One PASSIVE checkpoint's result: WAL frames in the log and frames copied into the database file (SQLite's `wal_checkpoint` row). */
export interface CheckpointResult {
  /** 1 when another checkpoint held the lock (this one did nothing), else 0. */
  busy: number;
  /** Frames in the WAL, pages. */
  log: number;
  /** Frames of the WAL now in the database file, pages. */
  checkpointed: number;
}

/** The checkpoint thread's module: beside this file in source; at `src/store/` under the bundle root in the compiled binary. */
export function checkpointWorkerUrl(): string {
  if (import.meta.url.includes("/$bunfs/")) return new URL("./src/store/checkpoint-worker.ts", import.meta.url.replace(/\/[^/]*$/, "/")).href;
  return new URL("./checkpoint-worker.ts", import.meta.url).href;
}

/**
 * Sets the WAL pragmas of a serving connection on a file (not `:memory:`): its automatic checkpoint at
 * {@link WAL_BOUND_BYTES}, and the `-wal` file cut back to that size when the WAL starts over. Returns the
 * automatic checkpoint set, pages.
 */
export function raiseAutoCheckpoint(db: Database): number {
  const pageSize = db.query<{ page_size: number }, []>("PRAGMA page_size").get()!.page_size;
  const pages = Math.floor(WAL_BOUND_BYTES / (pageSize + 24)); // a WAL frame is a page plus a 24-byte header
  db.exec(`PRAGMA wal_autocheckpoint = ${pages}; PRAGMA journal_size_limit = ${WAL_BOUND_BYTES}`);
  return pages;
}

/** Options of {@link WalCheckpointer}; defaults are the constants above. */
export interface WalCheckpointerOptions {
  tickMs?: number;
  startBytes?: number;
  workerUrl?: string;
}

/**
 * The checkpointer of one serving connection on a database file. Disposable: `await close()` stops the
 * timer and closes the thread's connection (before the serving connection closes, so SQLite's own
 * checkpoint at the last close can empty the WAL). If the thread fails (one line on stderr), the serving
 * connection gets SQLite's default automatic checkpoint back (fail closed: the WAL stays bounded) and the
 * thread is not started again.
 */
export class WalCheckpointer {
  /** The `-wal` file SQLite writes for the serving connection (its database path with links resolved, + `-wal`). */
  readonly walPath: string;
  /** PASSIVE checkpoints the thread has run. */
  checkpoints = 0;
  /** The thread's failure, if it failed (then checkpoints are SQLite's own again). */
  failure: string | null = null;
  private readonly startBytes: number;
  private readonly workerUrl: string;
  private readonly timer: ReturnType<typeof setInterval>;
  private worker: Worker | null = null;
  /** Answers awaited from the thread, in the order of the requests. */
  private readonly waiting: ((r: CheckpointReply) => void)[] = [];
  private running: Promise<CheckpointResult | null> | null = null;
  private closed = false;

  /** @param db the serving connection, on a file in WAL mode (its `filename` names the file). */
  constructor(
    private readonly db: Database,
    opts: WalCheckpointerOptions = {},
  ) {
    this.walPath = `${resolvedPath(db.filename)}-wal`;
    this.startBytes = opts.startBytes ?? START_BYTES;
    this.workerUrl = opts.workerUrl ?? checkpointWorkerUrl();
    this.timer = setInterval(() => this.tick(), opts.tickMs ?? TICK_MS);
    this.timer.unref();
  }

  /** Size of the `-wal` file now, bytes (0 when there is none). @throws Error when it cannot be looked at (ENOTDIR, EACCES, …). */
  walBytes(): number {
    return statSync(this.walPath, { throwIfNoEntry: false })?.size ?? 0;
  }

  /** One timer turn: a checkpoint on the thread when the WAL is big enough and none is running. */
  private tick(): void {
    if (this.closed || this.running || this.failure) return;
    if (!this.worker) {
      let bytes: number;
      try {
        bytes = this.walBytes();
      } catch (e) {
        // thrown in a timer it would end the process, whose connection still works (its files are open): fail closed instead
        this.fail(`the checkpointer cannot look at ${this.walPath}: ${e instanceof Error ? e.message : String(e)}`);
        return;
      }
      if (bytes < this.startBytes) return;
    }
    void this.checkpoint();
  }

  /**
   * Runs one PASSIVE checkpoint on the thread now (starting it if needed); joins the one running.
   * Resolves null when closed or when the thread failed (see `failure`); never rejects.
   */
  checkpoint(): Promise<CheckpointResult | null> {
    if (this.closed || this.failure) return Promise.resolve(null);
    this.running ??= this.runOne().finally(() => (this.running = null));
    return this.running;
  }

  private async runOne(): Promise<CheckpointResult | null> {
    try {
      if (!this.worker) {
        this.worker = new Worker(this.workerUrl);
        (this.worker as Worker & { unref(): void }).unref(); // Bun: the thread keeps no process alive
        this.worker.onmessage = (ev: MessageEvent<CheckpointReply>) => this.waiting.shift()?.(ev.data);
        this.worker.onerror = (ev) => this.fail(`the checkpoint thread failed: ${ev.message}`);
        // a thread that ends without an error event (it exited) would leave its request unanswered for ever
        this.worker.addEventListener("close", () => {
          if (!this.closed) this.fail("the checkpoint thread exited");
        });
        this.expect(await this.ask({ kind: "open", path: this.db.filename }), "opened");
      }
      const r = this.expect(await this.ask({ kind: "checkpoint" }), "checkpointed");
      this.checkpoints++;
      return { busy: r.busy, log: r.log, checkpointed: r.checkpointed };
    } catch (e) {
      if (!this.closed) this.fail(e instanceof Error ? e.message : String(e));
      return null;
    }
  }

  private ask(m: CheckpointRequest): Promise<CheckpointReply> {
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      this.worker!.postMessage(m);
    });
  }

  private expect<K extends CheckpointReply["kind"]>(r: CheckpointReply, kind: K): Extract<CheckpointReply, { kind: K }> {
    if (r.kind === kind) return r as Extract<CheckpointReply, { kind: K }>;
    throw new Error(r.kind === "failed" ? `the checkpoint thread failed: ${r.message}` : `the checkpoint thread answered ${r.kind}, not ${kind}`);
  }

  /** The thread failed: SQLite's default automatic checkpoint back on the serving connection; the thread ended. */
  private fail(message: string): void {
    if (this.failure) return;
    this.failure = message;
    console.error(`airlock: ${message}; the WAL of ${this.db.filename} is checkpointed inside its commits again (SQLite's default)`);
    clearInterval(this.timer);
    for (const w of this.waiting.splice(0)) w({ kind: "failed", message });
    this.worker?.terminate();
    this.worker = null;
    try {
      this.db.exec(`PRAGMA wal_autocheckpoint = ${SQLITE_DEFAULT_AUTOCHECKPOINT}`);
    } catch {
      // the serving connection is closed: nothing to bound any more
    }
  }

  /**
   * Stops the timer, waits for a running checkpoint and closes the thread's connection, 5 s at most in all: then the
   * thread is ended (a checkpoint it was running stops there; the WAL keeps what it did not copy) and a pending
   * `checkpoint()` resolves null. Idempotent; never rejects. The serving connection stays open.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    let timeout: ReturnType<typeof setTimeout> | undefined;
    const expired = new Promise<void>((r) => (timeout = setTimeout(r, CLOSE_TIMEOUT_MS)));
    try {
      await Promise.race([this.running, expired]);
      if (this.worker && !this.failure) await Promise.race([this.ask({ kind: "close" }), expired]);
    } finally {
      clearTimeout(timeout);
      this.worker?.terminate();
      this.worker = null;
      // requests the thread never answered (it hung): their callers get null (runOne sees a failure while closed)
      for (const w of this.waiting.splice(0)) w({ kind: "failed", message: "the checkpointer closed" });
    }
  }
}

/**
 * `path` with its symbolic links resolved, as SQLite resolves it before naming the `-wal` file (a database reached
 * through a link has its WAL beside the link's target); `path` itself when it cannot be resolved.
 */
function resolvedPath(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}
