/**
 * @module build/bytecode
 * JavaScriptCore bytecode for the start path only (docs/performance.md, issue 20, tenth session). Bun 1.4.4
 * embeds bytecode for every chunk of a `--compile` build or for none (`bytecode: true` adds ~7.7 MB, past
 * issue 22's 8 MB over the runtime), so build/build.ts compiles with bytecode and then rewrites the module
 * graph embedded in the executable ({@link keepBytecode}): the chunks the start path loads
 * ({@link startPathChunks}) keep their bytecode, every other chunk's record becomes what a build without
 * bytecode writes (no bytecode, no bytecode origin path), and the dropped bytes leave the file. The shared
 * parts the kept bytecode needs stay: the bytecode string table, Bun's bytecode for its own JS builtins
 * (`node:fs` and the like; all of them, or those named), and the pre-linked module graph.
 *
 * The layout read and written, as Bun 1.4.4's `bun build --compile` leaves it in a Linux ELF executable
 * (learned from the executables it writes, Bun's `StandaloneModuleGraph` sources and its
 * `compile-corrupted-graph` test; every part is checked, and anything else is refused with
 * {@link GraphFormatError}, so a Bun upgrade that changes it fails the build instead of shipping a broken binary):
 * - a section named `.bun`, the last part of a `PT_LOAD` segment whose file and memory sizes are equal and
 *   end at the section's end rounded up to the segment's alignment (4 KiB on x64, 64 KiB on arm64). It holds a u64 little-endian payload length, then the
 *   payload (the graph). Only non-allocated sections (`.comment`, symbol tables, …) and the section header
 *   table follow that segment in the file. The runtime finds the section through the address stored in the
 *   `BUN_COMPILED` symbol, which does not move.
 * - the graph ends with `Offsets` (u64 byte count, the module table pointer, u32 entry point index, the
 *   exec-argv pointer, u32 flags: 32 bytes) and the trailer `"\n---- Bun! ----\n"`.
 * - a pointer is (u32 offset, u32 length) into the graph. The module table holds 52-byte records: name,
 *   contents, source map, bytecode, module info, bytecode origin path (six pointers), then u8 encoding,
 *   loader, module format and side. Names, contents and origin paths are followed by a NUL byte.
 * - right after the module table, one part per flag bit, in bit order: bit 5 a u32 source hash per module;
 *   bit 6 the builtin bytecode table (u32 count, then count × {u32 builtin id, u32 offset, u32 length});
 *   bit 7 the bytecode string table's pointer; bit 8 one u32; bits 9 and 11 (together) the pre-linked
 *   module graph: two pointers, a u32 count and that many u32 module indices. Bits 0–4 (the autoload
 *   switches) and 10 (set in arm64 builds) carry no data; any other bit is refused, and so is anything
 *   unread between the last part and the exec-argv string that Bun writes next.
 * - every bytecode blob (a module's, a builtin's, the string table) starts 128-byte aligned in memory: its
 *   payload offset plus 8 (the length before the payload), the section being page-aligned.
 * Deterministic: the same executable and the same choice give the same bytes.
 */

/** Thrown when the executable is not laid out as this module expects (not a Bun 1.4.4 `--compile` ELF, or one this rewrite does not know). */
export class GraphFormatError extends Error {
  readonly code = "module_graph_format";
  constructor(message: string) {
    super(`module graph rewrite: ${message} (build/bytecode.ts reads the layout Bun 1.4.4 writes; a Bun upgrade must re-check it)`);
    this.name = "GraphFormatError";
  }
}

