/**
 * @module side/quickjs-layout
 * Where static data, the stack and the heap lie in the memory of an emscripten build of QuickJS, read from its WASM
 * binary (script/snapshot.ts copies the static data and the heap; the stack holds nothing between calls). No imports:
 * the compiled binary's embedded-module table (build/side.ts) calls it on the embedded bytes.
 */

/**
 * emscripten's stack size in the QuickJS build, bytes: quickjs-emscripten's variant Makefiles pass `-s STACK_SIZE=5MB`
 * (justjake/quickjs-emscripten, `packages/variant-*` Makefile; emscripten's "MB" is MiB). The stack lies between the
 * static data and the heap and holds nothing between two calls into the module, so it is not copied.
 */
const STACK_BYTES = 5 * 1024 * 1024;

/** Where the parts of a QuickJS instance's memory lie (bytes; from `memoryLayout`). */
export interface MemoryLayout {
  /** The end of static data (initialised data and bss): the stack's low end. */
  readonly staticEnd: number;
  /** Where the heap begins: the stack's high end (`__heap_base`, the initial stack pointer). */
  readonly heapBase: number;
  /** The address of the 32-bit word holding `sbrk`'s break (the heap's end), in static data. */
  readonly breakAt: number;
}

/** A wasm binary reader: unsigned and signed LEB128 at `at`, which each advances. */
class Reader {
  at = 0;
  constructor(readonly b: Uint8Array) {}
  byte(): number {
    if (this.at >= this.b.length) throw new Error("truncated");
    return this.b[this.at++]!;
  }
  u32(): number {
    let r = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      const x = this.byte();
      r += (x & 0x7f) * 2 ** shift;
      if ((x & 0x80) === 0) return r;
    }
    throw new Error("bad LEB128");
  }
  i32(): number {
    let r = 0;
    let shift = 0;
    let x: number;
    do {
      x = this.byte();
      r |= (x & 0x7f) << shift;
      shift += 7;
    } while (x & 0x80 && shift < 35);
    if (x & 0x80) throw new Error("bad LEB128");
    return shift < 32 && x & 0x40 ? r | (-1 << shift) : r;
  }
  /** A constant expression `i32.const N; end`. */
  i32Const(): number {
    if (this.byte() !== 0x41) throw new Error("not i32.const");
    const v = this.i32();
    if (this.byte() !== 0x0b) throw new Error("not a constant expression");
    return v;
  }
  skipLimits(): void {
    const flags = this.u32();
    this.u32();
    if (flags & 1) this.u32();
  }
}

/**
 * Reads the memory layout of an emscripten build of QuickJS from its WASM binary: the only global must be the stack
 * pointer (a mutable i32, defined, none imported) whose initial value is the stack's high end and the heap's base;
 * static data ends `STACK_BYTES` below it, and every active data segment must lie below that; `sbrk`'s break is the one
 * aligned 32-bit word of the initial static data holding the heap's base.
 * @param wasm the binary, as compiled (bytes).
 * @returns the layout, or null for any binary not so (another build: no snapshot is taken). Never throws.
 */
export function memoryLayout(wasm: Uint8Array): MemoryLayout | null {
  try {
    const r = new Reader(wasm);
    r.at = 8;
    if (wasm.length < 8 || wasm[0] !== 0 || wasm[1] !== 0x61 || wasm[2] !== 0x73 || wasm[3] !== 0x6d || wasm[4] !== 1) return null;
    let stackHigh: number | undefined;
    const segments: { offset: number; bytes: Uint8Array }[] = [];
    while (r.at < wasm.length) {
      const id = r.byte();
      const size = r.u32();
      const end = r.at + size;
      if (id === 2) {
        for (let n = r.u32(); n > 0; n--) {
          for (let name = 0; name < 2; name++) {
            const length = r.u32(); // the module's name, then the field's
            r.at += length;
          }
          const kind = r.byte();
          if (kind === 0) r.u32();
          else if (kind === 1) {
            r.byte();
            r.skipLimits();
          } else if (kind === 2) r.skipLimits();
          else return null; // an imported global (or tag): not the layout this reads
        }
      } else if (id === 6) {
        if (r.u32() !== 1) return null;
        if (r.byte() !== 0x7f || r.byte() !== 1) return null; // i32, mutable
        stackHigh = r.i32Const();
      } else if (id === 11) {
        for (let n = r.u32(); n > 0; n--) {
          if (r.u32() !== 0) return null; // passive or explicit-memory segments: not this layout
          const offset = r.i32Const();
          const length = r.u32();
          segments.push({ offset, bytes: wasm.subarray(r.at, r.at + length) });
          r.at += length;
        }
      }
      r.at = end;
    }
    if (stackHigh === undefined || stackHigh % 16 !== 0) return null;
    const staticEnd = stackHigh - STACK_BYTES;
    if (staticEnd <= 0) return null;
    const image = new Uint8Array(staticEnd);
    for (const s of segments) {
      if (s.offset < 0 || s.offset + s.bytes.length > staticEnd) return null;
      image.set(s.bytes, s.offset);
    }
    const words = new Uint32Array(image.buffer, 0, staticEnd >>> 2);
    let breakAt = -1;
    for (let i = 0; i < words.length; i++) {
      if (words[i] !== stackHigh) continue;
      if (breakAt >= 0) return null; // two candidates: cannot tell which is the break
      breakAt = i * 4;
    }
    return breakAt < 0 ? null : { staticEnd, heapBase: stackHigh, breakAt };
  } catch {
    return null;
  }
}
