/**
 * @module script/pool
 * The host side of the script sandbox: a tinypool pool of QuickJS worker threads, one thread per script
 * in flight (a thread runs one script at a time), and `workers` run slots: how many scripts may run
 * guest code at once (a script waiting on a tool holds no slot). `run()` sends one script, serves its
 * `tools.*` calls on the main thread inside the caller's AsyncLocalStorage context, and enforces the
 * backstops the worker cannot (a watchdog that replaces a worker stuck in a native call: with one
 * script per thread, that ends the stalled script only). The worker's calls arrive on the script's
 * MessagePort (after a reply the main thread polls it briefly for the next one: `POLL_MS`); the host's `go`, replies
 * and cancel go on the script's shared-memory channel (script/channel.ts).
 */
import { AsyncResource } from "node:async_hooks";
import type { MessagePort as NodeMessagePort, receiveMessageOnPort as ReceiveMessageOnPort } from "node:worker_threads";
import type Tinypool from "tinypool";
import { AirlockError, assertNever, toAirlockError, type ErrorCode } from "../errors.ts";
import { HostChannel, INITIAL_CHANNEL_BYTES, newChannelBuffer, resetChannelBuffer, UP_CALLS, UP_READY, UP_YIELD } from "./channel.ts";
import { MAX_STACK_KB, METER, ScriptLimits, WorkerOutcome, WorkerSettings, type HostMessage, type ToolOutcome } from "./protocol.ts";
import { parseBatch, type BatchCall } from "./bridge.ts";
import type { CompiledQuickJS } from "./instances.ts";

/** What one script ended with. `value` is the script's return value (JSON data; `null` for none). */
export type ScriptResult =
  | { ok: true; value: unknown; logs: string[]; calls: number }
  | { ok: false; error: { code: ErrorCode; message: string; stack?: string }; logs: string[]; calls: number };

export interface ScriptPoolOptions {
  /**
   * Run slots: scripts that may run guest code at the same time (a script waiting on a tool holds none),
   * and the worker threads kept started while idle. Each script in flight has a thread of its own and a
   * QuickJS WASM instance (own memory) on it.
   */
  workers: number;
  /** Each script's memory limit, MiB (its QuickJS malloc limit; its instance's WASM memory is capped at this + 16 MiB). */
  memoryMb: number;
  /** QuickJS stack per script, KiB. */
  stackKb: number;
  /** Scripts in flight at once (= worker threads at most); more wait in a queue. Default `workers` × 64. */
  maxScripts?: number;
  /** An idle thread beyond `workers` exits after this long, ms. Default 10,000. */
  idleThreadMs?: number;
  /** Worker module URL; default: worker.ts beside this file (or its embedded copy in the binary). */
  workerUrl?: string;
}

export interface RunOptions extends ScriptLimits {
  /** Aborting ends the script with `cancelled`. */
  signal?: AbortSignal;
}

/**
 * Runs one tool call for a script. Called on the main thread in the caller's async context. `signal`
 * aborts when the script ends (returned, failed, timed out, cancelled): a call the script did not
 * await must not outlive it.
 */
export type CallTool = (name: string, args: unknown, signal: AbortSignal) => Promise<ToolOutcome>;

/** How long past a deadline the host waits for the worker before replacing it, ms. */
export const GRACE_MS = 500;
/** Default of `idleThreadMs`: how long a thread beyond `workers` stays after its script, ms. */
const IDLE_THREAD_MS = 10_000;
/** Spare script buffers kept (`#spareBuffers`): about 16 KiB each. */
const SPARE_BUFFERS = 16;
/** Longest `close()` waits for workers to exit, ms. */
const CLOSE_TIMEOUT_MS = 2000;
const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;
/**
 * How long the main thread polls a script's port for the worker's next message after it wrote a reply, ms. A
 * sequential script's next call comes back within a few µs of its reply, and taking it off the port at once spares the
 * main thread's wake-up from its event loop (the crossing that cost most of a call: docs/performance.md, "bridge5").
 * A poll that caught nothing stops the script's polling for a while (`POLL_SKIP`).
 */
