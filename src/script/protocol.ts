/**
 * @module script/protocol
 * The messages between the script pool (main thread) and a sandbox worker, as zod schemas.
 * A task goes in through tinypool; tool calls (worker → host) travel on a per-script MessagePort, the host's
 * messages (`go`, `reply`, cancel) on a per-script shared-memory channel (script/channel.ts encodes them there);
 * the script's outcome comes back as the task's return value. Everything is plain data.
 */
import { z } from "zod";
import type { ErrorCode } from "../errors.ts";

/**
 * The outcome of one tool call as the model and scripts see it: plain JSON data. Defined here, the lowest
 * room that carries it (a script's `tools.NAME()` resolves to it); `src/tool/tool.ts` re-exports it.
 */
export type ToolOutcome =
  | { ok: true; result: unknown }
  | { ok: false; error: { code: ErrorCode; message: string } & Record<string, unknown> };

/** Limits of one script (ms, counts, bytes). Mirrors config `limits.script_*`. */
export const ScriptLimits = z.strictObject({
  /** CPU deadline, ms: time the guest actually runs (waiting on tools does not count). */
  cpuTimeoutMs: z.number().int().positive(),
  /** Wall-clock deadline, ms, from the start of the script (waiting on tools counts). */
  wallTimeoutMs: z.number().int().positive(),
  /** Tool calls the script may make; call number `maxToolCalls + 1` ends it. */
  maxToolCalls: z.number().int().nonnegative(),
  /** Captured `console.*` output, UTF-8 bytes. */
  maxLogBytes: z.number().int().nonnegative(),
  /** JSON text of the script's return value, UTF-8 bytes. */
  maxResultBytes: z.number().int().nonnegative(),
});
export type ScriptLimits = z.infer<typeof ScriptLimits>;

/**
 * The largest QuickJS stack limit a script may have, KiB. QuickJS counts its limit on emscripten's stack, which the
 * QuickJS build fixes at 5 MiB: a limit past it (measured: 5,376 KiB and up) made every script end `internal`, even
 * `return 1`, as QuickJS's limit then lay outside the stack it guards. 4 MiB leaves room below it; at this size the
 * worker thread's own stack runs out first anyway (script/vm.ts `isHostStackOverflow`).
 */
export const MAX_STACK_KB = 4096;

/** Per-worker settings, fixed when the pool starts (tinypool `workerData`). */
export const WorkerSettings = z.strictObject({
  /** Each script's memory limit, MiB (its own WASM instance; nothing shared with other scripts). */
  memoryMb: z.number().int().min(8).max(2048),
  /** QuickJS stack size per script, KiB (at most `MAX_STACK_KB`). */
  stackKb: z.number().int().min(16).max(MAX_STACK_KB),
});
export type WorkerSettings = z.infer<typeof WorkerSettings>;

/** Slots of the per-script shared meter (defined in script/meter.ts, which a worker loads without zod). */
export { METER } from "./meter.ts";

/**
 * The tinypool task: one script. `port` is transferred; `meter` and `channel` are shared. The QuickJS WASM module
 * is not in it: the pool compiles it once before it starts its threads and hands it to each in its `workerData`
 * (cloning a module into every task cost each script ~20 µs).
 */
export const ScriptTask = z.strictObject({
  code: z.string(),
  limits: ScriptLimits,
  port: z.custom<MessagePort>((v) => typeof v === "object" && v !== null && "postMessage" in v),
  meter: z.instanceof(SharedArrayBuffer),
  /** The script's shared-memory channel (script/channel.ts): every host → worker message (`go`, `reply`, the cancel word). */
  channel: z.instanceof(SharedArrayBuffer),
  /**
   * The host gave the script its first run slot with the task (an idle thread and a free slot were there when it
   * was sent): the worker starts it at once, with no `ready` / `go` round trip. Otherwise the worker sends `ready`
   * and waits for `go`.
   */
  go: z.boolean(),
});
export type ScriptTask = z.infer<typeof ScriptTask>;

