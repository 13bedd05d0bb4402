/**
 * @module script/vm
 * One script in QuickJS: a runtime + context in which no other script ran (made fresh, or a guest snapshot restored:
 * script/snapshot.ts), its limits (memory, stack, CPU
 * deadline via the interrupt handler, wall-clock deadline, tool calls, log and result bytes), and
 * its disposal (the bridge's handles first, then context, then runtime — stack-notes §2, §8). A tool call is a
 * guest promise the bridge keeps (script/bridge.ts): the host takes the guest's calls in batches after each slice
 * and delivers each result as one string.
 * Runs inside a sandbox worker; knows nothing of tinypool or the gate.
 */
import type { QuickJSContext, QuickJSHandle, QuickJSRuntime, QuickJSWASMModule } from "quickjs-emscripten-core";
import { copyString, installBridge, mentionsTools, parseBatch, SCRIPT_FILENAME, wrapUserCode, type BridgeHooks, type GuestBridge, type SettleKind } from "./bridge.ts";
import { assertNever } from "../errors.ts";
import { DirectCalls } from "./direct.ts";
import { METER } from "./meter.ts";
import type { CallRequest, ScriptFailure, ScriptLimits, WorkerOutcome } from "./protocol.ts";

/** How one script ended, plus `fatal`: its QuickJS instance is broken and must be dropped, never reused. */
export type RunOutcome = WorkerOutcome & { fatal: boolean };

export interface VmOptions {
  code: string;
  limits: ScriptLimits;
  /** Per-runtime QuickJS malloc limit, bytes: the script's whole memory limit (its instance's WASM memory has room for it). */
  memoryBytes: number;
  /** QuickJS stack size, bytes. */
  stackBytes: number;
  /** Shared meter the host watchdog reads (see METER). */
  meter: Float64Array;
  /**
   * True when the script's instance memory cannot be relied on to grow by `wantBytes` (default 0: it has reached its cap,
   * within its last growth step; script/instances.ts): a `null` error, a QuickJS error without its message, a syntax
   * error or a lost job then mean out of memory.
   */
  memoryExhausted(wantBytes?: number): boolean;
  /**
   * True once an allocation of the guest failed for want of memory (script/instances.ts `atWall`): the interrupt handler
   * then ends the script `script_memory_limit` at once, so a guest that catches the error and retries (a compile in a
   * loop) does not spin until its CPU deadline. Absent: not checked (tests).
   */
  memoryWallHit?(): boolean;
  /** Sends a tool call to the host. */
  post(msg: CallRequest): void;
  /** True once the host cancelled the script (its shared cancel word): read by the interrupt handler, so a busy guest stops too. */
  cancelRequested?(): boolean;
  /** False: tool calls go through quickjs-emscripten's handle API even when the FFI path (script/direct.ts) is there (tests). Default true. */
  directCalls?: boolean;
  /**
   * True: `done` resolves before the script's bridge handles, context and runtime are freed, and the caller frees them
   * with `release()` (the outcome leaves first: the disposal is off the script's latency path). Default false: they
   * are freed before `done` resolves.
   */
  releaseLater?: boolean;
}

type Settled = { ok: true; json?: string } | { ok: false; error: ScriptFailure };

const enc = new TextEncoder();
const utf8Text = new TextDecoder("utf-8");
const byteLength = (s: string): number => (s.length * 3 <= 1024 ? enc.encode(s).length : Buffer.byteLength(s, "utf8"));

/** True for failures of the WASM module instance itself (that instance must not be used again). */
export function isFatalModuleError(e: unknown): boolean {
  if (e instanceof WebAssembly.RuntimeError) return true;
  const msg = e instanceof Error ? e.message : String(e);
  return /Aborted|Assertion failed|RuntimeError|memory access out of bounds|call_indirect/.test(msg);
}

/**
 * True for the host's own stack overflow (the worker thread's JavaScript stack: JSC throws a RangeError "Maximum call
 * stack size exceeded."). QuickJS's C frames sit on that stack as WebAssembly frames, and a guest whose recursion
 * passes through native code (a Proxy trap, a getter, `toString`/`valueOf`/`Symbol.toPrimitive`, `JSON.stringify`)
 * can use it up before QuickJS's own stack limit (`limits.script_stack_kb`, counted on emscripten's shadow stack)
 * trips. The error unwinds through QuickJS without its cleanup, so the instance it unwound is never used again.
 */
export function isHostStackOverflow(e: unknown): boolean {
  if (e instanceof RangeError && /call stack size exceeded/i.test(e.message)) return true;
  // quickjs-emscripten's scopes throw the block's error with the error of their disposal attached (`disposeError`)
  const disposed = e instanceof Error ? (e as { disposeError?: unknown }).disposeError : undefined;
  return disposed instanceof RangeError && /call stack size exceeded/i.test(disposed.message);
}

/** The modules whose interrupt callback `interruptsUnswallowed` replaced. */
const unswallowed = new WeakSet<QuickJSWASMModule>();

