/**
 * @module store/checkpoint
 * Keeps SQLite's WAL checkpoint off the commits of the serving connection. The serving connection's own
 * automatic checkpoint is raised from SQLite's 1,000 pages to {@link WAL_BOUND_BYTES} (a backstop only);
 * the serving connection's writes arm a timer on the serving thread, and once the `-wal` file passes
 * {@link START_BYTES} a worker thread with its own connection runs PASSIVE checkpoints (they block no writer
 * in WAL mode): when the writes pause for {@link IDLE_MS}, and every {@link BUSY_PERIOD_MS} while they go on
 * (never two within {@link BUSY_PERIOD_MS}).
 * After a pause's checkpoint has copied the whole WAL, the thread starts the WAL over itself, so the fsync of a
 * new WAL's header is the thread's too, not the next commit's. The copy into the database file and its fsyncs
 * happen beside the commits, not inside one. Short-lived commands whose WAL stays small never start the thread;
 * a process that writes nothing runs no timer. Crash consistency is SQLite's: a commit is in the WAL before it
 * returns, and a WAL left by a killed process is replayed on the next open.
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
/**
 * How long the serving connection's writes must pause before the thread checkpoints and, when that copied the
 * whole WAL with no commit meanwhile, starts the WAL over, ms (but see {@link BUSY_PERIOD_MS}). Also the most often
 * the serving thread looks at the `-wal` file's size (one `stat`) before the thread is started, and then only after writes.
 */
export const IDLE_MS = 20;
/**
 * The least time between two checkpoints of the thread, ms, whatever asks for them; while the writes go on without
 * an {@link IDLE_MS} pause, the thread checkpoints this often (without starting the WAL over).
 */
export const BUSY_PERIOD_MS = 100;
/** SQLite's default automatic checkpoint, pages: put back on the serving connection when the thread fails. */
const SQLITE_DEFAULT_AUTOCHECKPOINT = 1000;
/** Longest `close()` waits for the thread to close its connection, ms. */
const CLOSE_TIMEOUT_MS = 5000;

/** A message to the checkpoint thread. */
export type CheckpointRequest =
  | {
      kind: "open";
      path: string;
      /** the `-wal` file's size when the thread starts it over, bytes */
      journalSizeLimit: number;
      /** the {@link WriteGate}'s two words: [GATE_STATE] and [GATE_WRITES] */
      gate: SharedArrayBuffer;
      /**
       * the serving connection's database file (`dev:ino`, decimal, of its path with links resolved, taken when the
       * checkpointer was made): the thread refuses to run on any other file that `path` names by the time it opens it
       */
      file: string;
    }
  | { kind: "checkpoint"; /** start a fully copied WAL over, unless a commit came during the checkpoint */ startOver: boolean }
  | { kind: "close" };
/** The checkpoint thread's answer to one {@link CheckpointRequest}, in order. */
export type CheckpointReply =
  | { kind: "opened" }
  | { kind: "checkpointed"; busy: number; log: number; checkpointed: number; restarted: boolean }
  | { kind: "closed" }
  | { kind: "failed"; message: string };

/**
 * The words the serving thread and the checkpoint thread share (an `Int32Array` on a SharedArrayBuffer) so that a
 * commit never waits inside SQLite for the thread's small transaction that starts the WAL over: {@link GATE_STATE}
 * is 1 while the thread holds (or is about to take) the write lock for it, else 0; {@link GATE_WRITES} counts the
 * serving connection's writes (each adds 1 before it starts). The thread sets the state, then gives up if the count
 * moved since its request arrived; a write adds to the count, then waits (asynchronously) while the state is 1.
 * Sequentially consistent atomics make one of the two see the other.
 */
export const GATE_STATE = 0;
/** See {@link GATE_STATE}. */
export const GATE_WRITES = 1;
/**
 * Longest a write waits for the thread's start-over transaction, ms: then the checkpointer fails closed (the thread is
 * ended, the gate opened for good) and the write goes on to SQLite's own busy wait.
 */