const TRAILER = "\n---- Bun! ----\n";
const OFFSETS_BYTES = 32;
const RECORD_BYTES = 52;
const POINTERS = 6;
/** Pointer slots of a module record, in order. */
const NAME = 0;
const CONTENTS = 1;
const SOURCEMAP = 2;
const BYTECODE = 3;
const MODULE_INFO = 4;
const ORIGIN = 5;
const PAGE = 0x1000;
/** Bun aligns each bytecode blob to this many bytes of memory. */
const BYTECODE_ALIGN = 128;
/** `Offsets.flags` bits: switches without data (the autoload ones, 0–4, and bit 10, set in arm64 builds) and the parts after the module table. */
const SWITCH_BITS = 0x1f | (1 << 10);
const SOURCE_HASHES = 1 << 5;
const BUILTIN_BYTECODE = 1 << 6;
const STRING_TABLE = 1 << 7;
const BIT8_WORD = 1 << 8;
const PRELINKED_A = 1 << 9;
const PRELINKED_B = 1 << 11;
const KNOWN_BITS = SWITCH_BITS | SOURCE_HASHES | BUILTIN_BYTECODE | STRING_TABLE | BIT8_WORD | PRELINKED_A | PRELINKED_B;
/** The `/$bunfs/root/` prefix of every module name on Linux. */
export const BUNFS_ROOT = "/$bunfs/root/";

interface Pointer {
  offset: number;
  length: number;
}

const NONE: Pointer = { offset: 0, length: 0 };

/** One module of the embedded graph. */
export interface GraphModule {
  /** `/$bunfs/root/…` */
  name: string;
  /** Bytes of embedded bytecode (with Bun's alignment padding), 0 for none. */
  bytecodeBytes: number;
}

/** The parts of the graph after the module table ({@link locate}). */
interface Tail {
  flags: number;
  hashes: Uint8Array | null;
  builtins: { id: number; blob: Pointer }[] | null;
  stringTable: Pointer | null;
  word8: Uint8Array | null;
  prelinked: { a: Pointer; b: Pointer; order: Uint8Array } | null;
  /** Payload offset just past the last part. */
  end: number;
}

/** Where the graph sits in an executable and what it holds. */
interface Located {
  bin: Uint8Array;
  view: DataView;
  /** File offset of the `.bun` section (its u64 payload length, then the payload). */
  sectionOffset: number;
  /** File offset of the `.bun` section's header. */
  sectionHeader: number;
  /** File offset of the program header of the `PT_LOAD` segment holding it. */
  segmentHeader: number;
  segmentOffset: number;
  /** The segment's `p_align`: its end is the section's end rounded up to it. */
  segmentAlign: number;
  /** File offset where the sections after the segment start (the segment's end). */
  tailStart: number;
  payload: Uint8Array;
  records: { pointers: Pointer[]; fields: Uint8Array }[];
  names: string[];
  offsets: Uint8Array;
  argv: Pointer;
  tail: Tail;
}

const latin1 = new TextDecoder("latin1");

function u64(view: DataView, at: number): number {
  const v = view.getBigUint64(at, true);
  if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new GraphFormatError(`a 64-bit field at ${at} is out of range`);
  return Number(v);
}

function roundUp(n: number, to: number): number {
  return Math.ceil(n / to) * to;
}

