/**
 * @module script/direct
 * The three QuickJS operations a tool call repeats — deliver a reply (`deliver(text)`), run the guest's pending jobs,
 * take the calls it made (`take()`) — called through quickjs-emscripten's FFI instead of its handle API, which wraps
 * every crossing in handle, scope and pointer-array objects (most of a call's QuickJS cost: docs/performance.md,
 * "script p99 and the raw bridge"). It reads three fields the library marks protected (the context and runtime
 * pointers, the emscripten module) and uses `getFFI()`, public but marked unstable: `DirectCalls.for` returns null
 * when any of them is not as expected, and the caller keeps the handle API. The library version is pinned
 * (package-lock.json); the script tests run both QuickJS paths' behaviour through this one.
 */
import type { QuickJSContext, QuickJSHandle, QuickJSRuntime, QuickJSWASMModule } from "quickjs-emscripten-core";

type Ptr = number;
interface Emscripten {
  _malloc(n: number): Ptr;
  _free(p: Ptr): void;
  HEAPU8: Uint8Array;
  lengthBytesUTF8(s: string): number;
  stringToUTF8(s: string, p: Ptr, max: number): void;
  UTF8ToString(p: Ptr): string;
}
interface Ffi {
  QTS_NewString(ctx: Ptr, s: Ptr): Ptr;
  QTS_Call(ctx: Ptr, fn: Ptr, self: Ptr, argc: number, argv: Ptr): Ptr;
  QTS_ResolveException(ctx: Ptr, v: Ptr): Ptr;
  QTS_FreeValuePointer(ctx: Ptr, v: Ptr): void;
  QTS_FreeValuePointerRuntime(rt: Ptr, v: Ptr): void;
  QTS_ExecutePendingJob(rt: Ptr, max: number, ctxOut: Ptr): Ptr;
  QTS_Typeof(ctx: Ptr, v: Ptr): Ptr;
  QTS_GetString(ctx: Ptr, v: Ptr): Ptr;
  QTS_FreeCString(ctx: Ptr, s: Ptr): void;
}

const utf8 = new TextEncoder();
/** Decodes as emscripten's `UTF8ToString` does (an invalid sequence becomes U+FFFD, never an error). */
const utf8Text = new TextDecoder("utf-8");

/** What a direct call returned: `ok`, or a guest exception as a handle the caller owns (and disposes). */
export type DirectResult<T> = { ok: true; value: T } | { ok: false; error: QuickJSHandle };

/** One script's direct path into its context. `free()` once the script ends (before its context is disposed). */
export class DirectCalls {
  /** 8 bytes of the module's heap: the argv slot of `deliver` and the context-out slot of the job runner. */
  #scratch: Ptr;

  private constructor(
    private readonly em: Emscripten,
    private readonly ffi: Ffi,
    private readonly ctxp: Ptr,
    private readonly rtp: Ptr,
    private readonly undef: Ptr,
    private readonly wrap: (p: Ptr) => QuickJSHandle,
  ) {
    this.#scratch = em._malloc(8);
  }

  /** The direct path for `ctx` (of `rt`, on `mod`), or null when the library's internals are not as this module expects. */
  static for(mod: QuickJSWASMModule, rt: QuickJSRuntime, ctx: QuickJSContext): DirectCalls | null {
    try {
      const em = (mod as unknown as { module?: Partial<Emscripten> }).module;
      const ffi = mod.getFFI() as unknown as Partial<Ffi>;
      const ctxp = (ctx as unknown as { ctx?: { value?: unknown } }).ctx?.value;
      const rtp = (rt as unknown as { rt?: { value?: unknown } }).rt?.value;
      const memory = (ctx as unknown as { memory?: { heapValueHandle?: unknown } }).memory;
      if (!em || typeof em._malloc !== "function" || typeof em._free !== "function" || !(em.HEAPU8 instanceof Uint8Array)) return null;
      if (typeof em.lengthBytesUTF8 !== "function" || typeof em.stringToUTF8 !== "function" || typeof em.UTF8ToString !== "function") return null;
      for (const f of ["QTS_NewString", "QTS_Call", "QTS_ResolveException", "QTS_FreeValuePointer", "QTS_FreeValuePointerRuntime", "QTS_ExecutePendingJob", "QTS_Typeof", "QTS_GetString", "QTS_FreeCString"] as const) {
        if (typeof ffi[f] !== "function") return null;
      }
      if (typeof ctxp !== "number" || typeof rtp !== "number" || !memory || typeof memory.heapValueHandle !== "function") return null;
      const heapValueHandle = memory.heapValueHandle as (p: Ptr) => QuickJSHandle;
      return new DirectCalls(em as Emscripten, ffi as Ffi, ctxp, rtp, ctx.undefined.value as unknown as Ptr, (p) => heapValueHandle.call(memory, p));
    } catch {
      return null;
    }
  }

  /**
   * `fn(text)` for a guest function `fn` (a handle the caller keeps alive), the result dropped; `"no-memory"` when the
   * module's heap has no room for `text`'s UTF-8 copy (nothing was called).
   */
  callWithString(fn: QuickJSHandle, text: string): DirectResult<void> | "no-memory" {
    const { em } = this;
    // UTF-8 is at most 3 bytes per UTF-16 unit: a short text gets that bound (no count), a long one its exact length
    const n = (text.length <= 4096 ? text.length * 3 : Buffer.byteLength(text, "utf8")) + 1;
    const chars = em._malloc(n);
    if (chars === 0) return "no-memory";
    const heap = em.HEAPU8; // read after the malloc, which may grow the memory (and replace the view)
    const { written } = utf8.encodeInto(text, heap.subarray(chars, chars + n - 1));
    heap[chars + written] = 0;
    return this.#callWithChars(fn, chars);
  }