/**
 * Makes `mod`'s interrupt callback (the one its WebAssembly calls QuickJS's interrupt check through) let its failures
 * through, once per module; true when it does. quickjs-emscripten's own catches any error there, prints it, and
 * interrupts QuickJS: when the host's stack ran out in its frames, before `ScriptRun`'s handler could record it, the
 * guest got an "interrupted" error that no `#stop` explains (a script ended `script_error`, or waited "on a promise that
 * can never settle" when it came from its return value's `toJSON`), and a value the script threw shaped like it could
 * only be read as that. Without the catch, the host's `RangeError` unwinds QuickJS to the host function or the call
 * into the guest around it, where `ScriptRun` sees it (`#watchHostErrors`, `#shield`, `#guard`: the instance dropped);
 * the runtime's own callback and the handler (`#interrupt`, which catches what fails inside it) run as before.
 * Reads fields the library marks private (as script/direct.ts does): false, changing nothing, when they are absent.
 */
function interruptsUnswallowed(mod: QuickJSWASMModule): boolean {
  if (unswallowed.has(mod)) return true;
  type RuntimeCallbacks = { shouldInterrupt?: (rt: number) => number };
  const m = mod as unknown as { module?: { callbacks?: { shouldInterrupt?: unknown } }; callbacks?: { runtimeCallbacks?: unknown } };
  const toHost = m.module?.callbacks;
  const runtimes = m.callbacks?.runtimeCallbacks;
  if (!toHost || typeof toHost.shouldInterrupt !== "function" || !(runtimes instanceof Map)) return false;
  toHost.shouldInterrupt = (_asyncify: unknown, rt: number): number => {
    const callbacks = (runtimes as Map<number, RuntimeCallbacks>).get(rt);
    if (typeof callbacks?.shouldInterrupt !== "function") throw new Error(`no runtime ${rt} for QuickJS's interrupt check`);
    return callbacks.shouldInterrupt(rt);
  };
  unswallowed.add(mod);
  return true;
}

/**
 * A QuickJS runtime and context made ahead of a script, with its limits set and the bridge installed,
 * and no user code ever run in it: `prepareGuest()` makes one while its worker is idle, and exactly one
 * `ScriptRun` adopts it (`start(prepared)`), so a script does not wait for runtime creation and still gets
 * a fresh runtime of its own (docs/security-model.md §9). The bridge's hooks reach the adopting run
 * through `hooks`; until then they refuse. `dispose()` frees an unused one.
 *
 * A guest restored from a snapshot instead of freed (script/snapshot.ts) is handed to each of its runs as a new
 * `PreparedGuest` over the same runtime, context and bridge (`reissue()`): one that is not `owned`, whose `dispose()`
 * frees nothing (the snapshot's owner restores or drops the instance), and whose run frees nothing either
 * (`ScriptRun.release`).
 */
export class PreparedGuest {
  #taken = false;

  constructor(
    readonly module: QuickJSWASMModule,
    readonly rt: QuickJSRuntime,
    readonly ctx: QuickJSContext,
    readonly bridge: GuestBridge,
    /** Where the bridge's host functions look for the adopting run's hooks (shared by every reissue of one guest). */
    private readonly box: { hooks: BridgeHooks | null } = { hooks: null },
    /** False for a reissue: the runtime, context and bridge belong to a snapshot, not to this guest's run. */
    readonly owned = true,
  ) {}

  /** The adopting run's hooks; set once, by that run (null: the bridge's host functions refuse). */
  get hooks(): BridgeHooks | null {
    return this.box.hooks;
  }

  set hooks(h: BridgeHooks | null) {
    this.box.hooks = h;
  }