/** Reads the parts after the module table that `flags` announce, from payload offset `at`. */
function readTail(payload: Uint8Array, pv: DataView, at: number, flags: number, moduleCount: number, limit: number): Tail {
  if ((flags & ~KNOWN_BITS) !== 0) throw new GraphFormatError(`unknown graph flags 0x${(flags & ~KNOWN_BITS).toString(16)}`);
  if (((flags & PRELINKED_A) === 0) !== ((flags & PRELINKED_B) === 0)) throw new GraphFormatError("only one of the pre-linked graph's two flag bits is set");
  const need = (n: number): void => {
    if (at + n > limit) throw new GraphFormatError("the parts after the module table run past the graph");
  };
  const word = (): number => {
    need(4);
    const v = pv.getUint32(at, true);
    at += 4;
    return v;
  };
  const pointer = (what: string): Pointer => {
    const p = { offset: word(), length: word() };
    if (p.offset + p.length > limit) throw new GraphFormatError(`the ${what} runs past the graph`);
    return p;
  };
  const tail: Tail = { flags, hashes: null, builtins: null, stringTable: null, word8: null, prelinked: null, end: at };
  if (flags & SOURCE_HASHES) {
    need(4 * moduleCount);
    tail.hashes = payload.slice(at, at + 4 * moduleCount);
    at += 4 * moduleCount;
  }
  if (flags & BUILTIN_BYTECODE) {
    const count = word();
    need(12 * count);
    tail.builtins = [];
    for (let i = 0; i < count; i++) tail.builtins.push({ id: word(), blob: pointer(`builtin bytecode ${i}`) });
  }
  if (flags & STRING_TABLE) tail.stringTable = pointer("bytecode string table");
  if (flags & BIT8_WORD) {
    need(4);
    tail.word8 = payload.slice(at, at + 4);
    at += 4;
  }
  if (flags & PRELINKED_A) {
    const a = pointer("pre-linked graph's first part");
    const b = pointer("pre-linked graph's second part");
    const count = word();
    if (count > moduleCount) throw new GraphFormatError(`the pre-linked graph orders ${count} modules of ${moduleCount}`);
    need(4 * count);
    const order = payload.slice(at, at + 4 * count);
    const ov = new DataView(order.buffer);
    for (let i = 0; i < count; i++) if (ov.getUint32(4 * i, true) >= moduleCount) throw new GraphFormatError("the pre-linked graph names a module index past the table");
    at += 4 * count;
    tail.prelinked = { a, b, order };
  }
  tail.end = at;
  return tail;
}

