/**
 * @module build/elf
 * Reads the ELF header fields a release artifact is checked on: class, byte order, machine and
 * interpreter (layout from the System V ABI's ELF-64 object file format).
 */
import { closeSync, openSync, readSync } from "node:fs";

/** The ELF header fields a release artifact is checked on. */
export interface ElfInfo {
  /** 1 = 32-bit, 2 = 64-bit (EI_CLASS). */
  elfClass: number;
  /** 1 = little-endian (EI_DATA). */
  data: number;
  /** e_machine: 62 = x86-64, 183 = AArch64. */
  machine: number;
  /** The PT_INTERP path, or null for a static executable. */
  interpreter: string | null;
}

/** Reads a 64-bit little-endian ELF file's class, machine and interpreter (System V ABI, ELF-64 layout). Reads the first 64 KiB only. Throws on a non-ELF file. */
export function readElf(path: string): ElfInfo {
  // The header, the program headers and the interpreter string sit in the first pages.
  const fd = openSync(path, "r");
  const buf = Buffer.alloc(65536);
  try {
    readSync(fd, buf, 0, buf.length, 0);
  } finally {
    closeSync(fd);
  }
  if (buf.readUInt32BE(0) !== 0x7f454c46) throw new Error(`${path} is not an ELF file`);
  const elfClass = buf[4]!;
  const data = buf[5]!;
  const machine = buf.readUInt16LE(18);
  let interpreter: string | null = null;
  if (elfClass === 2 && data === 1) {
    const phoff = Number(buf.readBigUInt64LE(32));
    const phentsize = buf.readUInt16LE(54);
    const phnum = buf.readUInt16LE(56);
    for (let i = 0; i < phnum; i++) {
      const ph = phoff + i * phentsize;
      if (buf.readUInt32LE(ph) !== 3) continue; // PT_INTERP
      const off = Number(buf.readBigUInt64LE(ph + 8));
      const size = Number(buf.readBigUInt64LE(ph + 32));
      interpreter = buf.subarray(off, off + size).toString("latin1").replace(/\0+$/, "");
    }
  }
  return { elfClass, data, machine, interpreter };
}
