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

/** A wasm binary's first 8 bytes: the magic `\0asm` and version 1. */
const MAGIC = [0, 0x61, 0x73, 0x6d, 1, 0, 0, 0];

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
  /** An unsigned 32-bit LEB128: at most 5 bytes, the fifth carrying no bit past the 32nd (as the wasm spec reads it). */
  u32(): number {
    let r = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      const x = this.byte();
      if (shift === 28 && x & 0xf0) throw new Error("bad LEB128");
      r += (x & 0x7f) * 2 ** shift;
      if ((x & 0x80) === 0) return r;
    }
    throw new Error("bad LEB128");
  }
  /** A signed 32-bit LEB128: at most 5 bytes, the fifth's unused bits a copy of the sign (as the wasm spec reads it). */
  i32(): number {
    let r = 0;
    let shift = 0;
    let x: number;
    do {
      x = this.byte();
      if (shift === 28 && (x & 0x80 || ((x & 0x70) !== 0 && (x & 0x70) !== 0x70) || ((x & 0x08) !== 0) !== ((x & 0x40) !== 0))) throw new Error("bad LEB128");
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
  /** A table's limits, skipped. */
  skipLimits(): void {
    const flags = this.u32();
    this.u32();
    if (flags & 1) this.u32();
  }
  /** A memory's limits: true for a plain 32-bit memory (flags 0 or 1), false for a shared or 64-bit one (or any other). */
  plainMemory(): boolean {
    const flags = this.u32();
    if (flags > 1) return false;
    this.u32();
    if (flags & 1) this.u32();
    return true;
  }
}

/**
 * Reads the memory layout of an emscripten build of QuickJS from its WASM binary: the only global must be the stack
 * pointer (a mutable i32, defined, none imported) whose initial value is the stack's high end and the heap's base;
 * static data ends `STACK_BYTES` below it, and every active data segment must lie below that; `sbrk`'s break is the one
 * aligned 32-bit word of the initial static data holding the heap's base. Read exactly or not at all: the header must be
 * wasm version 1; every section must lie within the binary, and the import, memory, global and data sections it reads
 * must end where their sizes say and come once each; there must be exactly one memory, 32-bit and not shared; every
 * LEB128 number must fit 32 bits as the wasm spec reads it.
 * @param wasm the binary, as compiled (bytes).
 * @returns the layout, or null for any binary not so (another build: no snapshot is taken). Never throws.
 */
export function memoryLayout(wasm: Uint8Array): MemoryLayout | null {
  try {
    const r = new Reader(wasm);
    r.at = 8;
    if (wasm.length < 8 || MAGIC.some((b, i) => wasm[i] !== b)) return null;
    let stackHigh: number | undefined;
    /** Memories seen (imported or defined): exactly one, plain (`plainMemory`), or no layout. */
    let memories = 0;
    const segments: { offset: number; bytes: Uint8Array }[] = [];
    /** The non-custom sections seen: each at most once, as in any valid module (a second copy is not guessed past). */
    const seen = new Set<number>();
    while (r.at < wasm.length) {
      const id = r.byte();
      const size = r.u32();
      const end = r.at + size;
      if (end > wasm.length) return null; // a section past the binary's end: truncated
      if (id !== 0) {
        if (seen.has(id)) return null;
        seen.add(id);
      }
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
          } else if (kind === 2) {
            memories++;
            if (!r.plainMemory()) return null; // a shared or 64-bit memory: not the layout this reads
          } else return null; // an imported global (or tag): not the layout this reads
        }
      } else if (id === 5) {
        for (let n = r.u32(); n > 0; n--) {
          memories++;
          if (!r.plainMemory()) return null;
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
          if (r.at + length > end) return null; // a segment past its section
          segments.push({ offset, bytes: wasm.subarray(r.at, r.at + length) });
          r.at += length;
        }
      }
      // a section this reads must end exactly where its size says (a valid module's do); others are skipped
      if ((id === 2 || id === 5 || id === 6 || id === 11) && r.at !== end) return null;
      r.at = end;
    }
    if (memories !== 1 || stackHigh === undefined || stackHigh % 16 !== 0) return null;
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