export const GATE_WAIT_MS = 5000;

/** One PASSIVE checkpoint's result: WAL frames in the log and frames copied into the database file (SQLite's `wal_checkpoint` row). */
export interface CheckpointResult {
  /** 1 when another checkpoint held the lock (this one did nothing), else 0. */
  busy: number;
  /** Frames in the WAL, pages. */
  log: number;
  /** Frames of the WAL now in the database file, pages. */
  checkpointed: number;
  /** Whether the thread then committed the small transaction that starts a fully copied WAL over (asked for with `startOver`). */
  restarted: boolean;
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
  idleMs?: number;
  busyPeriodMs?: number;
  startBytes?: number;
  workerUrl?: string;
  gateWaitMs?: number;
}

/**
 * The checkpointer of one serving connection on a database file. The connection's executor calls
 * {@link noteWrite} after each write; a timer (armed only by writes, unref'd) then decides: before the thread runs,
 * one `stat` of the `-wal` file at most every {@link IDLE_MS} ms; after, a checkpoint once the writes have paused
 * for {@link IDLE_MS} ms (and the WAL started over when that checkpoint copied all of it with no commit meanwhile),
 * or every {@link BUSY_PERIOD_MS} ms while they go on; never two within {@link BUSY_PERIOD_MS} ms. Disposable: `await close()` stops the timer and closes the
 * thread's connection (before the serving connection closes, so SQLite's own checkpoint at the last close can empty
 * the WAL). If the thread fails (one line on stderr), the serving connection gets SQLite's default automatic
 * checkpoint back (fail closed: the WAL stays bounded) and the thread is not started again.
 */