export const POLL_MS = 0.03;
/**
 * Replies a script skips polling after a poll that caught nothing, at first; each further miss doubles it (up to
 * `POLL_SKIP_MAX`), a catch resets it. A miss mostly means the worker could not run while the main thread polled (no
 * second core free: the machine is loaded), and then polling only costs.
 */
const POLL_SKIP = 16;
const POLL_SKIP_MAX = 4096;
/**
 * Longest the main thread serves calls caught by polling before its event loop turns again, ms: a run of calls answered
 * back to back runs as one chain of promise jobs, and timers (the watchdog), I/O and other scripts wait until it ends.
 */
export const CHAIN_MS = 1;
/** `receiveMessageOnPort`, loaded with tinypool (which loads `node:worker_threads` anyway; importing it at start costs ms). */
let receiveMessage: typeof ReceiveMessageOnPort | undefined;
/** When the current chain of polled calls began (`performance.now()`); `chainOpen` until the event loop turns. */
let chainFrom = 0;
let chainOpen = false;
const closeChain = (): void => {
  chainOpen = false;
};

/** The worker module: beside this file in source; at `src/script/` under the bundle root in the compiled binary. */
export function defaultWorkerUrl(): string {
  if (import.meta.url.includes("/$bunfs/")) return new URL("./src/script/worker.ts", import.meta.url.replace(/\/[^/]*$/, "/")).href;
  return new URL("./worker.ts", import.meta.url).href;
}

/**
 * A pool of sandbox workers. Disposable: `await pool.close()` or `await using pool = new ScriptPool(...)`.
 * @throws AirlockError `config_invalid` when the options are out of range.
 */
export class ScriptPool {
  /** Started on the first `run` (tinypool, its threads and their WASM cost at start: docs/performance.md). */
  #pool: Tinypool | undefined;
  #starting: Promise<Tinypool> | undefined;
  readonly #opts: ScriptPoolOptions & { maxScripts: number; idleThreadMs: number };
  readonly #settings: WorkerSettings;
  readonly #slots: RunSlots;
  /** The QuickJS WASM module and its layout, compiled once here and sent to each thread (a new thread only instantiates it). */
  #wasm: Promise<CompiledQuickJS> | undefined;
  #closed = false;
  /** Scripts sent to tinypool and not yet ended (each occupies a thread: one script per thread). */
  #inFlight = 0;
  /**
   * Shared buffers (meter, channel) of ended scripts whose worker returned, kept for the next scripts: a script's
   * two SharedArrayBuffers were most of what it allocated on the main thread, and what made the main thread's
   * collector run during a stream of short scripts. Never those of a script whose worker did not return (lost,
   * replaced, still stuck): that worker might still write them; nor a channel a reply grew (script/channel.ts).
   */
  readonly #spareBuffers: Array<{ meter: SharedArrayBuffer; channel: SharedArrayBuffer }> = [];
  /** Worker failures tinypool reports outside any task (a replaced idle worker); kept for diagnostics. */
  readonly workerErrors: string[] = [];

  constructor(opts: ScriptPoolOptions) {
    const parsed = WorkerSettings.safeParse({ memoryMb: opts.memoryMb, stackKb: opts.stackKb });
    const maxScripts = opts.maxScripts ?? opts.workers * 64;
    const idleMs = opts.idleThreadMs ?? IDLE_THREAD_MS;
    if (!parsed.success || !Number.isInteger(opts.workers) || opts.workers < 1 || !Number.isInteger(maxScripts) || maxScripts < opts.workers || !(idleMs >= 0)) {
      throw new AirlockError("config_invalid", `script pool options are invalid: ${JSON.stringify(opts)}; need workers >= 1, maxScripts >= workers, idleThreadMs >= 0, memoryMb 8..2048, stackKb 16..${MAX_STACK_KB}`);
    }
    this.#settings = parsed.data;
    this.#slots = new RunSlots(opts.workers);
    this.#opts = { ...opts, maxScripts, idleThreadMs: idleMs };
  }

