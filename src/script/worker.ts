/**
 * @module script/worker
 * The sandbox worker entry (a tinypool task module). Instantiates the QuickJS WASM module the pool
 * compiled (singlefile sync variant) and gives each script its own module *instance* with its own
 * capped `WebAssembly.Memory` (script/instances.ts): a script's memory, or a QuickJS abort, touches
 * only that script. The pool sends a worker one script at a time (script/pool.ts), so a script stuck in
 * a native call blocks only its own thread; the code here still copes with several. After each script
 * the thread prepares the next one's fresh runtime and context while idle (vm.ts `PreparedGuest`), so
 * a script only evaluates its own code; once it can, the thread instead keeps one guest as a snapshot whose memory is
 * written back after each script (script/snapshot.ts), so a script neither waits for nor is followed by a guest's
 * making. While a script waits on tools the thread blocks on the script's
 * shared-memory channel (script/channel.ts), which brings the host's replies and cancel; its calls go on the port.
 */
import { threadId, type MessagePort } from "node:worker_threads";
import Tinypool from "tinypool";
import { Instances, type CompiledQuickJS, type Instance } from "./instances.ts";
import { assertNever } from "../errors.ts";
import { METER } from "./meter.ts";
// Types only: protocol.ts's zod schemas would cost each thread ~3 MB and ~100 ms to load. The pool (main
// thread) validates what it sends with them; the checks below only keep a malformed message out.
import type { ScriptLimits, WorkerOutcome, WorkerSettings } from "./protocol.ts";
import { prepareGuest, ScriptRun, type PreparedGuest } from "./vm.ts";
import { UP_CALLS, UP_READY, UP_YIELD, WorkerChannel } from "./channel.ts";
import { batchRecord, mentionsTools } from "./bridge.ts";
import { GuestSnapshot } from "./snapshot.ts";
import type { MemoryLayout } from "../side/quickjs-layout.ts";

/** Calls sent in one message at most: a slice's calls go out when it ends or when this many wait. */
const BATCH_MAX = 32;

const settings = parseSettings(Tinypool.workerData ?? { memoryMb: 64, stackKb: 512 });
/** Made at the first task, from the module the pool compiled (a worker does not compile QuickJS itself). */
let instances: Promise<Instances> | undefined;
/**
 * The next script's guest, made while this thread is idle (after a script's outcome is sent): a fresh
 * runtime and context on an instance of its own, never used, so the next script skips their creation.
 */
let ready: { inst: Instance; guest: PreparedGuest } | undefined;
let preparing = false;
/**
 * This thread's guest kept as a snapshot (script/snapshot.ts), made when the thread is first idle: each script runs in
 * it and it is restored after each (`afterOutcome`); dropped (and made again) when a script leaves its instance unfit.
 */
let snapshot: GuestSnapshot | undefined;
/** Set once this thread could not take a snapshot (an unknown build): its scripts get a guest made afresh, as before. */
let snapshotsOff = false;
/**
 * This thread's counts so far: `ahead`, scripts that started on a guest made before they came (`ready`); `inTask`,
 * scripts that made their own inside their task; `releasedInTask`, guests freed at the start of the next script's task
 * instead of just after their own script's outcome; `restored`, scripts that ran in the thread's snapshot (`snapshot`).
 * Diagnostics (test/fixtures/counting-script-worker.ts).
 */
export const guestCounts = { ahead: 0, inTask: 0, releasedInTask: 0, restored: 0 };
/**
 * Whether the last script on this thread named `tools` (bridge.ts `mentionsTools`): the next guest made while idle then
 * gets the bridge in one piece, else its core alone (`prepareGuest`'s `whole`; a thread's scripts tend to be alike).
 */
let lastNamedTools = false;

/**
 * The last script's disposal, not yet done: its guest freed and its instance given back (`ScriptRun.release`). It runs
 * just after that script's outcome has left (`afterOutcome`), or first thing in the next task should that come sooner.
 */