  /** Hands the guest to one run; false when it was already taken or disposed (never shared). */
  take(): boolean {
    if (this.#taken) return false;
    this.#taken = true;
    return true;
  }

  /**
   * The same runtime, context and bridge for the next run, as a guest not `owned` and not yet taken; the hooks are
   * cleared (the bridge refuses until that run adopts it). Only for a guest whose memory has just been restored to its
   * state before any run (script/snapshot.ts `GuestSnapshot.lend`).
   */
  reissue(): PreparedGuest {
    this.box.hooks = null;
    return new PreparedGuest(this.module, this.rt, this.ctx, this.bridge, this.box, false);
  }

  /**
   * Frees a guest no run adopted; for a guest not `owned`, only marks it taken. @throws whatever QuickJS throws freeing
   * it (the instance is then broken).
   */
  dispose(): void {
    if (!this.take() || !this.owned) return;
    this.bridge.dispose();
    this.ctx.dispose();
    this.rt.dispose();
  }
}

/**
 * Makes a fresh runtime and context on `mod` (limits `memoryBytes`, `stackBytes`) with the bridge installed;
 * `whole`: the bridge in one piece (bridge.ts `installBridge`; for a script likely to use `tools`), else its core.
 * @throws whatever QuickJS throws (a broken instance): the caller drops the instance.
 */
export function prepareGuest(mod: QuickJSWASMModule, memoryBytes: number, stackBytes: number, whole = false): PreparedGuest {
  const rt = mod.newRuntime();
  try {
    rt.setMemoryLimit(memoryBytes);
    rt.setMaxStackSize(stackBytes);
    const ctx = rt.newContext();
    const box: { hooks: BridgeHooks | null } = { hooks: null };
    const refuse = (): { error: QuickJSHandle } => ({ error: ctx.newError({ name: "Error", message: "no script owns this context" }) });
    const bridge = installBridge(ctx, {
      flush: (batch) => (box.hooks ? box.hooks.flush(batch) : refuse()),
      log: (level, line) => (box.hooks ? box.hooks.log(level, line) : refuse()),
      settle: (end, value) => box.hooks?.settle(end, value),
    }, whole);
    return new PreparedGuest(mod, rt, ctx, bridge, box);
  } catch (e) {
    try {
      rt.dispose();
    } catch {
      // the instance is broken; the caller drops it
    }
    throw e;
  }
}

/**
 * A running script. `start()` evaluates it; `reply()` feeds tool results back; `cancel()` stops it.
 * `done` resolves exactly once with the outcome; it never rejects.
 */
export class ScriptRun {
  readonly done: Promise<RunOutcome>;
  #resolve!: (o: RunOutcome) => void;
  readonly #opts: VmOptions;
  #rt?: QuickJSRuntime;
  #ctx?: QuickJSContext;
  #bridge?: GuestBridge;
  /** The tool-call path through the FFI (script/direct.ts), or null: the handle API. */
  #direct: DirectCalls | null = null;
  /** Ids of the calls sent to the host and not yet answered (the guest holds their promises). */
  readonly #outstanding = new Set<number>();
  #calls = 0;
  /** UTF-8 bytes of tool-call arguments sent to the host so far (bounded by the memory limit). */
  #argBytes = 0;
  readonly #logs: string[] = [];
  #logBytes = 0;
  #cpuUsed = 0;
  #sliceStart = 0;
  #inGuest = false;
  readonly #wallDeadline: number;
  #wallTimer?: ReturnType<typeof setTimeout>;
  /** Set by a limit or a cancel: the interrupt handler returns true while it is set. */
  #stop: ScriptFailure | null = null;
  #settled: Settled | null = null;
  /** Set once the script's function returned or threw (from the moment its end is reported): calls made after are not sent. */
  #ended = false;
  #finished = false;
  /** Whether the guest's handles, context and runtime were freed: not yet, cleanly, or their freeing threw. */
  #release: "pending" | "clean" | "broken" = "pending";
  /**
   * True when the guest is a snapshot's (`PreparedGuest.owned` false): `release()` frees nothing of it, since the
   * snapshot restores its memory (script/snapshot.ts).
   */
  #lent = false;
  /**
   * Set once the host's stack overflowed while this script ran (`isHostStackOverflow`): the script ends
   * `script_stack_overflow`, its instance is fatal (dropped), and nothing of it is freed (`release` refuses: QuickJS's
   * state was unwound mid-call and freeing it could fault or loop).
   */
  #hostOverflow = false;
  /**
   * Whether this run's module reports every failure of the interrupt callback (`interruptsUnswallowed`): then QuickJS
   * is interrupted only when `#interrupt` asked (`#stop` set), and an "interrupted" error with no `#stop` is a value the
   * script made.
   */
  #interruptsWatched = false;

  constructor(private readonly mod: QuickJSWASMModule, opts: VmOptions) {
    this.#opts = opts;
    this.done = new Promise((r) => (this.#resolve = r));
    this.#wallDeadline = Date.now() + opts.limits.wallTimeoutMs;
    // From construction, not start(): a script waiting for its first run slot is within its wall deadline too.
    this.#wallTimer = setTimeout(() => {
      this.#stop ??= timeoutFailure(`the script ran past its wall-clock deadline of ${opts.limits.wallTimeoutMs} ms (limits.script_wall_timeout_ms), tool waits included`);
      this.#check();
    }, opts.limits.wallTimeoutMs);
  }

  /** True once the script has ended (`done` is resolved or about to be). */
  get finished(): boolean {
    return this.#finished;
  }