  /** `fn(the C string at chars)`, which it frees. */
  #callWithChars(fn: QuickJSHandle, chars: Ptr): DirectResult<void> {
    const { em, ffi, ctxp } = this;
    const str = ffi.QTS_NewString(ctxp, chars);
    em._free(chars);
    putU32(em.HEAPU8, this.#scratch, str);
    const res = ffi.QTS_Call(ctxp, fn.value as unknown as Ptr, this.undef, 1, this.#scratch);
    ffi.QTS_FreeValuePointer(ctxp, str);
    return this.#result(res, () => undefined);
  }

  /**
   * `fn(head + text + tail)` for a guest function `fn` (a handle the caller keeps alive), the result dropped: `head`
   * and `tail` ASCII, `text` UTF-8 bytes copied into the guest's memory as they are (no string made on this side);
   * `"no-memory"` when the module's heap has no room for them (nothing was called).
   */
  callWithUtf8(fn: QuickJSHandle, head: string, text: Uint8Array, tail: string): DirectResult<void> | "no-memory" {
    const { em, ffi, ctxp } = this;
    const n = head.length + text.length + tail.length;
    const chars = em._malloc(n + 1);
    if (chars === 0) return "no-memory";
    const heap = em.HEAPU8; // read after the malloc, which may grow the memory (and replace the view)
    let at = chars;
    for (let i = 0; i < head.length; i++) heap[at++] = head.charCodeAt(i);
    heap.set(text, at);
    at += text.length;
    for (let i = 0; i < tail.length; i++) heap[at++] = tail.charCodeAt(i);
    heap[at] = 0;
    return this.#callWithChars(fn, chars);
  }

  /**
   * `fn()` for a guest function `fn` that returns a string (the bridge's `take`); `"no-memory"` when QuickJS could not
   * copy the string out (the guest's memory is full; what `fn` returned is lost).
   */
  callForString(fn: QuickJSHandle): DirectResult<string> | "no-memory" {
    const { em, ffi, ctxp } = this;
    const res = ffi.QTS_Call(ctxp, fn.value as unknown as Ptr, this.undef, 0, 0);
    const err = ffi.QTS_ResolveException(ctxp, res);
    if (err) {
      ffi.QTS_FreeValuePointer(ctxp, res);
      return { ok: false, error: this.wrap(err) };
    }
    try {
      const chars = ffi.QTS_GetString(ctxp, res);
      if (chars === 0) return "no-memory";
      try {
        const heap = em.HEAPU8;
        const end = heap.indexOf(0, chars); // the C string's NUL (a native scan, where UTF8ToString loops in JS)
        return { ok: true, value: end < 0 ? em.UTF8ToString(chars) : utf8Text.decode(heap.subarray(chars, end)) };
      } finally {
        ffi.QTS_FreeCString(ctxp, chars);
      }
    } finally {
      ffi.QTS_FreeValuePointer(ctxp, res);
    }
  }

  /** Runs every pending job of the runtime; the exception that stopped them, if any (as `rt.executePendingJobs()`). */
  runJobs(): DirectResult<void> {
    const { em, ffi, ctxp, rtp } = this;
    const out = this.#scratch + 4;
    putU32(em.HEAPU8, out, 0);
    const res = ffi.QTS_ExecutePendingJob(rtp, -1, out);
    const jobCtx = getU32(em.HEAPU8, out);
    if (jobCtx === 0) {
      ffi.QTS_FreeValuePointerRuntime(rtp, res);
      return { ok: true, value: undefined };
    }
    if (jobCtx !== ctxp) {
      ffi.QTS_FreeValuePointerRuntime(rtp, res);
      throw new Error("a job ran in a context the script does not own");
    }
    // the job count (a number) when every job ran, else the exception that stopped them; of the C strings `typeof`
    // gives, only "number" begins with "n"
    const type = ffi.QTS_Typeof(ctxp, res);
    const isNumber = type !== 0 && em.HEAPU8[type] === 0x6e;
    em._free(type);
    if (isNumber) {
      ffi.QTS_FreeValuePointer(ctxp, res);
      return { ok: true, value: undefined };
    }
    return { ok: false, error: this.wrap(res) };
  }

  /** Frees the scratch slots. Idempotent. */
  free(): void {
    if (this.#scratch === 0) return;
    this.em._free(this.#scratch);
    this.#scratch = 0;
  }

  #result<T>(res: Ptr, read: (v: Ptr) => T): DirectResult<T> {
    const { ffi, ctxp } = this;
    const err = ffi.QTS_ResolveException(ctxp, res);
    if (err) {
      ffi.QTS_FreeValuePointer(ctxp, res);
      return { ok: false, error: this.wrap(err) };
    }
    try {
      return { ok: true, value: read(res) };
    } finally {
      ffi.QTS_FreeValuePointer(ctxp, res);
    }
  }
}

/** Writes `v` as a little-endian u32 at `p` (WASM is little-endian; the module exports no 32-bit heap view). `HEAPU8` is read at each call: it is replaced when the memory grows. */
function putU32(heap: Uint8Array, p: Ptr, v: number): void {
  heap[p] = v & 0xff;
  heap[p + 1] = (v >>> 8) & 0xff;
  heap[p + 2] = (v >>> 16) & 0xff;
  heap[p + 3] = (v >>> 24) & 0xff;
}

function getU32(heap: Uint8Array, p: Ptr): number {
  return (heap[p]! | (heap[p + 1]! << 8) | (heap[p + 2]! << 16) | (heap[p + 3]! << 24)) >>> 0;
}