let unreleased: (() => void) | undefined;

/** Runs the pending disposal, if any. */
function releaseNow(): void {
  const f = unreleased;
  unreleased = undefined;
  f?.();
}

/**
 * Queued by a task as its last synchronous step: once the task's outcome has left the thread, closes the script's
 * port, frees the guest of the script that just ended, then has the next guest made when the thread is idle
 * (`prepareWhenIdle`). The script has ended: no guest code runs between its end and this.
 *
 * `process.nextTick`: tinypool posts the outcome in the promise job that follows the task's return (its
 * `await handler(task)`), and the tick queue runs after those jobs and before the thread takes its next message. So
 * the disposal (≈ 75 µs) runs between the outcome's post and the next task, never inside it. A `setImmediate` (as
 * before) ran in Bun ≈ 0.1–0.2 ms after the return, after the next task's message when the next script came at once:
 * in a stream of scripts most tasks began by freeing the last script's guest. The port's `close()` is here too: in Bun it
 * took ≈ 13 µs in the median but over 0.5 ms for 2–3 % of scripts (up to 9 ms), and in the task that was on the
 * script's path (docs/performance.md, "twelfth session").
 */
function afterOutcome(pool: Instances, port: MessagePort): void {
  process.nextTick(() => {
    try {
      port.close();
    } catch {
      // nothing is sent on it any more whatever happened; the host closes its end when the outcome arrives
    }
    releaseNow();
    prepareWhenIdle(pool);
  });
}

/**
 * Makes `ready` when this thread is idle, unless it exists or is being made. A `setImmediate`: Bun ran it ≈ 0.1–0.2 ms
 * (up to 0.6 ms) after the task's return, and a task whose message was there by then ran first. So a script that comes
 * at once is mostly not made to wait behind a preparation (≈ 250–450 µs, the bridge's compile most of it) for a guest
 * it could make itself in the same time; it makes its own in its task, and the preparation runs after it. A thread
 * idle between scripts (the usual case: a model turn between them) has the guest ready. Preparing at once in the tick
 * instead was measured slower in a stream at load 6–9 on 2 cores (median p99 6.8 against 4.9 ms over 11 alternated
 * rounds): the preparation then ran while the host woke up for the outcome, on the same cores (docs/performance.md,
 * "twelfth session").
 */
function prepareWhenIdle(pool: Instances): void {
  if (ready || preparing || snapshot) return;
  preparing = true;
  setImmediate(() => {
    void (async () => {
      try {
        releaseNow(); // normally done already (`afterOutcome`)
        if (ready || snapshot) return;
        if (!snapshotsOff && pool.layout) {
          // a snapshot needs an instance no script has used, and the bridge in one piece (it serves every script)
          const inst = await pool.fresh();
          const guest = prepareGuest(inst.module, settings.memoryMb * 2 ** 20, settings.stackKb * 1024, true);
          const snap = GuestSnapshot.take(inst, guest, pool.layout);
          if (snap) snapshot = snap;
          else {
            snapshotsOff = true;
            ready = { inst, guest };
          }
          return;
        }
        const inst = await pool.take();
        try {
          ready = { inst, guest: prepareGuest(inst.module, settings.memoryMb * 2 ** 20, settings.stackKb * 1024, lastNamedTools) };
        } catch {
          // a broken instance: dropped (never given back); the next script makes its own guest
        }
      } catch {
        // no instance or guest could be made now (a broken one is dropped); the next script tries itself
      } finally {
        preparing = false;
      }
    })();
  });
}

/**
 * Runs one script task to its end, on an instance of its own. Never throws for guest behaviour:
 * limits and guest errors are `{ok: false, error}` outcomes. A failed instance is dropped here (it
 * never reaches another script): the worker itself stays fine.
 */