  /**
   * Evaluates the script and runs its jobs until it waits on tools, in `prepared` (a guest made ahead on
   * this run's module, never used: see `PreparedGuest`; its memory and stack limits must be this run's)
   * or else in a runtime and context made now.
   */
  start(prepared?: PreparedGuest): void {
    if (this.#finished) {
      prepared?.dispose();
      return;
    }
    this.#guard(() => {
      const hooks: BridgeHooks = {
        flush: this.#shield((batch) => {
          // the batch's calls could not be copied out of a full guest: they are lost, so the script ends (never goes on without them)
          if (batch === null) this.#stop ??= this.#oom();
          const refused = batch === null ? this.#stop!.message : this.#onBatch(batch);
          return refused === undefined ? undefined : { error: this.#ctx!.newError({ name: "Error", message: refused }) };
        }),
        log: this.#shield((level: string, line: string) => this.#onLog(level, line)),
        settle: this.#shield((end: SettleKind, value: QuickJSHandle) => this.#onSettle(end, value)),
      };
      let ctx: QuickJSContext;
      if (prepared && prepared.module === this.mod && prepared.take()) {
        this.#rt = prepared.rt;
        ctx = this.#ctx = prepared.ctx;
        this.#bridge = prepared.bridge;
        this.#lent = !prepared.owned;
        prepared.hooks = hooks;
        prepared.rt.setInterruptHandler(this.#interrupt);
      } else {
        try {
          prepared?.dispose();
        } catch {
          // not this run's guest: its own instance's problem, not this script's
        }
        const rt = (this.#rt = this.mod.newRuntime());
        rt.setMemoryLimit(this.#opts.memoryBytes);
        rt.setMaxStackSize(this.#opts.stackBytes);
        rt.setInterruptHandler(this.#interrupt);
        ctx = this.#ctx = rt.newContext();
      }
      this.#watchHostErrors(ctx);
      this.#interruptsWatched = interruptsUnswallowed(this.mod);
      this.#enter(() => {
        // made on the script's path: in one piece when the script names tools, else the core alone
        const bridge = (this.#bridge ??= installBridge(ctx, hooks, mentionsTools(this.#opts.code)));
        this.#direct = this.#opts.directCalls === false ? null : DirectCalls.for(this.mod, this.#rt!, ctx);
        const fn = ctx.evalCode(wrapUserCode(this.#opts.code), SCRIPT_FILENAME);
        if (fn.error) {
          this.#settleFromError(fn.error);
          fn.error.dispose();
          return;
        }
        const called = ctx.callFunction(bridge.main, ctx.undefined, fn.value);
        fn.value.dispose();
        if (called.error) {
          this.#settleFromError(called.error);
          called.error.dispose();
        } else called.value.dispose();
        this.#drain();
      });
    });
    this.#check();
  }

  /**
   * Delivers the host's answer to tool call `id` (JSON text of `{ok, result | error}`, made by the host: a string, or
   * its UTF-8 bytes as the worker read them off the channel) and runs the guest on.
   */
  reply(id: number, payload: string | Uint8Array): void {
    if (this.#finished || !this.#outstanding.delete(id)) return;
    // its UTF-8 copy alone would pass the memory limit (a UTF-16 length is at most its UTF-8 byte length): refused
    // before the module is touched, whose capped memory it could only fault
    if (payload.length > this.#opts.memoryBytes) {
      this.#stop ??= this.#oom();
      this.#check();
      return;
    }
    this.#guard(
      () =>
        this.#enter(() => {
          const ctx = this.#ctx!;
          if (this.#direct) {
            const r = typeof payload === "string" ? this.#direct.callWithString(this.#bridge!.deliver, `[${id},${payload}]`) : this.#direct.callWithUtf8(this.#bridge!.deliver, `[${id},`, payload, "]");
            if (r === "no-memory") {
              this.#stop ??= this.#oom(); // the reply's copy does not fit in the script's memory
              return;
            }
            if (!r.ok) {
              this.#settleFromError(r.error);
              r.error.dispose();
            }
          } else {
            const h = ctx.newString(`[${id},${typeof payload === "string" ? payload : utf8Text.decode(payload)}]`);
            const r = ctx.callFunction(this.#bridge!.deliver, ctx.undefined, h);
            h.dispose();
            if (r.error) {
              this.#settleFromError(r.error);
              r.error.dispose();
            } else r.value.dispose();
          }
          this.#drain();
        }),
      () => (typeof payload === "string" ? byteLength(payload) : payload.length),
    );
    this.#check();
  }

  /** Stops the script with `cancelled`. */
  cancel(): void {
    this.#stop ??= { code: "cancelled", message: "the script was cancelled by its caller" };
    this.#check();
  }

  /** Ms until the wall-clock deadline (≤ 0 once past it). */
  get wallLeftMs(): number {
    return this.#wallDeadline - Date.now();
  }

  /**
   * Ends the script with `script_timeout` if its wall-clock deadline has passed. The worker calls it when its
   * wait on the host times out: a thread blocked on the channel runs no timers, so the deadline's own timer cannot.
   */
  checkDeadline(): void {
    if (Date.now() < this.#wallDeadline) return;
    this.#stop ??= timeoutFailure(`the script ran past its wall-clock deadline of ${this.#opts.limits.wallTimeoutMs} ms (limits.script_wall_timeout_ms), tool waits included`);
    this.#check();
  }

  #interrupt = (): boolean => {
    if (this.#stop) return true;
    try {
      return this.#interruptCheck();
    } catch (e) {
      // the host's stack ran out in this check (its only failure): quickjs-emscripten would print it and interrupt anyway
      if (isHostStackOverflow(e)) this.#onHostOverflow();
      else this.#stop = { code: "internal", message: `the script's interrupt check failed: ${e instanceof Error ? e.message : String(e)}; run the script again` };
      return true;
    }
  };

  #interruptCheck(): boolean {
    if (this.#opts.cancelRequested?.()) {
      this.#stop = { code: "cancelled", message: "the script was cancelled by its caller" };
      return true;
    }
    if (this.#opts.memoryWallHit?.()) {
      this.#stop = this.#oom();
      return true;
    }
    const { cpuTimeoutMs } = this.#opts.limits;
    if (this.#cpuUsed + (performance.now() - this.#sliceStart) > cpuTimeoutMs) {
      this.#stop = timeoutFailure(`the script used more than its CPU deadline of ${cpuTimeoutMs} ms (limits.script_timeout_ms)${this.#afterEnd() || "; do less work per script or split it"}`);
      return true;
    }
    if (Date.now() > this.#wallDeadline) {
      this.#stop = timeoutFailure(`the script ran past its wall-clock deadline of ${this.#opts.limits.wallTimeoutMs} ms (limits.script_wall_timeout_ms)${this.#afterEnd()}`);
      return true;
    }
    return false;
  }

  /**
   * What a deadline met after the script's function returned or threw adds to its message: the time went to promise
   * jobs or callbacks it left queued (started by its code, or by a getter or toJSON of its return value), which run
   * until the guest is idle, and its value is not sent. Empty before the script's end.
   */
  #afterEnd(): string {
    if (!this.#ended) return "";
    return " in promise jobs left running after its function returned or threw (a callback that queues itself again, from its code or a getter or toJSON of its return value); its value is not sent: leave no such loop behind";
  }

  /** Records that the host's stack overflowed (`#hostOverflow`) and stops the guest at its next interrupt check. */
  #onHostOverflow(): void {
    this.#hostOverflow = true;
    this.#stop ??= this.#stackFailure(true);
  }

  /**
   * `f` (a bridge hook or one of quickjs-emscripten's own host-side entries, `#watchHostErrors`), recording a host
   * stack overflow in it (`#onHostOverflow`) before the error goes on as it would have (to the guest, or to the library).
   */
  #shield<A extends unknown[], R>(f: (...a: A) => R): (...a: A) => R {
    return (...a: A): R => {
      try {
        return f(...a);
      } catch (e) {
        if (isHostStackOverflow(e)) this.#onHostOverflow();
        throw e;
      }
    };
  }