function locate(bin: Uint8Array): Located {
  const view = new DataView(bin.buffer, bin.byteOffset, bin.byteLength);
  if (bin.length < 64 || view.getUint32(0, false) !== 0x7f454c46) throw new GraphFormatError("not an ELF file");
  if (bin[4] !== 2 || bin[5] !== 1) throw new GraphFormatError("not a 64-bit little-endian ELF file");
  const phoff = u64(view, 32);
  const shoff = u64(view, 40);
  const phentsize = view.getUint16(54, true);
  const phnum = view.getUint16(56, true);
  const shentsize = view.getUint16(58, true);
  const shnum = view.getUint16(60, true);
  const shstrndx = view.getUint16(62, true);
  if (phentsize !== 56 || shentsize !== 64 || shstrndx >= shnum || shoff + shnum * 64 > bin.length || phoff + phnum * 56 > bin.length) {
    throw new GraphFormatError("unexpected ELF header table sizes");
  }
  const strtab = u64(view, shoff + shstrndx * 64 + 24);
  const nameAt = (i: number): string => {
    const start = strtab + view.getUint32(shoff + i * 64, true);
    let end = start;
    while (end < bin.length && bin[end] !== 0) end++;
    return latin1.decode(bin.subarray(start, end));
  };
  const bunSections = [...Array(shnum).keys()].filter((i) => nameAt(i) === ".bun");
  if (bunSections.length !== 1) throw new GraphFormatError(`${bunSections.length} sections named .bun, expected 1`);
  const sh = shoff + bunSections[0]! * 64;
  const vaddr = u64(view, sh + 16);
  const sectionOffset = u64(view, sh + 24);
  const sectionSize = u64(view, sh + 32);
  if (vaddr % PAGE !== 0) throw new GraphFormatError("the .bun section is not page-aligned");
  const segments = [...Array(phnum).keys()]
    .map((i) => phoff + i * 56)
    .filter((p) => view.getUint32(p, true) === 1 && u64(view, p + 8) <= sectionOffset && sectionOffset < u64(view, p + 8) + u64(view, p + 32));
  if (segments.length !== 1) throw new GraphFormatError(`the .bun section is in ${segments.length} PT_LOAD segments, expected 1`);
  const ph = segments[0]!;
  const segmentOffset = u64(view, ph + 8);
  const segmentEnd = segmentOffset + u64(view, ph + 32);
  if (u64(view, ph + 32) !== u64(view, ph + 40)) throw new GraphFormatError("the .bun segment's file and memory sizes differ");
  if (u64(view, ph + 16) - segmentOffset !== vaddr - sectionOffset) throw new GraphFormatError("the .bun section's address does not match its segment's");
  // The segment ends at the section's end rounded up to its alignment (4 KiB on x64, 64 KiB on arm64).
  const segmentAlign = u64(view, ph + 48);
  if (segmentAlign < PAGE || (segmentAlign & (segmentAlign - 1)) !== 0) throw new GraphFormatError(`the .bun segment's alignment ${segmentAlign} is not a power of two of at least a page`);
  if (segmentEnd !== roundUp(sectionOffset + sectionSize, segmentAlign)) throw new GraphFormatError("the .bun section is not its segment's last, padded part");
  for (let i = 0; i < shnum; i++) {
    const o = shoff + i * 64;
    // An allocated section other than NOBITS after the segment would be loaded from bytes this rewrite moves.
    if (u64(view, o + 24) >= segmentEnd && view.getUint32(o + 4, true) !== 8 && (u64(view, o + 8) & 2) !== 0) {
      throw new GraphFormatError(`allocated section ${nameAt(i)} follows the .bun segment`);
    }
  }
  if (shoff < segmentEnd) throw new GraphFormatError("the section header table precedes the .bun segment's end");
  const length = u64(view, sectionOffset);
  if (length + 8 !== sectionSize) throw new GraphFormatError(`payload length ${length} does not fill the .bun section (${sectionSize} bytes)`);
  const payload = bin.subarray(sectionOffset + 8, sectionOffset + 8 + length);
  const pv = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
  if (length < TRAILER.length + OFFSETS_BYTES || latin1.decode(payload.subarray(length - TRAILER.length)) !== TRAILER) throw new GraphFormatError("no '---- Bun! ----' trailer");
  const o = length - TRAILER.length - OFFSETS_BYTES;
  const byteCount = u64(pv, o);
  const modulesPtr = { offset: pv.getUint32(o + 8, true), length: pv.getUint32(o + 12, true) };
  const entryPoint = pv.getUint32(o + 16, true);
  const argv = { offset: pv.getUint32(o + 20, true), length: pv.getUint32(o + 24, true) };
  const flags = pv.getUint32(o + 28, true);
  if (byteCount !== o) throw new GraphFormatError(`the graph's byte count ${byteCount} is not where its offsets record starts (${o})`);
  if (modulesPtr.length % RECORD_BYTES !== 0 || modulesPtr.offset + modulesPtr.length > o) throw new GraphFormatError(`a module table of ${modulesPtr.length} bytes is not whole ${RECORD_BYTES}-byte records`);
  const count = modulesPtr.length / RECORD_BYTES;
  if (entryPoint >= count) throw new GraphFormatError(`entry point ${entryPoint} of ${count} modules`);
  if (argv.offset + argv.length >= o || payload[argv.offset + argv.length] !== 0) throw new GraphFormatError("the exec-argv pointer is out of the graph");
  const aligned = (p: Pointer): boolean => p.length === 0 || (8 + p.offset) % BYTECODE_ALIGN === 0;
  const records: Located["records"] = [];
  const names: string[] = [];
  for (let i = 0; i < count; i++) {
    const r = modulesPtr.offset + i * RECORD_BYTES;
    const pointers: Pointer[] = [];
    for (let k = 0; k < POINTERS; k++) {
      const p = { offset: pv.getUint32(r + k * 8, true), length: pv.getUint32(r + k * 8 + 4, true) };
      if (p.length > 0 && p.offset + p.length >= o) throw new GraphFormatError(`module ${i}'s pointer ${k} runs past the graph`);
      pointers.push(p);
    }
    for (const k of [NAME, CONTENTS, ORIGIN]) {
      const p = pointers[k]!;
      if (p.length > 0 && payload[p.offset + p.length] !== 0) throw new GraphFormatError(`module ${i}'s pointer ${k} is not NUL-terminated`);
    }
    if (!aligned(pointers[BYTECODE]!)) throw new GraphFormatError(`module ${i}'s bytecode is not ${BYTECODE_ALIGN}-byte aligned`);
    if (pointers[MODULE_INFO]!.length !== 0) throw new GraphFormatError(`module ${i} has a module info record (Bun 1.4.4 writes none for this build)`);
    const name = latin1.decode(payload.subarray(pointers[NAME]!.offset, pointers[NAME]!.offset + pointers[NAME]!.length));
    if (!name.startsWith(BUNFS_ROOT)) throw new GraphFormatError(`module ${i} is named '${name}', outside ${BUNFS_ROOT}`);
    records.push({ pointers, fields: payload.slice(r + POINTERS * 8, r + RECORD_BYTES) });
    names.push(name);
  }
  const tail = readTail(payload, pv, modulesPtr.offset + modulesPtr.length, flags, count, o);
  // What follows the parts is the exec-argv string (Bun writes it next), so nothing unread lies between.
  if (tail.end !== argv.offset) throw new GraphFormatError(`${argv.offset - tail.end} unread bytes after the module table's parts`);
  for (const b of tail.builtins ?? []) if (!aligned(b.blob)) throw new GraphFormatError(`builtin ${b.id}'s bytecode is not ${BYTECODE_ALIGN}-byte aligned`);
  if (tail.stringTable && !aligned(tail.stringTable)) throw new GraphFormatError(`the bytecode string table is not ${BYTECODE_ALIGN}-byte aligned`);
  return {
    bin,
    view,
    sectionOffset,
    sectionHeader: sh,
    segmentHeader: ph,
    segmentOffset,
    segmentAlign,
    tailStart: segmentEnd,
    payload,
    records,
    names,
    offsets: payload.slice(o, o + OFFSETS_BYTES),
    argv,
    tail,
  };
}