export default async function runScriptTask(raw: unknown): Promise<WorkerOutcome> {
  const task = parseTask(raw);
  lastNamedTools = mentionsTools(task.code);
  const meter = new Float64Array(task.meter);
  meter[METER.threadId] = threadId;
  const port = task.port;
  const channel = new WorkerChannel(task.channel);
  // Calls a guest slice makes go out on the port together with the slice's end, in one message (protocol.ts
  // `WorkerBatch`: one string, the calls as batch records): a sequential call then costs one port crossing and one
  // channel wake-up. Declared before the run: `flush` is called from the run's `post`.
  let outCalls = "";
  let outCount = 0;
  /** The last name's JSON text (a script mostly calls a few tools). */
  let lastName = "";
  let lastNameJson = '""';
  /** Sends the calls waiting, then `yield` when `sliceEnded` (the script waits on tools again); nothing when neither. */
  const flush = (sliceEnded: boolean): void => {
    if (outCount === 0 && !sliceEnded) return;
    port.postMessage((sliceEnded ? UP_YIELD : UP_CALLS) + outCalls);
    outCalls = "";
    outCount = 0;
  };
  if (unreleased) guestCounts.releasedInTask++;
  releaseNow();
  instances ??= Instances.create(settings.memoryMb, settings.wasm);
  const pool = await instances;
  let inst: Instance;
  let prepared: PreparedGuest | undefined;
  /** The snapshot this script runs in, restored after it; undefined: a guest of its own, freed after it. */
  let lent: GuestSnapshot | undefined;
  if (snapshot?.available) {
    lent = snapshot;
    prepared = lent.lend();
    inst = lent.inst;
    guestCounts.restored++;
  } else if (ready) {
    ({ inst, guest: prepared } = ready);
    ready = undefined;
    guestCounts.ahead++;
  } else {
    inst = await pool.take();
    guestCounts.inTask++;
  }
  const run = new ScriptRun(inst.module, {
    code: task.code,
    limits: task.limits,
    memoryBytes: settings.memoryMb * 2 ** 20,
    stackBytes: settings.stackKb * 1024,
    meter,
    memoryExhausted: (wantBytes) => inst.exhausted(wantBytes),
    memoryWallHit: () => inst.atWall(),
    cancelRequested: () => channel.cancelled,
    releaseLater: true,
    post: (msg) => {
      if (msg.name !== lastName) {
        lastName = msg.name;
        lastNameJson = JSON.stringify(msg.name);
      }
      outCalls += batchRecord(msg.id, lastNameJson, msg.args);
      // A slice making many calls (a `Promise.all`) sends them on in batches, so the host serves them while the guest goes on.
      if (++outCount >= BATCH_MAX) flush(false);
    },
  });
  // Guest code runs only in a run slot the host gave: `go` or the task itself (the start), or a `reply`. Each ends with
  // `yield` (the script waits on tools again) unless the script ended in it.
  let started = false;
  /** Ends a slice this thread was given a run slot for: `yield` unless the script ended in it, then everything queued goes out. */
  const sliceDone = (): void => flush(!run.finished);
  if (channel.cancelled) run.cancel();
  else if (task.go) {
    // the task came with its first run slot: start now (no `ready` / `go` round trip between the threads)
    started = true;
    run.start(prepared);
    sliceDone();
  } else port.postMessage(UP_READY);
  // Between slices the thread blocks on the channel until the host answers, cancels, or the wall-clock deadline
  // passes (its timer cannot fire in a blocked thread, hence `checkDeadline`). One script per thread: nothing
  // else waits for this thread's event loop meanwhile, and `terminate()` still ends a blocked thread.
  while (!run.finished) {
    const left = run.wallLeftMs;
    if (left <= 0) {
      run.checkDeadline();
      continue;
    }
    const got = channel.wait(left + 1);
    switch (got.t) {
      case "cancel":
        run.cancel();
        break;
      case "timeout":
        break;
      case "messages":
        for (const m of got.msgs) {
          switch (m.t) {
            case "go":
              if (!started) {
                started = true;
                run.start(prepared);
              }
              break;
            case "reply":
              run.reply(m.id, m.payload);
              break;
            default:
              assertNever(m, "host message");
          }
          sliceDone();
        }
        break;
      default:
        assertNever(got, "channel wait");
    }
  }
  const { fatal, ...outcome } = await run.done;
  flush(false);
  // the outcome leaves first; the port is closed and the guest freed just after (`afterOutcome`), and the instance
  // goes back only when that freeing succeeded
  releaseNow();
  unreleased = () => {
    if (lent) {
      // the snapshot's memory is written back; one the script left unfit is dropped, and the next is made when idle
      if (!(run.release() && !fatal && lent.restore()) && snapshot === lent) snapshot = undefined;
      return;
    }
    let clean = run.release() && !fatal;
    try {
      prepared?.dispose(); // the script ended before it started (cancelled, timed out): its unused guest
    } catch {
      clean = false;
    }
    pool.give(inst, clean);
  };
  afterOutcome(pool, port);
  return outcome;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null;
}

