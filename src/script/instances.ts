/**
 * @module script/instances
 * QuickJS WASM module instances for one sandbox worker, one per running script (the pool runs one
 * script per worker thread at a time). The WASM code is compiled once per pool, on the main thread
 * (`compileQuickJS`), and handed to each worker; each instance has its own `WebAssembly.Memory`
 * (capped), so a script's memory is its own and a QuickJS abort (e.g. an assertion in `JS_FreeRuntime`) kills only the
 * instance it happened in. Instances whose runtime was freed cleanly are kept for reuse (a few, and
 * only small ones); any other instance is dropped and left to the garbage collector.
 */
import variant from "@jitl/quickjs-singlefile-mjs-release-sync";
import { newQuickJSWASMModuleFromVariant, newVariant, type CustomizeVariantOptions, type QuickJSWASMModule } from "quickjs-emscripten-core";
import { quickjsWasm } from "../side/modules.ts";
import { memoryLayout, type MemoryLayout } from "../side/quickjs-layout.ts";

const PAGE = 65536;
/** Pages the QuickJS build declares as its initial memory (16 MiB); an instance's memory starts there. */
const INITIAL_PAGES = 256;
/** Room above the script's malloc limit for the module's own data and C stack, pages (16 MiB). */
const HEADROOM_PAGES = 256;
/**
 * The most pages an instance's memory may be capped at: 2 GiB less 16 MiB. The QuickJS build declares a 2 GiB maximum
 * (32768 pages): a memory capped above it fails to instantiate (every script then ended `script_worker_lost` at
 * `limits.script_memory_mb` 2033..2048), and emscripten's heap resize refuses a size past 2 GiB without trying to grow
 * the memory, so near 2 GiB a failed allocation would never reach the wall check (`atWall`). 16 MiB below it, an
 * allocation of up to 16 MiB at a full heap still tries (and fails) to grow.
 */
const MAX_CAP_PAGES = 32768 - HEADROOM_PAGES;
/**
 * An instance's memory counts as exhausted within 1/this of its cap: emscripten's heap resize grows the memory by at
 * least 5% of its size at a time (its smallest over-growth step, which it asks for even for a small allocation), so a
 * heap whose next growth cannot fit stops up to ~4.8% below the cap and QuickJS then fails there. (QuickJS's own malloc
 * limit does not catch it first: on emscripten its counter adds 8 bytes per allocation, not the allocation's size.)
 */
const GROWTH_SLACK_DIVISOR = 16;
/** Idle instances kept for reuse per worker. */
const IDLE_MAX = 4;
/** An instance whose memory grew past this is dropped after its script, not reused (bytes). */
export const REUSE_MAX_BYTES = 32 * 2 ** 20;

/** One QuickJS module instance and its memory. */
export interface Instance {
  readonly module: QuickJSWASMModule;
  readonly memory: WebAssembly.Memory;
  /**
   * True when the memory cannot be relied on to grow by `wantBytes` (default 0: it has reached its cap, within the last
   * growth step, `GROWTH_SLACK_DIVISOR`); a guest failure that QuickJS makes out of a failed allocation then means out of memory.
   */
  exhausted(wantBytes?: number): boolean;
  /**
   * True when the latest attempt to grow the memory failed: an allocation QuickJS asked for could not be had for want of
   * memory (a later growth that succeeds clears it). Read by the script's interrupt handler: a guest that hit the wall
   * ends `script_memory_limit` at its next check, whether or not it caught the error.
   */
  atWall(): boolean;
}

/** The instances of one worker. Create with `await Instances.create(memoryMb)`. */
export class Instances {
  readonly #idle: Instance[] = [];
  /** Instances created so far (diagnostics and benchmarks). */
  created = 0;

  private constructor(
    /** The compiled QuickJS WASM module these instances are made from. */
    readonly compiled: WebAssembly.Module,
    /** Where static data, stack and heap lie in an instance's memory (side/quickjs-layout.ts); null: unknown for this build. */
    readonly layout: MemoryLayout | null,
    private readonly maxPages: number,
    first: Instance,
  ) {
    this.#idle.push(first);
    this.created = 1;
  }

  /**
   * The instances of one worker, with a first instance made. `memoryMb` is the per-script malloc limit,
   * MiB; each instance's memory is capped at `memoryMb` + 16 MiB (at least 16 MiB, at most 2032 MiB: `MAX_CAP_PAGES`). `compiled`: the
   * module from `compileQuickJS()` (another thread's is fine) and its layout; without it, the WASM is compiled here.
   * @throws Error when the WASM module cannot be compiled or instantiated (the worker cannot start).
   */
  static async create(memoryMb: number, compiled?: CompiledQuickJS): Promise<Instances> {
    const maxPages = Math.min(MAX_CAP_PAGES, Math.max(INITIAL_PAGES, memoryMb * 16 + HEADROOM_PAGES));
    if (compiled) return new Instances(compiled.module, compiled.layout, maxPages, await instantiate(compiled.module, maxPages));
    return Instances.#compileAndCreate(maxPages);
  }

