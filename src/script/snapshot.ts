/**
 * @module script/snapshot
 * A guest restored instead of made again. A thread's guest (runtime, context, limits, the bridge: vm.ts
 * `prepareGuest`) is made once on a fresh QuickJS instance, before any user code; its WASM memory's static data and
 * heap are then copied (`GuestSnapshot.take`). Each script runs in that guest (`lend`), and after it the copy is
 * written back (`restore`): the static data and the heap up to the break the snapshot had, byte for byte, and the heap
 * the script took beyond that break zeroed (as it was when the snapshot was taken), so the next
 * script starts from exactly the state the first one did — no global, prototype, bridge state, atom or allocation of
 * an earlier script remains reachable, as with a runtime made afresh (docs/security-model.md §9). Writing ≈ 180 KB back
 * costs a few µs; making a runtime, context and bridge afresh costs ≈ 200–350 µs of the thread (docs/performance.md,
 * "fourteenth session").
 *
 * What the bytes do not cover is restored or refused here: quickjs-emscripten's own JavaScript-side state of the
 * runtime and context (their fields, host references, callbacks: put back as they were, or the snapshot is dropped
 * when they changed in a way this module cannot undo), and the one value QuickJS draws per context, `Math.random`'s
 * state (seeded anew from `crypto.getRandomValues` for every script, where QuickJS seeds it from the clock).
 * The memory layout comes from the WASM binary itself (side/quickjs-layout.ts `memoryLayout`); any build it cannot read
 * exactly gets no snapshot (the worker then makes a fresh guest per script, as before).
 */
import type { QuickJSContext, QuickJSRuntime } from "quickjs-emscripten-core";
import { REUSE_MAX_BYTES, type Instance } from "./instances.ts";
import type { MemoryLayout } from "../side/quickjs-layout.ts";
import type { PreparedGuest } from "./vm.ts";

const MASK64 = (1n << 64n) - 1n;

/** QuickJS's `xorshift64star` step (quickjs.c, "xorshift* random number generator by Marsaglia"): the next state. */
function nextRandomState(x: bigint): bigint {
  x ^= x >> 12n;
  x = (x ^ (x << 25n)) & MASK64;
  x ^= x >> 27n;
  return x;
}

/** The `Math.random()` value QuickJS derives from the state `x` it just stepped to (quickjs.c `js_math_random`). */
function randomValueOf(x: bigint): number {
  const v = (x * 0x2545f4914f6cdd1dn) & MASK64;
  const dv = new DataView(new ArrayBuffer(8));
  dv.setBigUint64(0, (0x3ffn << 52n) | (v >> 12n));
  return dv.getFloat64(0) - 1;
}

/** An object's own enumerable fields, to be put back as they were (`putBack`). */
type Fields = { readonly of: Record<string, unknown>; readonly values: Map<string, unknown> };

function fieldsOf(o: unknown): Fields | null {
  if (typeof o !== "object" || o === null) return null;
  const of = o as Record<string, unknown>;
  return { of, values: new Map(Object.keys(of).map((k) => [k, of[k]])) };
}

function putBack(f: Fields): void {
  for (const k of Object.keys(f.of)) if (!f.values.has(k)) delete f.of[k];
  for (const [k, v] of f.values) if (f.of[k] !== v) f.of[k] = v;
}

/** quickjs-emscripten 0.32's `HostRefMap` (the ids of host functions the guest holds), as this module reads it. */
interface HostRefs {
  nextId: number;
  freelist: number[];
  groups: Map<number, Map<number, unknown>>;
}

function isHostRefs(v: unknown): v is HostRefs {
  const h = v as Partial<HostRefs> | null;
  return typeof h === "object" && h !== null && typeof h.nextId === "number" && Array.isArray(h.freelist) && h.groups instanceof Map;
}

/** The library's per-module maps of live runtimes and contexts (keyed by pointer), whose sizes must not change. */
function callbackMaps(mod: unknown): Map<unknown, unknown>[] | null {
  const cb = (mod as { callbacks?: { runtimeCallbacks?: unknown; contextCallbacks?: unknown } }).callbacks;
  if (!(cb?.runtimeCallbacks instanceof Map) || !(cb.contextCallbacks instanceof Map)) return null;
  return [cb.runtimeCallbacks, cb.contextCallbacks];
}