function isInt(v: unknown, min: number): v is number {
  return Number.isInteger(v) && (v as number) >= min;
}

/**
 * The pool's `workerData`: protocol.ts's `WorkerSettings` (checked like it), the QuickJS module the pool compiled
 * (`wasm`; without it this thread compiles its own) and its memory layout (`layout`). @throws Error when malformed (the worker cannot start).
 */
function parseSettings(v: unknown): WorkerSettings & { wasm?: CompiledQuickJS } {
  if (isObject(v) && isInt(v.memoryMb, 8) && (v.memoryMb as number) <= 2048 && isInt(v.stackKb, 16) && (v.wasm === undefined || v.wasm instanceof WebAssembly.Module)) {
    return { memoryMb: v.memoryMb as number, stackKb: v.stackKb as number, ...(v.wasm ? { wasm: { module: v.wasm as WebAssembly.Module, layout: parseLayout(v.layout) } } : {}) };
  }
  throw new Error("the sandbox worker's settings are malformed");
}

/** The pool's memory layout of its QuickJS build (side/quickjs-layout.ts), or null when absent or not whole (no snapshots). */
function parseLayout(v: unknown): MemoryLayout | null {
  if (!isObject(v) || !isInt(v.staticEnd, 1) || !isInt(v.heapBase, 1) || !isInt(v.breakAt, 0)) return null;
  return { staticEnd: v.staticEnd as number, heapBase: v.heapBase as number, breakAt: v.breakAt as number };
}

/** One task from the pool (shaped like protocol.ts's `ScriptTask`). @throws Error when malformed (the script fails `script_worker_lost`). */
function parseTask(v: unknown): { code: string; limits: ScriptLimits; port: MessagePort; meter: SharedArrayBuffer; channel: SharedArrayBuffer; go: boolean } {
  if (!isObject(v) || typeof v.code !== "string" || !(v.meter instanceof SharedArrayBuffer) || !(v.channel instanceof SharedArrayBuffer) || typeof v.go !== "boolean") throw new Error("the script task is malformed");
  const l = v.limits;
  if (!isObject(l) || !isInt(l.cpuTimeoutMs, 1) || !isInt(l.wallTimeoutMs, 1) || !isInt(l.maxToolCalls, 0) || !isInt(l.maxLogBytes, 0) || !isInt(l.maxResultBytes, 0)) throw new Error("the script task's limits are malformed");
  if (!isObject(v.port) || typeof v.port.postMessage !== "function") throw new Error("the script task has no port");
  const limits: ScriptLimits = { cpuTimeoutMs: l.cpuTimeoutMs, wallTimeoutMs: l.wallTimeoutMs, maxToolCalls: l.maxToolCalls, maxLogBytes: l.maxLogBytes, maxResultBytes: l.maxResultBytes };
  return { code: v.code, limits, port: v.port as unknown as MessagePort, meter: v.meter, channel: v.channel, go: v.go };
}