/** What the graph embedded in an executable holds, for checks and benches. */
export interface GraphSummary {
  modules: GraphModule[];
  /** Builtin ids with embedded bytecode and their bytes. */
  builtins: { id: number; bytes: number }[];
  /** Bytes of the bytecode string table, 0 for none. */
  stringTableBytes: number;
  /** Whether the pre-linked module graph is embedded. */
  prelinked: boolean;
  /** The payload's length (the graph, without the section's own 8 bytes). */
  payloadBytes: number;
}

/** The graph embedded in executable `bin`. @throws GraphFormatError (see the module note). */
export function readGraph(bin: Uint8Array): GraphSummary {
  const g = locate(bin);
  return {
    modules: g.records.map((r, i) => ({ name: g.names[i]!, bytecodeBytes: r.pointers[BYTECODE]!.length })),
    builtins: (g.tail.builtins ?? []).map((b) => ({ id: b.id, bytes: b.blob.length })),
    stringTableBytes: g.tail.stringTable?.length ?? 0,
    prelinked: g.tail.prelinked !== null,
    payloadBytes: g.payload.length,
  };
}

/** What {@link keepBytecode} keeps besides the named modules' bytecode. */
export interface KeepOptions {
  /** Builtin ids whose bytecode stays: `"all"` (default) or a set (every id must be in the table). */
  builtins?: "all" | ReadonlySet<number>;
}

/** What {@link keepBytecode} did. */
export interface KeepResult {
  /** The rewritten executable. */
  bytes: Uint8Array;
  /** Names (`/$bunfs/root/…`) whose bytecode was kept, in graph order. */
  kept: string[];
  /** Bytecode bytes kept and dropped (modules and builtins; the string table counts as kept). */
  keptBytes: number;
  droppedBytes: number;
}

