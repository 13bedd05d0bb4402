/**
 * @module test/security/script-snapshot-layout-read-exactly-or-refused
 * A thread's guest snapshot copies back the static data and heap where src/side/quickjs-layout.ts `memoryLayout` says they
 * lie, read from the QuickJS WASM binary; a layout read wrongly restores the wrong bytes. Binaries it cannot read exactly
 * must get no layout (null: no snapshot, a guest made afresh per script): each case below was read as a layout before.
 */
import { describe, expect, test } from "bun:test";
import { memoryLayout } from "../../src/side/quickjs-layout.ts";
import { Instances } from "../../src/script/instances.ts";
import { le32, leb, section, sleb, wasm } from "../wasm-binary.ts";

const HIGH = 5 * 1024 * 1024 + 4096;
const stackPointer = (init: number): number[] => section(6, [1, 0x7f, 1, 0x41, ...sleb(init), 0x0b]);
const segment = (offset: number, bytes: number[]): number[] => [0, 0x41, ...sleb(offset), 0x0b, ...leb(bytes.length), ...bytes];
const data = (...segs: number[][]): number[] => section(11, [segs.length, ...segs.flat()]);
/** A memory section with one memory of `flags` (0: plain, no maximum). */
const memory = (flags = 0): number[] => section(5, flags & 1 ? [1, flags, ...leb(128), ...leb(128)] : [1, flags, ...leb(128)]);
const breakWord = segment(100, le32(HIGH));

describe("memoryLayout reads a binary exactly or refuses it", () => {
  test("the shapes it reads still read (a defined or an imported plain memory), and the pinned build", async () => {
    expect(memoryLayout(wasm(memory(), stackPointer(HIGH), data(breakWord)))).toEqual({ staticEnd: 4096, heapBase: HIGH, breakAt: 100 });
    const imported = section(2, [1, 1, 0x61, 1, 0x6d, 2, 0, ...leb(128)]);
    expect(memoryLayout(wasm(imported, stackPointer(HIGH), data(breakWord)))).toEqual({ staticEnd: 4096, heapBase: HIGH, breakAt: 100 });
    expect((await Instances.create(16)).layout).toEqual({ staticEnd: 90_208, heapBase: 5_333_088, breakAt: 86_864 });
  });

  const refused: Record<string, Uint8Array> = {
    "a version other than 1 (bytes 5..7 not zero)": new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 1, 1, 1, ...memory(), ...stackPointer(HIGH), ...data(breakWord)]),
    "a section whose size runs past the binary's end": wasm(memory(), stackPointer(HIGH), [11, ...leb(200), 1, ...breakWord]),
    "a second global section (another stack pointer)": wasm(memory(), stackPointer(HIGH + 4096), stackPointer(HIGH), data(breakWord)),
    "a second data section": wasm(memory(), stackPointer(HIGH), data(breakWord), data(segment(4000, [1, 2, 3]))),
    "a global section longer than its one global": wasm(memory(), section(6, [1, 0x7f, 1, 0x41, ...sleb(HIGH), 0x0b, 0x7f, 1, 0x41, 0x10, 0x0b]), data(breakWord)),
    "a section size as a LEB128 past 32 bits": wasm(memory(), stackPointer(HIGH), [11, 0x80 + 11, 0x80, 0x80, 0x80, 0x10, 1, ...breakWord]),
    "a shared memory": wasm(memory(3), stackPointer(HIGH), data(breakWord)),
    "a 64-bit memory": wasm(memory(4), stackPointer(HIGH), data(breakWord)),
    "two memories": wasm(section(5, [2, 0, ...leb(128), 0, ...leb(128)]), stackPointer(HIGH), data(breakWord)),
    "no memory": wasm(stackPointer(HIGH), data(breakWord)),
  };
  for (const [what, bytes] of Object.entries(refused)) {
    test(`refused: ${what}`, () => {
      expect(memoryLayout(bytes)).toBeNull();
    });
  }
});