/** Worker → host on the script's port: the guest called `tools[name](args)`; `args` is JSON text. */
export const CallRequest = z.strictObject({
  t: z.literal("call"),
  id: z.number().int().positive(),
  name: z.string(),
  args: z.string(),
});
export type CallRequest = z.infer<typeof CallRequest>;

/**
 * One message the worker sends on a script's port, as {@link WorkerBatch} carries it (no schema: the pool reads the
 * batch by hand): a `call` ({@link CallRequest}); `ready` — the task reached its thread and waits for `go` (its first
 * run slot) before it runs any guest code, not sent for a task that came with its slot (`ScriptTask.go`); `yield` — the
 * guest slice the last `go` or `reply` started has ended and the script now waits on tools, so the host takes back that
 * run slot (sent once per `go`/`reply`, unless the script ended in it).
 */
export type WorkerMessage = CallRequest | { t: "ready" } | { t: "yield" };

/**
 * What the worker posts on a script's port: one string carrying `WorkerMessage`s in order. Its first character is
 * the kind (script/channel.ts `UP_CALLS` `c`: calls of a slice still running; `UP_YIELD` `y`: a slice's last calls,
 * then its `yield`; `UP_READY` `r`: `ready`, alone), the calls follow as batch records (script/bridge.ts
 * `parseBatch`: `ID:ARGS_LENGTH:NAME_LENGTH:` + the name's JSON text + the arguments' JSON text). A guest slice's
 * calls and its `yield` travel as one message (sent when the slice ends), so a sequential tool call costs two thread
 * crossings instead of three, and the arguments cross without being escaped into JSON text again. The pool reads
 * it by hand on this hot path (bounds-checked slicing, the same rules as `CallRequest`); a message it cannot read
 * is dropped whole.
 */
export const WorkerBatch = z.string().regex(/^(?:r|[cy][\s\S]*)$/);
export type WorkerBatch = z.infer<typeof WorkerBatch>;

/**
 * Host → worker: the answer to call `id`. `payload` is the JSON text the guest parses:
 * `{ok: true, result}` or `{ok: false, error: {name, code, message}}`.
 */
export const CallReply = z.strictObject({ t: z.literal("reply"), id: z.number().int().positive(), payload: z.string() });
export type CallReply = z.infer<typeof CallReply>;

/** Host → worker: stop the script now (the caller's AbortSignal fired). On the channel it is the cancel word, not a frame. */
export const CancelScript = z.strictObject({ t: z.literal("cancel") });

/** Host → worker: start the script (the host gave it a run slot). A `reply` is a run slot too. */
export const StartScript = z.strictObject({ t: z.literal("go") });

export const HostMessage = z.discriminatedUnion("t", [CallReply, CancelScript, StartScript]);
export type HostMessage = z.infer<typeof HostMessage>;

/** Codes a script can end with (a subset of src/errors.ts ERROR_CODES). */
export const ScriptErrorCode = z.enum([
  "script_timeout",
  "script_memory_limit",
  "script_stack_overflow",
  "script_too_many_calls",
  "script_output_too_large",
  "script_error",
  "script_result_invalid",
  "cancelled",
  "internal",
]);
export type ScriptErrorCode = z.infer<typeof ScriptErrorCode>;

export const ScriptFailure = z.strictObject({
  code: ScriptErrorCode,
  message: z.string(),
  stack: z.string().optional(),
});
export type ScriptFailure = z.infer<typeof ScriptFailure>;

/**
 * Worker → host: the task's return value. `json` is the return value as JSON text (absent for
 * `undefined`). A failed QuickJS instance is dropped by the worker itself (script/instances.ts), so the
 * worker stays usable after any outcome.
 */
export const WorkerOutcome = z.discriminatedUnion("ok", [
  z.strictObject({ ok: z.literal(true), json: z.string().optional(), logs: z.array(z.string()), calls: z.number().int() }),
  z.strictObject({ ok: z.literal(false), error: ScriptFailure, logs: z.array(z.string()), calls: z.number().int() }),
]);
export type WorkerOutcome = z.infer<typeof WorkerOutcome>;