  /** The tinypool, loaded and started once (its `workers` threads start together; more on demand). */
  #ensurePool(wasm: CompiledQuickJS): Promise<Tinypool> {
    this.#starting ??= Promise.all([import("tinypool"), import("node:worker_threads")]).then(([{ default: Pool }, threads]) => {
      receiveMessage = threads.receiveMessageOnPort;
      const opts = this.#opts;
      const pool = new Pool({
        filename: opts.workerUrl ?? defaultWorkerUrl(),
        minThreads: opts.workers,
        maxThreads: opts.maxScripts,
        // One script per thread: the watchdog can then replace a stalled script's thread without ending any other script.
        concurrentTasksPerWorker: 1,
        useAtomics: false,
        idleTimeout: opts.idleThreadMs,
        // the compiled QuickJS module goes to each thread once, with its settings (a new thread instantiates it instead of
        // compiling it) and its memory layout (the thread's guest snapshot: script/snapshot.ts)
        workerData: { ...this.#settings, wasm: wasm.module, layout: wasm.layout },
      });
      pool.on("error", (e: unknown) => {
        this.workerErrors.push(e instanceof Error ? e.message : String(e));
        if (this.workerErrors.length > 50) this.workerErrors.shift();
      });
      this.#pool = pool;
      return pool;
    });
    return this.#starting;
  }

  /** Worker threads currently alive (none before the first `run`). */
  get threadIds(): number[] {
    return (this.#pool?.threads ?? []).map((t) => (t as unknown as { threadId: number }).threadId);
  }

  /**
   * Runs `code` as the body of an async function in a fresh QuickJS runtime and resolves with its
   * result; limits, guest errors and cancellation are `{ok: false, error: {code, message, stack?}}`
   * (codes: script_timeout, script_memory_limit, script_stack_overflow (also when the worker thread's own stack ran out
   * first: its instance is dropped), script_too_many_calls,
   * script_output_too_large, script_error, script_result_invalid (its return value was not sent: not JSON — a cycle, a BigInt, a function, a
   * Symbol —, or serialising it made tool calls; `undefined` is ok with `value: null`), script_worker_lost (its worker thread went away under it,
   * e.g. the pool closed; retryable), cancelled, internal). The script waits for a run slot before it
   * starts and before each tool result is delivered; that wait counts against its wall-clock deadline. Each `tools.NAME(args)` in the guest
   * becomes `callTool(NAME, args)`, run in the async context of this `run()` call.
   * @throws AirlockError `internal` when the pool is closed; `bad_request` when the limits are invalid.
   */
  async run(code: string, opts: RunOptions, callTool: CallTool): Promise<ScriptResult> {
    if (this.#closed) throw new AirlockError("internal", "the script pool is closed; create a new one");
    const limits = parseLimits(opts);
    const signal = opts.signal;
    if (signal?.aborted) return fail("cancelled", "the script was cancelled before it started", [], 0);

    // QuickJS's host code (quickjs-emscripten-core) is loaded with the first script, not at start
    this.#wasm ??= import("./instances.ts").then((m) => m.compileQuickJS());
    let wasm: CompiledQuickJS;
    try {
      wasm = await this.#wasm;
    } catch (e) {
      this.#wasm = undefined;
      return fail("internal", `the script sandbox could not compile QuickJS: ${e instanceof Error ? e.message : String(e)}`, [], 0);
    }
    const pool = this.#pool ?? (await this.#ensurePool(wasm));
    if (this.#closed) throw new AirlockError("internal", "the script pool is closed; create a new one");
    if (signal?.aborted) return fail("cancelled", "the script was cancelled before it started", [], 0);
    // the global MessageChannel, which in Bun is node:worker_threads' own (test/startup-closure.test.ts):
    // importing that module costs a few ms at every start (docs/performance.md, issue 20 third round)
    const { port1, port2 } = new MessageChannel() as unknown as { port1: NodeMessagePort; port2: NodeMessagePort };
    const spare = this.#spareBuffers.pop();
    const meterBuf = spare?.meter ?? new SharedArrayBuffer(METER.size * 8);
    const channelBuf = spare?.channel ?? newChannelBuffer();
    if (spare) resetChannelBuffer(channelBuf);
    const meter = new Float64Array(meterBuf);
    if (spare) meter.fill(0);
    /** Set once the worker returned this script's outcome: it no longer touches the buffers, which may then be reused. */
    let workerReturned = false;
    let done = false;
    let finish!: (r: ScriptResult) => void;
    const finished = new Promise<ScriptResult>((r) => (finish = r));
    const started = Date.now();
    // Aborted when the script ends: its calls still running (not awaited) are cancelled with it. Made with the first
    // call: a script that made none allocates neither it nor the error it is aborted with.
    let callsEnd: AbortController | undefined;

    // Run slots. The worker runs guest code only after a `go` or a `reply`, and answers each with a
    // `yield` once the script waits on tools again; `owed` counts those not yet answered. The script holds
    // a slot while `owed` > 0 and gives it back at its end whatever happened to its thread.
    let holding = false;
    let owed = 0;
    let acquiring: Promise<void> | undefined;
    /** Sends `msg` with a run slot: now when the script holds one or one is free (undefined), else once one is (a promise). */
    const grant = (msg: Exclude<HostMessage, { t: "cancel" }>): Promise<void> | undefined => {
      if (!holding && !acquiring && !done && this.#slots.tryAcquire()) holding = true; // the common case: a free slot, no wait
      if (!holding) return grantLater(msg);
      if (done) return;
      owed++;
      channel.send(msg);
    };
    const grantLater = async (msg: Exclude<HostMessage, { t: "cancel" }>): Promise<void> => {
      acquiring ??= this.#slots.acquire().then(() => {
        acquiring = undefined;
        if (done) this.#slots.release();
        else holding = true;
      });
      await acquiring;
      if (done || !holding) return;
      owed++;
      channel.send(msg);
    };
    const sliceEnded = (): void => {
      owed--;
      if (owed <= 0 && holding) {
        holding = false;
        owed = 0;
        this.#slots.release();
      }
    };

    // Bound here, so each call runs in this run()'s async context (the raw 'message' handler has none).
    let served = 0;
    const serve = AsyncResource.bind(async (req: BatchCall): Promise<void> => {
      // the script already ended, or its caller cancelled it (a busy guest sends calls until its interrupt handler sees
      // the cancel word): nobody awaits this call, and it must not start
      if (done || signal?.aborted) return;
      served++;
      const payload = await serveCall(req, callTool, (callsEnd ??= new AbortController()).signal);
      if (done) return;
      const later = grant({ t: "reply", id: req.id, payload });
      if (later) return later;
      poll();
    });
    /** Replies still to go without polling, and how many the next miss makes it. */
    let pollSkip = 0;
    let nextSkip = POLL_SKIP;
    /**
     * Polls the port for the worker's next message for up to `POLL_MS` after a reply went (see `POLL_MS`), and handles
     * one caught as the port's event would. Not while the current chain of polled calls has run `CHAIN_MS`.
     */
    const poll = (): void => {
      if (done || receiveMessage === undefined) return;
      if (pollSkip > 0) {
        pollSkip--;
        return;
      }
      if (!chainOpen) {
        setImmediate(startChain);
        return;
      }
      if (performance.now() - chainFrom <= CHAIN_MS) spin();
    };
    const startChain = (): void => {
      if (done) return;
      if (!chainOpen) {
        chainOpen = true;
        chainFrom = performance.now();
        setImmediate(closeChain); // runs once the event loop turns again, i.e. once this chain of promise jobs has ended
      }
      spin();
    };
    const spin = (): void => {
      let now = performance.now();
      const until = now + POLL_MS;
      do {
        const got = receiveMessage!(port1);
        if (got !== undefined) {
          nextSkip = POLL_SKIP;
          onMessage(got.message);
          return;
        }
        now = performance.now();
      } while (now < until);
      pollSkip = nextSkip;
      nextSkip = Math.min(POLL_SKIP_MAX, nextSkip * 2);
    };
    // The worker's messages come on the port; the host's go on the shared channel (the worker blocks on it between slices).
    const onMessage = (raw: unknown): void => {
      // protocol.ts `WorkerBatch`: a kind, then calls as batch records; anything else is dropped whole
      if (typeof raw !== "string") return;
      const kind = raw[0];
      if (kind === UP_READY) {
        if (raw.length === 1 && !go) void grant({ t: "go" }); // a task sent with its slot never waits for one
        return;
      }
      if (kind !== UP_CALLS && kind !== UP_YIELD) return;
      const calls = parseBatch(raw, 1);
      if (calls === null) return;
      for (const c of calls) void serve(c);
      if (kind === UP_YIELD) sliceEnded();
    };
    port1.on("message", onMessage);
    const channel = new HostChannel(channelBuf);

    // The first run slot goes with the task when a thread is idle and a slot is free (nobody queued before this
    // script): the worker then starts at once, two thread crossings fewer than `ready` → `go`. With no idle thread
    // the slot would be held while a thread starts, so the script asks for it with `ready` as before.
    const go = this.#inFlight < pool.threads.length && this.#slots.tryAcquire();
    if (go) {
      holding = true;
      owed = 1;
    }
    this.#inFlight++;
    try {
      pool.run({ code, limits, port: port2, meter: meterBuf, channel: channelBuf, go }, { transferList: [port2] } as unknown as Parameters<Tinypool["run"]>[1]).then(
        (raw: unknown) => {
          workerReturned = true;
          const out = parseOutcome(raw);
          if (!out) return finish(fail("internal", "the sandbox worker answered with a malformed outcome", [], 0));
          finish(toResult(out));
        },
        (e: unknown) => finish(workerLost(e, served)),
      );
    } catch (e) {
      finish(workerLost(e, 0)); // tinypool refused the task outright: the `finally` below gives back the slot
    }

    // Watchdog: the worker enforces the deadlines itself; this catches a worker that cannot
    // (stuck in a long native call), reading the shared meter instead of waiting for a message.
    let timer: ReturnType<typeof setTimeout> | undefined;
    const watch = (): void => {
      if (done) return;
      const now = Date.now();
      const entered = meter[METER.enteredAt]!;
      const used = meter[METER.cpuUsed]! + (entered > 0 ? now - entered : 0);
      const cpuLeft = limits.cpuTimeoutMs + GRACE_MS - used;
      const wallLeft = limits.wallTimeoutMs + GRACE_MS - (now - started);
      if (cpuLeft <= 0 || wallLeft <= 0) {
        this.#replaceWorker(meter[METER.threadId]!, "a script on it overran its deadline inside a native call");
        const which = cpuLeft <= 0 ? `CPU deadline of ${limits.cpuTimeoutMs} ms` : `wall-clock deadline of ${limits.wallTimeoutMs} ms`;
        finish(fail("script_timeout", `the script ran past its ${which} and did not stop; its worker was replaced`, [], 0));
        return;
      }
      timer = setTimeout(watch, Math.max(10, Math.min(cpuLeft, wallLeft)));
    };
    timer = setTimeout(watch, Math.min(limits.cpuTimeoutMs, limits.wallTimeoutMs) + GRACE_MS);

    let cancelTimer: ReturnType<typeof setTimeout> | undefined;
    const onAbort = (): void => {
      if (done) return;
      channel.cancel();
      cancelTimer = setTimeout(() => {
        if (done) return;
        // still in tinypool's queue (no thread has taken it): nothing to replace; a thread that takes it later sees the
        // cancel word before it runs any guest code
        if (!meter[METER.threadId]) return finish(fail("cancelled", "the script was cancelled before it started", [], 0));
        this.#replaceWorker(meter[METER.threadId]!, "a cancelled script on it did not stop");
        finish(fail("cancelled", "the script was cancelled; its worker was replaced because it did not stop", [], 0));
      }, GRACE_MS);
    };
    signal?.addEventListener("abort", onAbort, { once: true });

    try {
      return await finished;
    } finally {
      done = true;
      this.#inFlight--;
      if (holding) {
        holding = false;
        this.#slots.release();
      }
      clearTimeout(timer);
      clearTimeout(cancelTimer);
      signal?.removeEventListener("abort", onAbort);
      port1.close();
      channel.close();
      // a channel a large reply grew is let go: its worker would count all of it again at every later script
      if (workerReturned && channelBuf.byteLength === INITIAL_CHANNEL_BYTES && this.#spareBuffers.length < SPARE_BUFFERS) this.#spareBuffers.push({ meter: meterBuf, channel: channelBuf });
      callsEnd?.abort(new AirlockError("cancelled", "the script that made this call ended before the call finished, so it was stopped; await every tools.* call"));
    }
  }

  /** Terminates the worker with `threadId` (it runs only the script being stopped); tinypool starts a replacement if fewer than `workers` remain. */
  #replaceWorker(threadId: number, why: string): void {
    if (!threadId) return;
    const t = this.#pool?.threads.find((w) => (w as unknown as { threadId: number }).threadId === threadId);
    // tinypool's 'error' listener on a worker removes it, rejects its tasks and spawns a replacement.
    t?.emit("error", new Error(`sandbox worker replaced: ${why}`));
  }

  /** Stops every worker; scripts still running fail. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const pool = this.#pool ?? (this.#starting ? await this.#starting.catch(() => undefined) : undefined);
    if (!pool) return;
    // A worker that failed during bootstrap may never report 'exit'; do not hang the caller on it.
    let t: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([pool.destroy().catch(() => {}), new Promise<void>((r) => (t = setTimeout(r, CLOSE_TIMEOUT_MS)))]);
    clearTimeout(t);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}

/**
 * A FIFO counting semaphore over the pool's run slots (main thread only). `acquire()` resolves when a
 * slot is the caller's; each acquire is matched by one `release()`.
 */
class RunSlots {
  #free: number;
  readonly #waiting: Array<() => void> = [];

  constructor(slots: number) {
    this.#free = slots;
  }

  /** Takes a free slot now if there is one and nobody waits (FIFO holds); true when taken. */
  tryAcquire(): boolean {
    if (this.#free > 0 && this.#waiting.length === 0) {
      this.#free--;
      return true;
    }
    return false;
  }

  acquire(): Promise<void> {
    if (this.#free > 0) {
      this.#free--;
      return Promise.resolve();
    }
    return new Promise((r) => this.#waiting.push(r));
  }

  release(): void {
    const next = this.#waiting.shift();
    if (next) next();
    else this.#free++;
  }
}

/**
 * The script's limits (protocol.ts's `ScriptLimits`). Limits that are plainly valid (five safe integers in range) are
 * taken as they are; anything else goes through the schema, which makes the error message. Per script, zod's parse
 * cost ~3 µs and ~2 KB of garbage on the main thread (docs/performance.md, "a trivial script's collections").
 * @throws AirlockError `bad_request` when the limits are invalid.
 */
function parseLimits(o: ScriptLimits): ScriptLimits {
  const { cpuTimeoutMs, wallTimeoutMs, maxToolCalls, maxLogBytes, maxResultBytes } = o;
  const whole = (v: number, min: number): boolean => Number.isSafeInteger(v) && v >= min;
  if (whole(cpuTimeoutMs, 1) && whole(wallTimeoutMs, 1) && whole(maxToolCalls, 0) && whole(maxLogBytes, 0) && whole(maxResultBytes, 0)) {
    return { cpuTimeoutMs, wallTimeoutMs, maxToolCalls, maxLogBytes, maxResultBytes };
  }
  const lim = ScriptLimits.safeParse({ cpuTimeoutMs, wallTimeoutMs, maxToolCalls, maxLogBytes, maxResultBytes });
  if (!lim.success) throw new AirlockError("bad_request", `script limits are invalid: ${lim.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`);
  return lim.data;
}

/**
 * A worker's outcome (protocol.ts's `WorkerOutcome`), or null when malformed. The common success (`ok: true`, a
 * string or no `json`, string logs, a whole number of calls, no other key) is checked by hand and copied; anything
 * else goes through the schema, so what is accepted is exactly what the schema accepts (zod's parse cost ~1.6 KB of
 * garbage per script on the main thread).
 */
function parseOutcome(raw: unknown): WorkerOutcome | null {
  if (typeof raw === "object" && raw !== null && !Array.isArray(raw) && Object.getPrototypeOf(raw) === Object.prototype) {
    const o = raw as Record<string, unknown>;
    const { ok, json, logs, calls } = o;
    let keys = 0;
    for (const k in o) {
      if (!Object.hasOwn(o, k)) continue;
      if (k !== "ok" && k !== "json" && k !== "logs" && k !== "calls") {
        keys = -1;
        break;
      }
      keys++;
    }
    if (ok === true && keys === (json === undefined && !Object.hasOwn(o, "json") ? 3 : 4) && (json === undefined || typeof json === "string") && Array.isArray(logs) && logs.every((l) => typeof l === "string") && Number.isSafeInteger(calls)) {
      return { ok: true, ...(json !== undefined ? { json } : {}), logs: logs as string[], calls: calls as number };
    }
  }
  const out = WorkerOutcome.safeParse(raw);
  return out.success ? out.data : null;
}

/**
 * The outcome of a script whose worker thread went away under it (the pool closed, or the thread died): `script_worker_lost`, retryable, saying how many of its tool calls
 * already ran, so a caller can judge whether running it again repeats effects.
 */
function workerLost(e: unknown, calls: number): ScriptResult {
  const why = e instanceof Error ? e.message : String(e);
  const ran = calls === 0 ? "none of its tool calls had run" : `${calls} of its tool calls had started (running it again repeats them)`;
  return fail("script_worker_lost", `the script's worker was replaced before the script ended (${why}); ${ran}; run the script again`, [], calls);
}

function fail(code: ErrorCode, message: string, logs: string[], calls: number): ScriptResult {
  return { ok: false, error: { code, message }, logs, calls };
}

/** The script's result from its worker's outcome; `internal` when the outcome's `json` is not JSON text (never thrown: the worker is not trusted). */
function toResult(o: WorkerOutcome): ScriptResult {
  if (!o.ok) return { ok: false, error: { ...o.error }, logs: o.logs, calls: o.calls };
  let value: unknown = null;
  if (o.json !== undefined) {
    try {
      value = JSON.parse(o.json);
    } catch {
      return fail("internal", "the sandbox worker answered with a return value that is not JSON; run the script again", o.logs, o.calls);
    }
  }
  return { ok: true, value, logs: o.logs, calls: o.calls };
}

/** Runs one guest tool call and encodes the answer as the JSON text the guest parses. Never throws. */
async function serveCall(req: BatchCall, callTool: CallTool, signal: AbortSignal): Promise<string> {
  let outcome: ToolOutcome;
  if (!TOOL_NAME.test(req.name)) {
    outcome = { ok: false, error: { code: "unknown_tool", message: `no tool is named ${JSON.stringify(req.name.slice(0, 140))}; call code_execution__list_tools for the names` } };
  } else {
    let args: unknown;
    try {
      args = JSON.parse(req.args);
    } catch {
      return encodeError("invalid_arguments", `tools.${req.name}: arguments are not valid JSON`);
    }
    try {
      outcome = await callTool(req.name, args, signal);
    } catch (e) {
      const err = toAirlockError(e);
      outcome = { ok: false, error: { code: err.code, message: err.message } };
    }
  }
  if (outcome.ok) {
    try {
      return JSON.stringify({ ok: true, result: outcome.result });
    } catch (e) {
      return encodeError("internal", `tools.${req.name}: its result is not JSON-serialisable (${e instanceof Error ? e.message : String(e)})`);
    }
  }
  const name = typeof outcome.error.name === "string" ? outcome.error.name : "ToolError";
  return JSON.stringify({ ok: false, error: { name, code: String(outcome.error.code), message: String(outcome.error.message) } });
}

function encodeError(code: ErrorCode, message: string): string {
  return JSON.stringify({ ok: false, error: { name: "ToolError", code, message } });
}