  static async #compileAndCreate(maxPages: number): Promise<Instances> {
    // The binary embeds the WASM compressed (side/modules.ts); the package's own copy is stripped there.
    const embedded = await quickjsWasm();
    if (embedded) return new Instances(embedded.module, embedded.layout, maxPages, await instantiate(embedded.module, maxPages));
    // The singlefile build compiles its embedded bytes inside WebAssembly.instantiate; catch the
    // compiled module from that first call so later instances skip compilation, and its bytes for their layout.
    let compiled: WebAssembly.Module | undefined;
    let layout: MemoryLayout | null = null;
    const original = WebAssembly.instantiate;
    const capture = async function (this: unknown, ...args: unknown[]): Promise<unknown> {
      const a = args[0];
      if (ArrayBuffer.isView(a)) layout = memoryLayout(new Uint8Array(a.buffer, a.byteOffset, a.byteLength));
      else if (a instanceof ArrayBuffer) layout = memoryLayout(new Uint8Array(a));
      const r = await (original as (...a: unknown[]) => Promise<unknown>).apply(this, args);
      if (r && typeof r === "object" && "module" in r && r.module instanceof WebAssembly.Module) compiled = r.module;
      return r;
    };
    (WebAssembly as { instantiate: unknown }).instantiate = capture;
    let first: Instance;
    try {
      first = await instantiate(undefined, maxPages);
    } finally {
      (WebAssembly as { instantiate: unknown }).instantiate = original;
    }
    if (!compiled) throw new Error("the QuickJS WASM module was not compiled through WebAssembly.instantiate; cannot make per-script instances");
    return new Instances(compiled, layout, maxPages, first);
  }

  /** An instance for one script: an idle one, or a new one (about 10 ms). */
  async take(): Promise<Instance> {
    const idle = this.#idle.pop();
    if (idle) return idle;
    this.created++;
    return instantiate(this.compiled, this.maxPages);
  }

  /**
   * A new instance no script has used (about 10 ms), for a guest snapshot (script/snapshot.ts): its memory above the
   * heap's break is all zeros, as the snapshot's copy assumes nothing of it.
   */
  async fresh(): Promise<Instance> {
    this.created++;
    return instantiate(this.compiled, this.maxPages);
  }

  /** Returns `inst` after its script. `clean`: its runtime was freed without error; only then may it be reused. */
  give(inst: Instance, clean: boolean): void {
    // one that reached its cap is not reused: the next script would count as out of memory from its start
    if (clean && this.#idle.length < IDLE_MAX && inst.memory.buffer.byteLength <= REUSE_MAX_BYTES && !inst.exhausted() && !inst.atWall()) this.#idle.push(inst);
  }
}

/** The compiled QuickJS WASM module and its memory layout (null: unknown for this build: no guest snapshots). */
export interface CompiledQuickJS {
  readonly module: WebAssembly.Module;
  readonly layout: MemoryLayout | null;
}

/**
 * Compiles the QuickJS WASM module (about 170 ms of CPU, off the calling thread's event loop where the
 * engine allows) and reads its layout. A `WebAssembly.Module` can be posted to worker threads, so one compile serves a pool.
 * @throws Error when the module cannot be compiled.
 */
export async function compileQuickJS(): Promise<CompiledQuickJS> {
  const i = await Instances.create(8);
  return { module: i.compiled, layout: i.layout };
}

async function instantiate(compiled: WebAssembly.Module | undefined, maxPages: number): Promise<Instance> {
  const memory = new WebAssembly.Memory({ initial: INITIAL_PAGES, maximum: maxPages });
  // emscripten's heap resize calls this memory's `grow` (up to three sizes, then malloc returns NULL): its outcome is the
  // one exact sign that the guest ran out of memory, which QuickJS's own counter does not see (GROWTH_SLACK_DIVISOR)
  const wall = { hit: false };
  const grow = memory.grow.bind(memory);
  Object.defineProperty(memory, "grow", {
    value: (delta: number): number => {
      try {
        const before = grow(delta);
        wall.hit = false;
        return before;
      } catch (e) {
        wall.hit = true;
        throw e;
      }
    },
  });
  // An abort inside QuickJS surfaces as a thrown RuntimeError (handled by script/vm.ts); its stderr copy is noise.
  const emscriptenModule = { printErr: quiet, print: quiet } as unknown as CustomizeVariantOptions["emscriptenModule"];
  const module = await newQuickJSWASMModuleFromVariant(newVariant(variant, compiled ? { wasmModule: compiled, wasmMemory: memory, emscriptenModule } : { wasmMemory: memory, emscriptenModule }));
  const cap = maxPages * PAGE;
  return { module, memory, exhausted: (wantBytes = 0) => wall.hit || memory.buffer.byteLength + wantBytes >= cap - cap / GROWTH_SLACK_DIVISOR, atWall: () => wall.hit };
}

function quiet(): void {}
