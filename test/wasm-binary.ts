/**
 * @module test/wasm-binary
 * Hand-made WebAssembly binaries for the tests of src/side/quickjs-layout.ts `memoryLayout` (test only): LEB128
 * numbers, sections, a header, little-endian words. Only the encoding; each test says what its binary holds.
 */

/** `n` (≥ 0, any size) as unsigned LEB128 bytes. */
export const leb = (n: number): number[] => {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n = Math.floor(n / 128);
    if (n) b |= 0x80;
    out.push(b);
  } while (n);
  return out;
};

/** `n` (a 32-bit integer) as signed LEB128 bytes. */
export const sleb = (n: number): number[] => {
  const out: number[] = [];
  for (;;) {
    const b = n & 0x7f;
    n >>= 7;
    if ((n === 0 && !(b & 0x40)) || (n === -1 && b & 0x40)) return [...out, b];
    out.push(b | 0x80);
  }
};

/** A section: its id, its size, its payload. */
export const section = (id: number, payload: number[]): number[] => [id, ...leb(payload.length), ...payload];

/** A name (an import's module or field): its length, its UTF-8 bytes. */
export const name = (s: string): number[] => [...leb(s.length), ...new TextEncoder().encode(s)];

/** `v` as 4 little-endian bytes. */
export const le32 = (v: number): number[] => [v & 0xff, (v >>> 8) & 0xff, (v >>> 16) & 0xff, (v >>> 24) & 0xff];

/** The magic number and version 1. */
export const HEADER = [0, 0x61, 0x73, 0x6d, 1, 0, 0, 0];

/** A module: the header, then `sections` in order. */
export const wasm = (...sections: number[][]): Uint8Array => new Uint8Array([...HEADER, ...sections.flat()]);