/**
 * Executable `bin` (a Bun 1.4.4 `--compile` build with bytecode) with bytecode kept only for the modules
 * named in `keep` (`/$bunfs/root/…` names) and the builtins `opts.builtins` names: the graph is written
 * anew (each module's name, contents, source map and origin path, the kept bytecode blobs with Bun's
 * alignment, the parts after the module table with their pointers moved), the `.bun` section, its segment
 * and the file shrink, and the sections after it move down by whole multiples of the segment's alignment. The result is read back and
 * compared. @throws GraphFormatError when the layout is not the expected one, a name in `keep` is not in
 * the graph or has no bytecode, a builtin id is not in the table, or the rewritten file does not read back
 * as written.
 */
export function keepBytecode(bin: Uint8Array, keep: ReadonlySet<string>, opts: KeepOptions = {}): KeepResult {
  const g = locate(bin);
  for (const k of keep) {
    const i = g.names.indexOf(k);
    if (i < 0) throw new GraphFormatError(`'${k}' is not a module of the graph`);
    if (g.records[i]!.pointers[BYTECODE]!.length === 0) throw new GraphFormatError(`'${k}' has no bytecode to keep`);
  }
  const builtinChoice = opts.builtins ?? "all";
  if (builtinChoice !== "all") {
    const ids = new Set((g.tail.builtins ?? []).map((b) => b.id));
    for (const id of builtinChoice) if (!ids.has(id)) throw new GraphFormatError(`builtin ${id} has no bytecode in the graph`);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  const put = (bytes: Uint8Array): number => {
    const at = size;
    chunks.push(bytes);
    size += bytes.length;
    return at;
  };
  const padTo = (to: number): void => {
    if (to > size) put(new Uint8Array(to - size));
  };
  const slice = (p: Pointer, nul: boolean): Uint8Array => g.payload.subarray(p.offset, p.offset + p.length + (nul ? 1 : 0));
  // A blob at payload offset x is at memory x + 8 from the page-aligned section start.
  const blob = (p: Pointer): Pointer => {
    padTo(roundUp(size + 8, BYTECODE_ALIGN) - 8);
    return { offset: put(slice(p, false)), length: p.length };
  };
  let keptBytes = 0;
  let droppedBytes = 0;
  // Blobs first, as Bun lays them out: modules' bytecode, builtins' bytecode, the string table.
  const bytecodeAt = new Map<number, Pointer>();
  for (const [i, r] of g.records.entries()) {
    const bc = r.pointers[BYTECODE]!;
    if (bc.length === 0) continue;
    if (!keep.has(g.names[i]!)) {
      droppedBytes += bc.length;
      continue;
    }
    bytecodeAt.set(i, blob(bc));
    keptBytes += bc.length;
  }
  const builtins: { id: number; blob: Pointer }[] = [];
  for (const b of g.tail.builtins ?? []) {
    if (builtinChoice !== "all" && !builtinChoice.has(b.id)) {
      droppedBytes += b.blob.length;
      continue;
    }
    builtins.push({ id: b.id, blob: blob(b.blob) });
    keptBytes += b.blob.length;
  }
  const stringTable = g.tail.stringTable ? blob(g.tail.stringTable) : null;
  keptBytes += stringTable?.length ?? 0;
  const prelinked = g.tail.prelinked ? { a: blob(g.tail.prelinked.a), b: blob(g.tail.prelinked.b), order: g.tail.prelinked.order } : null;
  // Then each module's strings, in table order.
  const out: Pointer[][] = [];
  for (const [i, r] of g.records.entries()) {
    const p = r.pointers;
    const strings = (k: number, nul: boolean): Pointer => (p[k]!.length === 0 ? NONE : { offset: put(slice(p[k]!, nul)), length: p[k]!.length });
    const name = strings(NAME, true);
    const contents = strings(CONTENTS, true);
    const sourcemap = strings(SOURCEMAP, false);
    const bc = bytecodeAt.get(i);
    // A module without bytecode has no origin path either, as in a build without bytecode.
    const origin = bc ? strings(ORIGIN, true) : NONE;
    out.push([name, contents, sourcemap, bc ?? NONE, NONE, origin]);
  }
  padTo(roundUp(size, 4));
  const list = new Uint8Array(g.records.length * RECORD_BYTES);
  const lv = new DataView(list.buffer);
  for (const [i, pointers] of out.entries()) {
    for (const [k, ptr] of pointers.entries()) {
      lv.setUint32(i * RECORD_BYTES + k * 8, ptr.offset, true);
      lv.setUint32(i * RECORD_BYTES + k * 8 + 4, ptr.length, true);
    }
    list.set(g.records[i]!.fields, i * RECORD_BYTES + POINTERS * 8);
  }
  const listAt = put(list);
  // The parts after the module table, in flag order, their pointers moved.
  const words = (...values: number[]): Uint8Array => {
    const b = new Uint8Array(4 * values.length);
    const v = new DataView(b.buffer);
    values.forEach((x, i) => v.setUint32(4 * i, x, true));
    return b;
  };
  if (g.tail.hashes) put(g.tail.hashes);
  if (g.tail.builtins) put(words(builtins.length, ...builtins.flatMap((b) => [b.id, b.blob.offset, b.blob.length])));
  if (stringTable) put(words(stringTable.offset, stringTable.length));
  if (g.tail.word8) put(g.tail.word8);
  if (prelinked) {
    put(words(prelinked.a.offset, prelinked.a.length, prelinked.b.offset, prelinked.b.length, prelinked.order.length / 4));
    put(prelinked.order);
  }
  const argvAt = put(slice(g.argv, true));
  const offsets = g.offsets.slice();
  const nv = new DataView(offsets.buffer);
  nv.setBigUint64(0, BigInt(size), true);
  nv.setUint32(8, listAt, true);
  nv.setUint32(12, list.length, true);
  nv.setUint32(20, argvAt, true);
  put(offsets);
  put(new TextEncoder().encode(TRAILER));
  const payloadLength = size;

  const sectionSize = 8 + payloadLength;
  const newTail = roundUp(g.sectionOffset + sectionSize, g.segmentAlign);
  const delta = newTail - g.tailStart;
  const result = new Uint8Array(g.bin.length + delta);
  result.set(g.bin.subarray(0, g.sectionOffset), 0);
  const rv = new DataView(result.buffer);
  rv.setBigUint64(g.sectionOffset, BigInt(payloadLength), true);
  let at = g.sectionOffset + 8;
  for (const c of chunks) {
    result.set(c, at);
    at += c.length;
  }
  result.set(g.bin.subarray(g.tailStart), newTail);
  // ELF header: the section header table moved; the segment and the .bun section shrank; later sections moved.
  const shoff = u64(g.view, 40);
  const newShoff = shoff + delta;
  rv.setBigUint64(40, BigInt(newShoff), true);
  const segSize = BigInt(newTail - g.segmentOffset);
  rv.setBigUint64(g.segmentHeader + 32, segSize, true);
  rv.setBigUint64(g.segmentHeader + 40, segSize, true);
  rv.setBigUint64(newShoff + (g.sectionHeader - shoff) + 32, BigInt(sectionSize), true);
  const shnum = g.view.getUint16(60, true);
  for (let i = 0; i < shnum; i++) {
    const o = newShoff + i * 64;
    const off = u64(rv, o + 24);
    if (off >= g.tailStart) rv.setBigUint64(o + 24, BigInt(off + delta), true);
  }
  checkRewrite(g, locate(result), keep, builtins.map((b) => b.id));
  return { bytes: result, kept: g.names.filter((n) => keep.has(n)), keptBytes, droppedBytes };
}

/** Compares the rewritten graph `b` with the original `a`: same modules and texts, bytecode only where kept and byte for byte, same shared parts. */
function checkRewrite(a: Located, b: Located, keep: ReadonlySet<string>, builtinIds: number[]): void {
  const bytes = (g: Located, p: Pointer): Buffer => Buffer.from(g.payload.buffer, g.payload.byteOffset + p.offset, p.length);
  const same = (p: Pointer, q: Pointer): boolean => bytes(a, p).equals(bytes(b, q));
  const fail = (what: string): never => {
    throw new GraphFormatError(`the rewritten graph does not read back as written: ${what}`);
  };
  if (b.records.length !== a.records.length) fail("module count");
  for (const [i, r] of b.records.entries()) {
    const o = a.records[i]!;
    const kept = keep.has(a.names[i]!);
    for (const k of [NAME, CONTENTS, SOURCEMAP]) if (!same(o.pointers[k]!, r.pointers[k]!)) fail(`${a.names[i]} pointer ${k}`);
    if (!Buffer.from(o.fields).equals(Buffer.from(r.fields))) fail(`${a.names[i]} fields`);
    if (kept ? !same(o.pointers[BYTECODE]!, r.pointers[BYTECODE]!) || !same(o.pointers[ORIGIN]!, r.pointers[ORIGIN]!) : r.pointers[BYTECODE]!.length + r.pointers[ORIGIN]!.length !== 0) {
      fail(`${a.names[i]} bytecode`);
    }
  }
  const ta = a.tail;
  const tb = b.tail;
  if (ta.flags !== tb.flags) fail("flags");
  if (ta.hashes && !Buffer.from(ta.hashes).equals(Buffer.from(tb.hashes!))) fail("source hashes");
  const bb = tb.builtins ?? [];
  if (bb.map((x) => x.id).join() !== builtinIds.join()) fail("builtin ids");
  for (const x of bb) if (!same(ta.builtins!.find((y) => y.id === x.id)!.blob, x.blob)) fail(`builtin ${x.id}`);
  if (ta.stringTable && !same(ta.stringTable, tb.stringTable!)) fail("string table");
  if (ta.word8 && !Buffer.from(ta.word8).equals(Buffer.from(tb.word8!))) fail("flag 8 word");
  if (ta.prelinked) {
    const p = tb.prelinked!;
    if (!same(ta.prelinked.a, p.a) || !same(ta.prelinked.b, p.b) || !Buffer.from(ta.prelinked.order).equals(Buffer.from(p.order))) fail("pre-linked graph");
  }
  if (a.view.getUint32(a.payload.byteOffset + a.payload.length - TRAILER.length - OFFSETS_BYTES + 16, true) !== b.view.getUint32(b.payload.byteOffset + b.payload.length - TRAILER.length - OFFSETS_BYTES + 16, true)) fail("entry point");
  if (!same(a.argv, b.argv)) fail("exec argv");
}

/**
 * The output chunks (`/$bunfs/root/…` names) that hold the modules `entries` (input paths relative to the
 * bundle root, e.g. `src/boot.ts`) and everything those chunks import statically, from a `Bun.build`
 * metafile (`outputs[path].entryPoint` and `.imports`). @throws GraphFormatError when an entry has no chunk
 * of its own (it was inlined in another chunk, or renamed).
 */
export function startPathChunks(metafile: Bun.BuildMetafile, entries: readonly string[]): Set<string> {
  const byEntry = new Map<string, string>();
  for (const [path, out] of Object.entries(metafile.outputs)) if (out.entryPoint !== undefined) byEntry.set(out.entryPoint, path);
  const todo: string[] = [];
  for (const e of entries) {
    const path = byEntry.get(e);
    if (path === undefined) throw new GraphFormatError(`no output chunk is built from start-path module ${e}`);
    todo.push(path);
  }
  const seen = new Set<string>();
  while (todo.length > 0) {
    const path = todo.pop()!;
    if (seen.has(path)) continue;
    seen.add(path);
    const out = metafile.outputs[path];
    if (out === undefined) throw new GraphFormatError(`the metafile names chunk ${path} but has no output for it`);
    for (const imp of out.imports) if (imp.kind === "import-statement") todo.push(imp.path);
  }
  return new Set([...seen].map((p) => BUNFS_ROOT + p.replace(/^\.\//, "")));
}