/**
 * One thread's guest kept as a snapshot: `lend()` hands it to a script, `restore()` after that script puts it back.
 * One script at a time. Create with `GuestSnapshot.take`.
 */
export class GuestSnapshot {
  #lent = false;
  #dropped = false;
  /** Scripts that ran in this guest (diagnostics). */
  runs = 0;

  private constructor(
    readonly inst: Instance,
    private readonly guest: PreparedGuest,
    private readonly layout: MemoryLayout,
    private readonly staticBytes: Uint8Array,
    private readonly heapBytes: Uint8Array,
    /** Where the context's `Math.random` state (8 bytes, little-endian) lies. */
    private readonly randomAt: number,
    private readonly fields: Fields[],
    private readonly hostRefs: HostRefs,
    /** The contents of `hostRefs`' free list and groups (its fields themselves are among `fields`). */
    private readonly hostRefIds: { freelist: number[]; groups: [number, [number, unknown][]][] },
    private readonly maps: { map: Map<unknown, unknown>; size: number }[],
  ) {}

  /**
   * Keeps `guest` (made by `prepareGuest` on `inst`, a fresh instance no script ever used, and not yet adopted by any
   * run) as a snapshot. Calls `Math.random()` in the guest once to find its state (an expression, nothing defined).
   * @returns the snapshot, or null when this build or library is not as this module reads it (`memoryLayout` null, the
   * break or the random state not found exactly once, the library's fields not as expected); the guest is then
   * unchanged but for that one `Math.random()` call, and the caller may still use or free it. Never throws.
   */
  static take(inst: Instance, guest: PreparedGuest, layout: MemoryLayout | null): GuestSnapshot | null {
    try {
      if (!layout || !guest.owned) return null;
      const ctx: QuickJSContext = guest.ctx;
      const rt: QuickJSRuntime = guest.rt;
      // the handles the library makes on first use point into the heap: made now, so they are part of the snapshot
      void ctx.global;
      // the interrupt handler as the library's C side sees it is part of the snapshot: every run replaces only the
      // JavaScript side (vm.ts `start`), so QuickJS's check stays on after each restore
      rt.setInterruptHandler(() => false);
      const mem = inst.memory;
      const heapEnd = (): number => new DataView(mem.buffer).getUint32(layout.breakAt, true);
      const randomAt = findRandomState(ctx, mem, layout, heapEnd());
      const brk = heapEnd();
      if (randomAt === null || brk < layout.heapBase || brk > mem.buffer.byteLength) return null;
      const hostRefs = (rt as unknown as { hostRefs?: unknown }).hostRefs;
      if (!isHostRefs(hostRefs)) return null;
      const maps = callbackMaps(guest.module);
      const c = ctx as unknown as { cToHostCallbacks?: unknown; memory?: unknown };
      const r = rt as unknown as { cToHostCallbacks?: unknown; memory?: unknown };
      const fields = [ctx, c.cToHostCallbacks, rt, r.cToHostCallbacks, hostRefs].map(fieldsOf);
      if (!maps || fields.some((f) => f === null)) return null;
      // the library's memory helpers, where present, are put back too
      for (const m of [c.memory, r.memory]) if (typeof m === "object" && m !== null) fields.push(fieldsOf(m));
      const u8 = new Uint8Array(mem.buffer);
      return new GuestSnapshot(
        inst,
        guest,
        layout,
        u8.slice(0, layout.staticEnd),
        u8.slice(layout.heapBase, brk),
        randomAt,
        fields as Fields[],
        hostRefs,
        { freelist: [...hostRefs.freelist], groups: [...hostRefs.groups].map(([g, m]) => [g, [...m]]) },
        maps.map((map) => ({ map, size: map.size })),
      );
    } catch {
      return null;
    }
  }

  /** True when the guest can be lent now (not lent to a script, not dropped). */
  get available(): boolean {
    return !this.#lent && !this.#dropped;
  }

  /** Bytes copied back by each `restore()`. */
  get bytes(): number {
    return this.staticBytes.length + this.heapBytes.length;
  }