  /**
   * Records a host stack overflow that quickjs-emscripten catches itself, outside the bridge hooks (its own frames around
   * a host function overflowed, or the WebAssembly calls they make): its context's `errorToHandle`, which turns every
   * error of a host function into a guest exception, and the context's C → host entry (`cToHostCallbacks.callFunction`,
   * from which an error that conversion could not make goes to the module's catch-all: printed, the call read as
   * `undefined`) are wrapped. Fields the library marks private (as script/direct.ts reads some): skipped when absent.
   */
  #watchHostErrors(ctx: QuickJSContext): void {
    const c = ctx as unknown as { errorToHandle?: (e: unknown) => QuickJSHandle; cToHostCallbacks?: { callFunction?: (...a: unknown[]) => unknown } };
    const convert = c.errorToHandle;
    if (typeof convert === "function") {
      c.errorToHandle = this.#shield((e: unknown): QuickJSHandle => {
        if (isHostStackOverflow(e)) this.#onHostOverflow();
        return convert.call(ctx, e);
      });
    }
    const entry = c.cToHostCallbacks;
    const call = entry?.callFunction;
    if (entry && typeof call === "function") entry.callFunction = this.#shield((...a: unknown[]): unknown => call.apply(entry, a));
  }

  /** The `script_stack_overflow` failure; `host`: the host's stack ran out first (`isHostStackOverflow`). */
  #stackFailure(host: boolean): ScriptFailure {
    const kb = this.#opts.stackBytes >> 10;
    if (!host) return { code: "script_stack_overflow", message: `the script overflowed its stack (${kb} KiB, limits.script_stack_kb); avoid deep recursion` };
    return { code: "script_stack_overflow", message: `the script overflowed its stack: it nested too deeply for the sandbox thread's stack before its own ${kb} KiB (limits.script_stack_kb) ran out (recursion through native code: a Proxy trap, a getter, toString, valueOf or Symbol.toPrimitive calling itself, or JSON of a deeply nested value); avoid deep recursion` };
  }

  /** Runs `fn` with the CPU meter running (guest code may execute inside). Re-entrant. */
  #enter<T>(fn: () => T): T {
    if (this.#inGuest) return fn();
    const m = this.#opts.meter;
    this.#inGuest = true;
    this.#sliceStart = performance.now();
    m[METER.enteredAt] = Date.now();
    try {
      return fn();
    } finally {
      this.#cpuUsed += performance.now() - this.#sliceStart;
      m[METER.cpuUsed] = this.#cpuUsed;
      m[METER.enteredAt] = 0;
      this.#inGuest = false;
    }
  }

  /** Runs the guest's pending jobs until it waits, then takes the calls it made meanwhile. */
  #drain(): void {
    const d = this.#direct;
    let error: QuickJSHandle | undefined;
    if (d) {
      const r = d.runJobs();
      if (!r.ok) error = r.error;
    } else error = this.#rt!.executePendingJobs().error;
    if (error) {
      this.#settleFromError(error);
      error.dispose();
    }
    if (this.#stop) return;
    if (d) {
      const t = d.callForString(this.#bridge!.take);
      if (t === "no-memory") this.#stop ??= this.#oom(); // the batch could not be copied out of a full guest: its calls are lost
      else if (!t.ok) {
        this.#settleFromError(t.error);
        t.error.dispose();
      } else if (t.value !== "") this.#onBatch(t.value);
      return;
    }
    const ctx = this.#ctx!;
    const t = ctx.callFunction(this.#bridge!.take, ctx.undefined);
    if (t.error) {
      this.#settleFromError(t.error);
      t.error.dispose();
      return;
    }
    const batch = ctx.typeof(t.value) === "string" ? copyString(ctx, t.value) : undefined;
    t.value.dispose();
    if (batch === null) this.#stop ??= this.#oom(); // the batch could not be copied out of a full guest: its calls are lost
    else if (batch === undefined) this.#stop ??= { code: "internal", message: "the script's bridge returned a malformed batch of tool calls; run the script again" };
    else if (batch !== "") this.#onBatch(batch);
  }

  /**
   * Runs host-side work on the module; a module failure ends the script and marks its instance fatal (dropped, never
   * reused): `script_memory_limit` when the instance's memory cannot grow by `wantBytes()` (what `fn` copies in; 0 when
   * absent), else `internal`.
   */
  #guard(fn: () => void, wantBytes?: () => number): void {
    try {
      fn();
    } catch (e) {
      // the host's stack ran out inside QuickJS (or did before, and the guest faulted on what it left): the script's stack
      // limit, and the instance is dropped
      if (this.#hostOverflow || isHostStackOverflow(e)) {
        this.#hostOverflow = true;
        return this.#finish(this.#stop?.code === "script_stack_overflow" ? this.#stop : this.#stackFailure(true), true);
      }
      const fatal = isFatalModuleError(e);
      // a module fault when the instance's memory cannot grow by what `fn` copies in (`wantBytes`, e.g. a tool result
      // into a full guest) is the script's memory limit, not the sandbox's failure
      if (fatal && this.#opts.memoryExhausted(wantBytes?.() ?? 0)) return this.#finish(this.#oom(), fatal);
      this.#finish({ code: "internal", message: `the script sandbox failed: ${e instanceof Error ? e.message : String(e)}; run the script again` }, fatal);
    }
  }

  /**
   * Sends the host a batch of the guest's calls (the bridge's batch text: bridge.ts `parseBatch`), each checked
   * against the call and argument-byte limits; a limit sets `#stop` (the guest is stopped, the batch's later calls
   * never leave). A malformed batch (only a guest that broke the bridge's closure could make one) stops the script.
   * Returns the message to throw in the guest when the batch was refused (the guest's `flush` throws it; after a
   * slice nothing is thrown), else undefined. Makes no guest value: a handle made here and never thrown would be
   * left in the runtime, which then fails to free.
   */
  #onBatch(text: string): string | undefined {
    if (this.#stop || this.#finished) return "the script is stopping";
    // made after the script's function returned or threw (a callback that ran later, a getter of what it threw, read
    // here): nobody awaits them, so they never reach the host (the bridge sent the calls made before its end)
    if (this.#ended) return "the script has ended: a tool call made after it returned or threw is not sent";
    const batch = parseBatch(text);
    if (batch === null || batch.length === 0) return this.#malformed();
    const { maxToolCalls } = this.#opts.limits;
    for (const { id, name, args } of batch) {
      if (this.#outstanding.has(id)) return this.#malformed();
      if (this.#calls >= maxToolCalls) {
        this.#stop = { code: "script_too_many_calls", message: `the script made more than ${maxToolCalls} tool calls (limits.script_max_tool_calls); make fewer, larger calls` };
        return this.#stop.message;
      }
      // What a script sends the host counts against its memory limit: the host keeps arguments (events,
      // cards), so without this a 64 MiB script could make the host hold max_tool_calls × its memory.
      const argBytes = byteLength(args);
      if (this.#argBytes + argBytes > this.#opts.memoryBytes) {
        const mb = Math.round(this.#opts.memoryBytes / 2 ** 20);
        this.#stop = { code: "script_memory_limit", message: `the script sent more than ${mb} MiB of tool-call arguments to the host (limits.script_memory_mb bounds them too); send less data per script` };
        return this.#stop.message;
      }
      this.#argBytes += argBytes;
      this.#calls++;
      this.#outstanding.add(id);
      this.#opts.post({ t: "call", id, name, args });
    }
    return undefined;
  }

  /** Stops the script for a batch of calls the bridge could not have made; the message to throw in the guest. */
  #malformed(): string {
    this.#stop ??= { code: "internal", message: "the script's bridge sent a malformed batch of tool calls; run the script again" };
    return this.#stop.message;
  }

  #onLog(level: string, line: string): { error: QuickJSHandle } | void {
    const entry = level === "warn" || level === "error" ? `[${level}] ${line}` : line;
    const { maxLogBytes } = this.#opts.limits;
    const n = byteLength(entry) + 1;
    if (this.#logBytes + n > maxLogBytes) {
      this.#logs.push(`[console output cut: more than ${maxLogBytes} bytes]`);
      this.#stop ??= { code: "script_output_too_large", message: `the script logged more than ${maxLogBytes} bytes (limits.script_max_log_bytes); log less` };
      return { error: this.#ctx!.newError({ name: "Error", message: this.#stop.message }) };
    }
    this.#logBytes += n;
    this.#logs.push(entry);
  }

  #onSettle(end: SettleKind, value: QuickJSHandle): void {
    if (this.#settled) return;
    this.#ended = true;
    switch (end) {
      case "threw":
        return this.#settleFromError(value);
      case "unserialisable":
      case "calledLate":
      case "notJson":
        return this.#settleUnsent(end, value);
      case "returned":
        break;
      default:
        assertNever(end, "script end");
    }
    const ctx = this.#ctx!;
    const json = ctx.typeof(value) === "string" ? copyString(ctx, value) : undefined;
    const { maxResultBytes } = this.#opts.limits;
    if (json === null) {
      // the return value's JSON could not be copied out of a full guest (never reported as an empty value)
      this.#settled = { ok: false, error: this.#oom() };
    } else if (json !== undefined && byteLength(json) > maxResultBytes) {
      this.#settled = { ok: false, error: { code: "script_output_too_large", message: `the script's return value is more than ${maxResultBytes} bytes of JSON (limits.script_max_result_bytes); return less (e.g. a summary)` } };
    } else this.#settled = { ok: true, json };
  }

  /**
   * Records why the script's return value was not sent: `script_result_invalid` when `JSON.stringify` threw
   * (`unserialisable`, `value` what it threw) or a getter or `toJSON` it ran made tool calls (`calledLate`, `value`
   * their count; the bridge refused them) or made nothing of a value other than `undefined` (`notJson`, `value` its
   * `typeof`: a function, a Symbol, an object whose `toJSON` gave one). What it threw stays a limit when it is one (out
   * of memory, stack, deadline).
   */
  #settleUnsent(end: "unserialisable" | "calledLate" | "notJson", value: QuickJSHandle): void {
    const advice = "; return plain data (no getters, toJSON, cycles or BigInt)";
    let f: ScriptFailure;
    if (end === "notJson") {
      const ctx = this.#ctx!;
      const t = ctx.typeof(value) === "string" ? copyString(ctx, value) : null;
      const what = t === "function" ? "a function" : t === "symbol" ? "a Symbol" : t === "object" ? "an object whose toJSON returned no JSON value (a function, a Symbol or undefined)" : "a value";
      f = this.#stop ?? { code: "script_result_invalid", message: `the script's return value was not sent: it is ${what}, which JSON cannot carry; return plain data (objects, arrays, strings, numbers, booleans, null) or nothing` };
    } else if (end === "calledLate") {
      const ctx = this.#ctx!;
      const n = ctx.typeof(value) === "number" ? ctx.getNumber(value) : 0;
      f = this.#stop ?? { code: "script_result_invalid", message: `the script's return value was not sent: serialising it as JSON ran ${n} tool call(s) (a getter or toJSON), and no call made once the script's value is decided is sent${advice}` };
    } else {
      f = this.#classify(value);
      if (f.code === "script_error") f = { code: "script_result_invalid", message: cutBytes(`the script's return value was not sent: it cannot be serialised as JSON: ${f.message}${advice}`, this.#opts.limits.maxResultBytes) };
    }
    this.#settled = { ok: false, error: f };
  }

  /** Records a guest error value (borrowed handle) as the script's failure, classifying limit errors. */
  #settleFromError(h: QuickJSHandle): void {
    if (this.#settled) return;
    this.#ended = true;
    this.#settled = { ok: false, error: this.#classify(h) };
  }

  /** The script's failure, its message and stack each cut to the result limit (a thrown error must not carry more than a return value could). */
  #classify(h: QuickJSHandle): ScriptFailure {
    const f = this.#classifyUncut(h);
    const max = this.#opts.limits.maxResultBytes;
    return { ...f, message: cutBytes(f.message, max), ...(f.stack !== undefined ? { stack: cutBytes(f.stack, max) } : {}) };
  }

  #classifyUncut(h: QuickJSHandle): ScriptFailure {
    const ctx = this.#ctx!;
    const { name, message, stack, code } = describe(ctx, h);
    if (this.#stop) return this.#stop;
    // an interrupt the handler did not ask for (it returns true only with `#stop` set): quickjs-emscripten's frames
    // around it failed, which only the host's stack running out makes them do. Only where those frames swallow their
    // failure (`#interruptsWatched` false): else such a value is one the script threw itself (`throw { name:
    // "InternalError", message: "interrupted" }`, or from a setter the bridge runs), its own error
    if (!this.#interruptsWatched && message === "interrupted" && name === "InternalError") {
      this.#onHostOverflow();
      return this.#stop!;
    }
    const oom = this.#oom();
    if (name === undefined && message === undefined) {
      return this.#opts.memoryExhausted() ? oom : { code: "script_error", message: `the script threw ${stack ?? "a non-error value"}` };
    }
    if (message === "out of memory") return oom;
    // what QuickJS throws when an allocation fails where it cannot say so (an error object with no room for its message;
    // the parser reading a failed allocation as bad syntax): in a full guest, that is the memory limit, not the code
    if ((name === "InternalError" || name === "SyntaxError" || message === "" || message === undefined) && this.#opts.memoryExhausted()) return oom;
    if (message === "stack overflow" || message === "Maximum call stack size exceeded") return this.#stackFailure(false);
    return { code: "script_error", message: `${name ?? "Error"}${code ? ` [${code}]` : ""}: ${message ?? ""}`, ...(stack ? { stack } : {}) };
  }

  /** The `script_memory_limit` failure. */
  #oom(): ScriptFailure {
    const memoryMb = Math.round(this.#opts.memoryBytes / 2 ** 20);
    return { code: "script_memory_limit", message: `the script ran out of memory (limit ${memoryMb} MiB, limits.script_memory_mb); hold less data at once` };
  }

  #check(): void {
    if (this.#finished) return;
    if (this.#stop) return this.#finish(this.#stop, false);
    if (this.#settled) return this.#finish(this.#settled, false);
    if (this.#outstanding.size === 0) {
      // a full guest loses the job that would have settled it (QuickJS could not queue it): its memory limit
      if (this.#opts.memoryExhausted()) return this.#finish(this.#oom(), false);
      this.#finish({ code: "script_error", message: "the script is waiting on a promise that can never settle (no tool call is pending); await tools.* calls or return a value" }, false);
    }
  }

  /**
   * Frees the guest's bridge handles, context and runtime once the script has finished (`finished`); idempotent.
   * @returns true when they were freed without error now or before; false when the script has not finished (nothing is
   * freed) or freeing threw (QuickJS can abort in JS_FreeRuntime after a GC inside a promise job): the instance is
   * broken, and its owner drops it; also false, freeing nothing, after the host's stack overflowed in the script
   * (`#hostOverflow`: the instance is dropped whole). A snapshot's guest (`#lent`) is not freed: true unless the host's
   * stack overflowed (its owner then restores the snapshot). Never throws.
   */
  release(): boolean {
    if (!this.#finished) return false;
    if (this.#hostOverflow) this.#release = "broken";
    if (this.#release !== "pending") return this.#release === "clean";
    this.#release = "broken"; // until every free below succeeded
    if (this.#lent) {
      // a snapshot's guest: its memory is restored, not freed (nothing to fail here)
      this.#release = "clean";
      return true;
    }
    try {
      this.#direct?.free();
      this.#bridge?.dispose();
      this.#ctx?.dispose();
      this.#rt?.dispose();
      this.#release = "clean";
    } catch {
      // the script has ended and its outcome is known; only its instance is broken
    }
    return this.#release === "clean";
  }

  #finish(end: Settled | ScriptFailure, fatal: boolean): void {
    if (this.#finished) return;
    this.#finished = true;
    clearTimeout(this.#wallTimer);
    this.#opts.meter[METER.enteredAt] = 0;
    this.#outstanding.clear();
    if (this.#hostOverflow) fatal = true;
    if (this.#opts.releaseLater !== true && !this.release()) fatal = true;
    const base = { logs: this.#logs, calls: this.#calls, fatal };
    if ("code" in end) this.#resolve({ ok: false, error: end, ...base });
    else if (end.ok) this.#resolve({ ok: true, ...(end.json !== undefined ? { json: end.json } : {}), ...base });
    else this.#resolve({ ok: false, error: end.error, ...base });
  }
}

/** `s` when it fits in `max` UTF-8 bytes, else its first `max` bytes plus a note saying it was cut. */
function cutBytes(s: string, max: number): string {
  if (s.length <= max / 3 || byteLength(s) <= max) return s;
  return `${Buffer.from(s.slice(0, max), "utf8").subarray(0, max).toString("utf8")} …[cut: more than ${max} bytes, limits.script_max_result_bytes]`;
}

function timeoutFailure(message: string): ScriptFailure {
  return { code: "script_timeout", message };
}

/**
 * Reads `name`, `message`, `stack` of a guest value as strings (undefined where absent).
 * @throws only a host stack overflow (`isHostStackOverflow`: a getter of the value recursed); anything else reads as absent.
 */
function describe(ctx: QuickJSContext, h: QuickJSHandle): { name?: string; message?: string; stack?: string; code?: string } {
  try {
    const t = ctx.typeof(h);
    if (t === "object" && ctx.sameValue(h, ctx.null)) return {};
    if (t !== "object" && t !== "function") {
      if (t === "undefined") return {};
      const d = ctx.dump(h);
      return d === null ? {} : { stack: typeof d === "string" ? JSON.stringify(d) : String(d) };
    }
    const field = (key: string): string | undefined => {
      const v = ctx.getProp(h, key);
      try {
        return ctx.typeof(v) === "string" ? ctx.getString(v) : undefined;
      } finally {
        v.dispose();
      }
    };
    const out: { name?: string; message?: string; stack?: string; code?: string } = {};
    const code = field("code");
    // a tool's error code (e.g. no_human_surface) is kept so the model sees why the call failed
    if (code !== undefined && /^[a-z][a-z0-9_]{0,63}$/.test(code)) out.code = code;
    const name = field("name");
    const message = field("message");
    const stack = field("stack");
    if (name !== undefined) out.name = name;
    if (message !== undefined) out.message = message;
    if (stack !== undefined) out.stack = stack;
    if (name === undefined && message === undefined) out.message = "[object]";
    return out;
  } catch (e) {
    // a getter of the thrown value overflowed the host's stack: never read as a value without fields (its run records it)
    if (isHostStackOverflow(e)) throw e;
    return {};
  }
}