export class WalCheckpointer {
  /** The `-wal` file SQLite writes for the serving connection (its database path with links resolved, + `-wal`). */
  readonly walPath: string;
  /** PASSIVE checkpoints the thread has run. */
  checkpoints = 0;
  /** Times the thread started a fully copied WAL over (its small commit, after a pause's checkpoint). */
  restarts = 0;
  /** The thread's failure, if it failed (then checkpoints are SQLite's own again). */
  failure: string | null = null;
  private readonly startBytes: number;
  private readonly idleMs: number;
  /**
   * The pause the timer waits for before a checkpoint that may start the WAL over, ms: {@link IDLE_MS}, doubled (up to
   * {@link BUSY_PERIOD_MS}) each time writes came during such a checkpoint and left the WAL unsettled, back to
   * {@link IDLE_MS} once one settles it. Writes whose gaps are just longer than the pause would otherwise meet every
   * checkpoint (each one taken when the next write is due): no start-over, by the thread or by a commit, and the WAL
   * grew to its bound.
   */
  private pauseMs: number;
  private readonly busyPeriodMs: number;
  private readonly workerUrl: string;
  private readonly gateWaitMs: number;
  /** The serving connection's file as `dev:ino` (see {@link CheckpointRequest} `file`); null when it could not be looked at (then the thread never starts). */
  private readonly file: string | null;
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** `performance.now()` of the last write noted, ms. */
  private lastWrite = -Infinity;
  /**
   * `performance.now()` of the first timer turn that found the writes going on since one last found them paused
   * (or never), ms; undefined while they are paused. Only timer turns decide: a hiccup between two turns is no pause.
   */
  private busySince: number | undefined;
  /** `performance.now()` when the last checkpoint was asked for (at first: when this checkpointer was made), ms. */
  private lastCheckpoint = performance.now();
  /** Writes noted since the last checkpoint that settled the WAL (copied whole and started over, or empty). */
  private dirty = false;
  private worker: Worker | null = null;
  /** Shared with the thread: see {@link GATE_STATE}. */
  private readonly gate = new Int32Array(new SharedArrayBuffer(8));
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
    this.idleMs = opts.idleMs ?? IDLE_MS;
    this.pauseMs = this.idleMs;
    this.busyPeriodMs = opts.busyPeriodMs ?? BUSY_PERIOD_MS;
    this.workerUrl = opts.workerUrl ?? checkpointWorkerUrl();
    this.gateWaitMs = opts.gateWaitMs ?? GATE_WAIT_MS;
    this.file = fileId(resolvedPath(db.filename));
  }

  /** Size of the `-wal` file now, bytes (0 when there is none). @throws Error when it cannot be looked at (ENOTDIR, EACCES, …). */
  walBytes(): number {
    return statSync(this.walPath, { throwIfNoEntry: false })?.size ?? 0;
  }

  /**
   * Call before each write of the serving connection: counts it (the thread does not start the WAL over after it)
   * and, while the thread's start-over transaction holds the write lock, returns a promise that resolves when it is
   * done, so the write waits without blocking the thread it runs on; undefined otherwise. A transaction that holds the
   * gate for {@link GATE_WAIT_MS} fails the checkpointer (the thread is ended and the gate opened for good): a stalled
   * thread never keeps the writes waiting longer than that.
   */
  beforeWrite(): Promise<unknown> | undefined {
    Atomics.add(this.gate, GATE_WRITES, 1);
    if (Atomics.load(this.gate, GATE_STATE) === 0) return undefined;
    const w = Atomics.waitAsync(this.gate, GATE_STATE, 1, this.gateWaitMs);
    if (!w.async) return undefined;
    return w.value.then((r) => {
      if (r === "timed-out" && Atomics.load(this.gate, GATE_STATE) === 1) this.fail(`the checkpoint thread held the write gate for ${this.gateWaitMs} ms`);
    });
  }

  /** The serving connection wrote (or may have): arms the timer when it is not armed. Cheap: one clock read. */
  noteWrite(): void {
    this.lastWrite = performance.now();
    this.dirty = true;
    if (this.timer === undefined && !this.closed && !this.failure) this.arm(this.idleMs);
  }

  private arm(ms: number): void {
    this.timer = setTimeout(() => this.tick(), Math.max(1, Math.ceil(ms)));
    this.timer.unref();
  }

  /** One timer turn: a checkpoint on the thread when the WAL is big enough, the writes paused (or went on long enough) and none is running. */
  private tick(): void {
    this.timer = undefined;
    if (this.closed || this.failure || !this.dirty) return;
    if (this.running) return void this.arm(this.idleMs); // looked at again once it is likely done
    if (!this.worker) {
      let bytes: number;
      try {
        bytes = this.walBytes();
      } catch (e) {
        // thrown in a timer it would end the process, whose connection still works (its files are open): fail closed instead
        this.fail(`the checkpointer cannot look at ${this.walPath}: ${e instanceof Error ? e.message : String(e)}`);
        return;
      }
      if (bytes < this.startBytes) {
        this.dirty = false; // the next write looks again
        return;
      }
    }
    const now = performance.now();
    const since = now - this.lastCheckpoint;
    // at most one checkpoint per busy period, whichever asks: no more fsyncs than a fixed tick made
    if (since < this.busyPeriodMs) return void this.arm(this.busyPeriodMs - since);
    const quiet = now - this.lastWrite;
    if (quiet >= this.pauseMs) {
      this.busySince = undefined;
      // the writes paused: checkpoint, and start the WAL over if that copied all of it with no commit meanwhile
      this.dirty = false;
      void this.request(true).then((r) => {
        if (!r) return;
        const settled = r.restarted || r.log === 0;
        // writes came during it and left the WAL unsettled: wait for a longer pause next time (see pauseMs)
        this.pauseMs = settled ? this.idleMs : this.dirty ? Math.min(this.pauseMs * 2, this.busyPeriodMs) : this.pauseMs;
        // not settled (a reader kept frames, a commit came, the lock was taken): tried again next busy period
        if (!settled && !this.dirty) {
          this.dirty = true;
          if (this.timer === undefined && !this.closed) this.arm(this.busyPeriodMs);
        }
      });
      return;
    }
    // writes going on for less than a busy period (as seen by the timer's turns): their pause is waited for
    this.busySince ??= now;
    if (now - this.busySince < this.busyPeriodMs) return void this.arm(this.pauseMs - quiet);
    // the writes go on: a checkpoint without starting over (the WAL starts over at the next pause, or at the bound)
    void this.request(false);
    this.arm(this.busyPeriodMs);
  }

  private request(startOver: boolean): Promise<CheckpointResult | null> {
    this.lastCheckpoint = performance.now();
    return this.checkpoint({ startOver });
  }

  /**
   * Runs one PASSIVE checkpoint on the thread now (starting it if needed); joins the one running. `startOver`: then
   * start the WAL over if the checkpoint copied all of it and no commit came meanwhile (default false).
   * Resolves null when closed or when the thread failed (see `failure`); never rejects.
   */
  checkpoint(opts: { startOver?: boolean } = {}): Promise<CheckpointResult | null> {
    if (this.closed || this.failure) return Promise.resolve(null);
    this.running ??= this.runOne(opts.startOver === true).finally(() => (this.running = null));
    return this.running;
  }

  private async runOne(startOver: boolean): Promise<CheckpointResult | null> {
    try {
      if (!this.worker) {
        if (this.file === null) throw new Error(`the checkpointer cannot look at ${this.db.filename}`);
        this.worker = new Worker(this.workerUrl);
        (this.worker as Worker & { unref(): void }).unref(); // Bun: the thread keeps no process alive
        this.worker.onmessage = (ev: MessageEvent<CheckpointReply>) => this.waiting.shift()?.(ev.data);
        this.worker.onerror = (ev) => this.fail(`the checkpoint thread failed: ${ev.message}`);
        // a thread that ends without an error event (it exited) would leave its request unanswered for ever
        this.worker.addEventListener("close", () => {
          if (!this.closed) this.fail("the checkpoint thread exited");
        });
        this.expect(await this.ask({ kind: "open", path: this.db.filename, journalSizeLimit: WAL_BOUND_BYTES, gate: this.gate.buffer as SharedArrayBuffer, file: this.file }), "opened");
      }
      const r = this.expect(await this.ask({ kind: "checkpoint", startOver }), "checkpointed");
      this.checkpoints++;
      if (r.restarted) this.restarts++;
      return { busy: r.busy, log: r.log, checkpointed: r.checkpointed, restarted: r.restarted };
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

  /** The thread is gone: no write waits for it any more. */
  private openGate(): void {
    Atomics.store(this.gate, GATE_STATE, 0);
    Atomics.notify(this.gate, GATE_STATE);
  }

  /** The thread failed: SQLite's default automatic checkpoint back on the serving connection; the thread ended. */
  private fail(message: string): void {
    if (this.failure) return;
    this.failure = message;
    console.error(`airlock: ${message}; the WAL of ${this.db.filename} is checkpointed inside its commits again (SQLite's default)`);
    clearTimeout(this.timer);
    this.timer = undefined;
    for (const w of this.waiting.splice(0)) w({ kind: "failed", message });
    this.worker?.terminate();
    this.worker = null;
    this.openGate();
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
    clearTimeout(this.timer);
    this.timer = undefined;
    let timeout: ReturnType<typeof setTimeout> | undefined;
    const expired = new Promise<void>((r) => (timeout = setTimeout(r, CLOSE_TIMEOUT_MS)));
    try {
      await Promise.race([this.running, expired]);
      if (this.worker && !this.failure) await Promise.race([this.ask({ kind: "close" }), expired]);
    } finally {
      clearTimeout(timeout);
      this.worker?.terminate();
      this.worker = null;
      this.openGate();
      // requests the thread never answered (it hung): their callers get null (runOne sees a failure while closed)
      for (const w of this.waiting.splice(0)) w({ kind: "failed", message: "the checkpointer closed" });
    }
  }
}

/** The file `path` names (links followed) as `dev:ino`, decimal; null when it cannot be looked at. */
export function fileId(path: string): string | null {
  try {
    const s = statSync(path, { bigint: true });
    return `${s.dev}:${s.ino}`;
  } catch {
    return null;
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