  /**
   * The guest for one script (a `PreparedGuest` not `owned`: vm.ts `ScriptRun` frees nothing of it), with `Math.random`
   * seeded anew. @throws Error when it is lent already (not restored since) or was dropped.
   */
  lend(): PreparedGuest {
    if (this.#lent || this.#dropped) throw new Error("the guest snapshot is in use or dropped");
    this.#lent = true;
    this.runs++;
    this.#seed();
    return this.guest.reissue();
  }

  /**
   * Puts the guest back as it was taken, after the script it was lent to has finished (its outcome known, no guest
   * code running): static data and heap written back, and the heap the script took past the snapshot's break zeroed.
   * Not when the instance cannot be reused: its memory grew past what an instance may keep (`REUSE_MAX_BYTES`) or
   * reached its cap, its break is below the snapshot's or past the memory, or the library's state changed in a way not
   * undone here.
   * @returns true when the guest can be lent again; false when the snapshot is dropped (its instance too: the caller
   * makes a new one). Never throws.
   */
  restore(): boolean {
    if (!this.#lent || this.#dropped) return false;
    try {
      const mem = this.inst.memory;
      if (mem.buffer.byteLength > REUSE_MAX_BYTES || this.inst.exhausted() || this.inst.atWall()) return this.#drop();
      if (this.maps.some((m) => m.map.size !== m.size)) return this.#drop();
      const u8 = new Uint8Array(mem.buffer);
      // the heap the script took past the snapshot's break holds its data, and the next script's allocations get it back
      // as it is (QuickJS reads some unwritten: a growable SharedArrayBuffer's grow): zeroed, as it was when the snapshot
      // was taken. This build's malloc never gives memory back (emscripten's dlmalloc: the break only rises), so the
      // break the script left is the highest it reached.
      const snapEnd = this.layout.heapBase + this.heapBytes.length;
      const scriptEnd = new DataView(mem.buffer).getUint32(this.layout.breakAt, true);
      if (scriptEnd < snapEnd || scriptEnd > u8.length) return this.#drop();
      u8.fill(0, snapEnd, scriptEnd);
      u8.set(this.staticBytes, 0);
      u8.set(this.heapBytes, this.layout.heapBase);
      // (the fields put back include hostRefs' own: its next id, and the identity of its free list and groups)
      for (const f of this.fields) putBack(f);
      const h = this.hostRefs;
      h.freelist.length = 0;
      h.freelist.push(...this.hostRefIds.freelist);
      h.groups.clear();
      for (const [g, entries] of this.hostRefIds.groups) h.groups.set(g, new Map(entries));
      this.#lent = false;
      return true;
    } catch {
      return this.#drop();
    }
  }

  /** Gives the snapshot up (its instance is left to the garbage collector, never reused). Returns false. */
  #drop(): false {
    this.#dropped = true;
    return false;
  }

  /** A fresh, unpredictable, non-zero `Math.random` state for the next script. */
  #seed(): void {
    const seed = new BigUint64Array(1);
    do crypto.getRandomValues(seed);
    while (seed[0] === 0n);
    new DataView(this.inst.memory.buffer).setBigUint64(this.randomAt, seed[0]!, true);
  }
}

/**
 * Finds the 8-byte state of `ctx`'s `Math.random` (QuickJS's `JSContext.random_state`): the one aligned word of static
 * data or heap below `brk` that one call steps as `nextRandomState` does, to the value the call returned.
 * @returns its address, or null when not exactly one word fits.
 */
function findRandomState(ctx: QuickJSContext, mem: WebAssembly.Memory, layout: MemoryLayout, brk: number): number | null {
  if (brk < layout.heapBase || brk > mem.buffer.byteLength) return null;
  const ranges: [number, number][] = [[0, layout.staticEnd], [layout.heapBase, brk]];
  const before = ranges.map(([a, b]) => new BigUint64Array(mem.buffer.slice(a, b - ((b - a) % 8))));
  const r = ctx.evalCode("Math.random()", "airlock:snapshot.js");
  if (r.error) {
    r.error.dispose();
    return null;
  }
  const value = ctx.typeof(r.value) === "number" ? ctx.getNumber(r.value) : NaN;
  r.value.dispose();
  let found: number | null = null;
  for (let k = 0; k < ranges.length; k++) {
    const [a] = ranges[k]!;
    const old = before[k]!;
    const now = new BigUint64Array(mem.buffer, a, old.length);
    for (let i = 0; i < old.length; i++) {
      if (old[i] === now[i] || nextRandomState(old[i]!) !== now[i] || randomValueOf(now[i]!) !== value) continue;
      if (found !== null) return null;
      found = a + i * 8;
    }
  }
  return found;
}
