/**
 * @module script/channel
 * The shared-memory channel from the script pool (main thread) to a sandbox worker: one SharedArrayBuffer per
 * script holding a one-frame mailbox (host → worker) and a cancel word. Between guest slices the worker blocks in
 * `Atomics.wait` on it, so a reply wakes the worker with one `Atomics.notify` instead of a MessagePort crossing
 * and a turn of its event loop. The worker's own messages (calls, `ready`, `yield`) still go on the script's
 * MessagePort: waking the main thread that way measured cheaper than `Atomics.waitAsync` (docs/performance.md,
 * "Issue 20, the shared-memory bridge").
 *
 * Layout (bytes): an Int32 header of `HEADER_WORDS` words, then up to `CAPACITY` bytes of mailbox. The buffer is a
 * growable SharedArrayBuffer made with `INITIAL_MAILBOX` bytes of mailbox; the host grows it (never past
 * `CHANNEL_BYTES`) before it writes a chunk that does not fit. A worker thread counts each buffer it receives
 * towards its next garbage collection at the buffer's current length (one wrapper per task), so a fixed 16 KiB
 * mailbox made every script, trivial or not, cost its worker 16 KiB of collector budget (docs/performance.md,
 * "a trivial script's collections"). A frame is a run of
 * records, integers little-endian u32, a string a u32 UTF-8 byte length and its bytes: 1 reply {id, payload} ·
 * 2 go. A frame larger than `CAPACITY` goes in chunks (`DOWN_TOTAL` says the whole frame's length; the worker
 * empties the mailbox after each chunk and the host writes the next).
 *
 * The worker can write anything into the buffer, and grow it (never past `CHANNEL_BYTES`, never shrink it). The host
 * reads two words of it, `DOWN_STATE` and `WORKER_PARKED`, and only compares them with 0 (a worker that never empties
 * the mailbox stalls its own script's replies until its deadline; one that claims to be parked costs the host a
 * notify per message); it reads the buffer's length only to see whether a reply fits the mailbox as it is and to grow
 * it before a write, and never reads a length or a byte the worker wrote. The host's views of the buffer are
 * length-tracking (made without a length), so a worker that grows it only gives the host more room to write into;
 * the host grows it itself before each chunk that does not fit. Loaded by the worker: no zod, no node modules.
 */
import type { HostMessage } from "./protocol.ts";

/**
 * The first character of a message the worker sends on the script's port (protocol.ts `WorkerBatch`): calls of a
 * slice still running (`c`), a slice's last calls and its end (`y`: the script waits on tools again), or `ready` (`r`,
 * alone). The calls follow it as batch records (script/bridge.ts `parseBatch`).
 */
export const UP_CALLS = "c";
export const UP_YIELD = "y";
export const UP_READY = "r";

/** Data bytes of the mailbox at most (a larger frame goes in chunks of this size). */
export const CAPACITY = 16 * 1024;
/**
 * Data bytes of the mailbox a new buffer starts with: a `go` or a small reply fits; a larger chunk grows the buffer
 * (`HostChannel`), the mailbox doubled until the chunk fits, up to `CAPACITY`.
 */
export const INITIAL_MAILBOX = 224;
/** Int32 header words (indexes below). */
export const HEADER_WORDS = 8;
/** Header word: 1 while the mailbox holds a chunk the worker has not read, else 0. */
export const DOWN_STATE = 0;
/** Header word: byte length of the chunk in the mailbox. */
export const DOWN_LEN = 1;
/** Header word: byte length of the whole frame the chunk belongs to. */
export const DOWN_TOTAL = 2;
/** Header word: 1 once the host cancelled the script. */
export const CANCEL = 3;
/** Header word: bumped by the host after each down chunk and on cancel; the worker waits on it (no wake-up lost between its check and its wait). */
export const SIGNAL = 4;
/**
 * Header word: 1 while the worker is parked (or about to park) in `Atomics.wait` on `SIGNAL`. The host calls
 * `Atomics.notify` only then: a notify costs the main thread a system call, and the worker usually sees the reply
 * while it still spins (`SPIN_MS`). Set before the worker's last look at `SIGNAL` and read by the host after its
 * bump (both sequentially consistent), so a worker that parks always has the bump seen or the notify coming.
 */
export const WORKER_PARKED = 5;
/** Header word: 1 while the host's pump waits for the worker to empty the mailbox; the worker notifies `DOWN_STATE` only then. */
export const HOST_WAITING = 6;
/**
 * How long the worker polls the channel before it parks in `Atomics.wait`, ms. A sequential tool call's reply
 * usually comes within it (the host's turn-around is tens of µs), so the worker is not parked and woken: this
 * bounds the CPU it spends per wait to this much (a reply that takes longer, e.g. a gated or parked call, costs
 * one spin, then the thread sleeps).
 */
export const SPIN_MS = 0.05;
/** Bytes of the whole buffer at most (its `maxByteLength`). */
export const CHANNEL_BYTES = HEADER_WORDS * 4 + CAPACITY;
const DOWN_DATA = HEADER_WORDS * 4;
/** Bytes of a new buffer. */
export const INITIAL_CHANNEL_BYTES = DOWN_DATA + INITIAL_MAILBOX;
/** Bytes of a reply record before its payload's UTF-8: kind u8, id u32, payload length u32. */
const REPLY_HEAD = 9;

const enum Down {
  Reply = 1,
  Go = 2,
}

const encoder = new TextEncoder();
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/** A fresh buffer laid out for one script: growable, `INITIAL_CHANNEL_BYTES` long, at most `CHANNEL_BYTES`. */
export function newChannelBuffer(): SharedArrayBuffer {
  return new SharedArrayBuffer(INITIAL_CHANNEL_BYTES, { maxByteLength: CHANNEL_BYTES });
}

/**
 * True for a buffer this module can use as a channel: growable with `maxByteLength` `CHANNEL_BYTES` and at least
 * `INITIAL_CHANNEL_BYTES` long (what `newChannelBuffer` makes; neither end can shrink it, so the host's views of the
 * mailbox can be made), or a fixed buffer of `CHANNEL_BYTES`.
 */
export function isChannelBuffer(buf: SharedArrayBuffer): boolean {
  return buf.growable ? buf.maxByteLength === CHANNEL_BYTES && buf.byteLength >= INITIAL_CHANNEL_BYTES : buf.byteLength === CHANNEL_BYTES;
}

/**
 * Makes an ended script's buffer fresh for the next script: its header words zeroed (the mailbox bytes are only read
 * up to a length the host writes). Only for a buffer no worker touches any more (its worker returned).
 */
export function resetChannelBuffer(buf: SharedArrayBuffer): void {
  new Int32Array(buf, 0, HEADER_WORDS).fill(0);
}

/** Grows into a frame: u8 kinds, u32 integers, strings as u32 length + UTF-8. */
class FrameWriter {
  buf = new Uint8Array(256);
  view = new DataView(this.buf.buffer);
  len = 0;

  #room(n: number): void {
    if (this.len + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.len + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.len));
    this.buf = next;
    this.view = new DataView(next.buffer);
  }

  /** Starts a new frame; a buffer grown past 4 × CAPACITY by a large one is let go (not kept for the pool's life). */
  reset(): void {
    this.len = 0;
    if (this.buf.length > 4 * CAPACITY) {
      this.buf = new Uint8Array(256);
      this.view = new DataView(this.buf.buffer);
    }
  }

  u8(v: number): void {
    this.#room(1);
    this.buf[this.len++] = v;
  }

  u32(v: number): void {
    this.#room(4);
    this.view.setUint32(this.len, v, true);
    this.len += 4;
  }

  str(s: string): void {
    this.#room(4 + s.length * 3);
    const { written } = encoder.encodeInto(s, this.buf.subarray(this.len + 4));
    this.view.setUint32(this.len, written, true);
    this.len += 4 + written;
  }

  bytes(): Uint8Array {
    return this.buf.subarray(0, this.len);
  }
}

/** The host's writer, reused (a frame is copied out of it before the next is written). */
const downWriter = new FrameWriter();

/**
 * Encodes host messages (`go`, `reply`) as a down frame (a view of a reused buffer: valid until the next
 * `encodeDown`); `cancel` has its own word and is never in a frame.
 */
export function encodeDown(msgs: readonly Exclude<HostMessage, { t: "cancel" }>[]): Uint8Array {
  const w = downWriter;
  w.reset();
  for (const m of msgs) {
    switch (m.t) {
      case "reply":
        w.u8(Down.Reply);
        w.u32(m.id);
        w.str(m.payload);
        break;
      case "go":
        w.u8(Down.Go);
        break;
      default:
        assertNever(m);
    }
  }
  return w.bytes();
}

/** Reads records out of a frame copy; every read is bounds-checked. */
class FrameReader {
  pos = 0;
  readonly view: DataView;
  constructor(readonly bytes: Uint8Array) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  get done(): boolean {
    return this.pos >= this.bytes.length;
  }
  u8(): number {
    if (this.pos + 1 > this.bytes.length) throw new RangeError("frame cut short");
    return this.bytes[this.pos++]!;
  }
  u32(): number {
    if (this.pos + 4 > this.bytes.length) throw new RangeError("frame cut short");
    const v = this.view.getUint32(this.pos, true);
    this.pos += 4;
    return v;
  }
  /** A string's UTF-8 bytes, undecoded (a view of the frame). @throws RangeError for a length past the frame's end. */
  utf8(): Uint8Array {
    const n = this.u32();
    if (n > this.bytes.length - this.pos) throw new RangeError("string length past the frame's end");
    const b = this.bytes.subarray(this.pos, this.pos + n);
    this.pos += n;
    return b;
  }
}

/**
 * A host message as the worker reads it off the channel: `go`, or a reply whose payload is left as its UTF-8 bytes (a
 * view of the worker's own copy of the frame), which the worker copies into the guest's memory as they are instead of
 * decoding them into a string and encoding that again (script/direct.ts `callWithUtf8`).
 */
export type DownMessage = { t: "go" } | { t: "reply"; id: number; payload: Uint8Array };

/**
 * Reads a down frame as `parseDownFrame` does, the replies' payloads left as UTF-8 bytes; null when malformed. Their
 * UTF-8 is not checked here: the host made them with `TextEncoder` (the worker trusts the host, not the reverse), and
 * QuickJS reads any bytes as a string without reading past them.
 */
export function readDownFrame(bytes: Uint8Array): DownMessage[] | null {
  const r = new FrameReader(bytes);
  const out: DownMessage[] = [];
  try {
    while (!r.done) {
      const kind = r.u8();
      switch (kind) {
        case Down.Reply: {
          const id = r.u32();
          if (id < 1) return null;
          out.push({ t: "reply", id, payload: r.utf8() });
          break;
        }
        case Down.Go:
          out.push({ t: "go" });
          break;
        default:
          return null;
      }
    }
  } catch {
    return null;
  }
  return out;
}

/**
 * A down frame as {@link readDownFrame} reads it, the replies' payloads decoded as strict UTF-8 (for tests and tools that
 * look at frames; the worker keeps the bytes); null when malformed or a payload is not UTF-8.
 */
export function parseDownFrame(bytes: Uint8Array): HostMessage[] | null {
  const msgs = readDownFrame(bytes);
  if (msgs === null) return null;
  try {
    return msgs.map((m) => (m.t === "reply" ? { t: "reply", id: m.id, payload: strictUtf8.decode(m.payload) } : m));
  } catch {
    return null;
  }
}

/** What `WorkerChannel.wait` returned: host messages, the cancel word, or the timeout. */
export type WaitResult = { t: "messages"; msgs: DownMessage[] } | { t: "cancel" } | { t: "timeout" };

/** The worker's end: sends without blocking, waits (blocking the thread) for the host. */
export class WorkerChannel {
  readonly #i32: Int32Array;
  readonly #u8: Uint8Array;
  /** Chunks of a down frame received so far. */
  #parts: Uint8Array[] = [];
  #partBytes = 0;
  /** When the current wait began polling (`performance.now()`), 0 before it did. */
  #spinFrom = 0;

  /** @throws Error when `buf` is not a channel buffer (`isChannelBuffer`: wrong size). */
  constructor(buf: SharedArrayBuffer) {
    if (!isChannelBuffer(buf)) throw new Error("the script's channel buffer has the wrong size");
    this.#i32 = new Int32Array(buf, 0, HEADER_WORDS);
    this.#u8 = new Uint8Array(buf); // tracks the buffer's length as the host grows it
  }

  /** True once the host cancelled the script (read by the guest's interrupt handler too). */
  get cancelled(): boolean {
    return Atomics.load(this.#i32, CANCEL) === 1;
  }

  /**
   * Blocks the thread until the host writes a whole down frame, cancels, or `timeoutMs` passes. The cancel
   * word wins over a frame. @throws Error when the host wrote a malformed frame (a bug on the host side).
   */
  wait(timeoutMs: number): WaitResult {
    const until = performance.now() + timeoutMs;
    this.#spinFrom = 0;
    for (;;) {
      const signal = Atomics.load(this.#i32, SIGNAL);
      if (this.cancelled) return { t: "cancel" };
      if (Atomics.load(this.#i32, DOWN_STATE) === 1) {
        const msgs = this.#takeChunk();
        if (msgs) return { t: "messages", msgs };
        continue; // a chunk of a larger frame: the host writes the next one
      }
      const now = performance.now();
      const left = until - now;
      if (left <= 0) return { t: "timeout" };
      if (this.#spinFrom === 0) this.#spinFrom = now;
      if (now - this.#spinFrom < SPIN_MS) continue; // poll briefly before parking (SPIN_MS): no system call either side
      Atomics.store(this.#i32, WORKER_PARKED, 1);
      Atomics.wait(this.#i32, SIGNAL, signal, left);
      Atomics.store(this.#i32, WORKER_PARKED, 0);
    }
  }

  /** Takes the chunk in the down mailbox and empties it; the messages once the frame is whole, else null. */
  #takeChunk(): DownMessage[] | null {
    const len = Atomics.load(this.#i32, DOWN_LEN);
    const total = Atomics.load(this.#i32, DOWN_TOTAL);
    // the host grows the buffer before it sets DOWN_STATE, so a chunk it wrote is within the length seen here
    if (len < 0 || len > CAPACITY || DOWN_DATA + len > this.#u8.length || total < len || this.#partBytes + len > total) throw new Error("the host wrote a malformed chunk on the script's channel");
    const chunk = this.#u8.slice(DOWN_DATA, DOWN_DATA + len);
    Atomics.store(this.#i32, DOWN_STATE, 0);
    if (Atomics.load(this.#i32, HOST_WAITING) === 1) Atomics.notify(this.#i32, DOWN_STATE);
    let frame = chunk;
    if (this.#partBytes > 0 || len < total) {
      this.#parts.push(chunk);
      this.#partBytes += len;
      if (this.#partBytes < total) return null;
      frame = new Uint8Array(total);
      let at = 0;
      for (const p of this.#parts) {
        frame.set(p, at);
        at += p.length;
      }
      this.#parts = [];
      this.#partBytes = 0;
    }
    const msgs = readDownFrame(frame);
    if (!msgs) throw new Error("the host wrote a malformed frame on the script's channel");
    return msgs;
  }
}

/**
 * The host's end (main thread). `send` queues messages for the worker (several queued while the worker runs go as
 * one frame); `cancel` sets the cancel word and wakes the worker; `close` stops sending.
 */
export class HostChannel {
  readonly #i32: Int32Array;
  readonly #u8: Uint8Array;
  readonly #view: DataView;
  /**
   * The mailbox past a reply record's head: where `#writeReply` encodes the payload. Length-tracking (made without a
   * length), like `#u8` and `#view`: it follows the buffer's growth, by the host or the worker, and never reaches past
   * its current length (a fixed-length view past it would throw when made, and would not see a later growth).
   */
  readonly #replyText: Uint8Array;
  #queue: Exclude<HostMessage, { t: "cancel" }>[] = [];
  #pumping = false;
  #closed = false;

  readonly #buf: SharedArrayBuffer;

  /** @throws Error when `buf` is not a channel buffer (`isChannelBuffer`). */
  constructor(buf: SharedArrayBuffer) {
    if (!isChannelBuffer(buf)) throw new Error("the script's channel buffer has the wrong size");
    this.#buf = buf;
    this.#i32 = new Int32Array(buf, 0, HEADER_WORDS);
    this.#u8 = new Uint8Array(buf); // tracks the buffer's length as `#write` grows it
    this.#view = new DataView(buf);
    this.#replyText = new Uint8Array(buf, DOWN_DATA + REPLY_HEAD);
  }

  /** Queues `msg` for the worker; it is written as soon as the down mailbox is empty. */
  send(msg: Exclude<HostMessage, { t: "cancel" }>): void {
    if (this.#closed) return;
    // the common case of a sequential call: one reply, nothing queued, the mailbox empty: encoded straight into it
    if (msg.t === "reply" && !this.#pumping && this.#queue.length === 0 && Atomics.load(this.#i32, DOWN_STATE) === 0 && this.#writeReply(msg.id, msg.payload)) return;
    this.#queue.push(msg);
    if (this.#pumping) return;
    if (Atomics.load(this.#i32, DOWN_STATE) === 0) {
      // the common case: the mailbox is empty; a frame that fits is written now, without the pump's promise
      const frame = encodeDown(this.#queue);
      if (frame.length <= CAPACITY) {
        this.#queue = [];
        this.#write(frame, frame.length);
        return;
      }
    }
    void this.#pump();
  }

  /**
   * Encodes one reply record straight into the empty down mailbox (the frame `encodeDown` would make) and wakes the
   * worker; false, with nothing published, when it does not fit in the mailbox at the buffer's current length (the
   * caller then queues it: the queued way grows the buffer, or sends the frame in chunks). Never grows the buffer.
   */
  #writeReply(id: number, payload: string): boolean {
    // `#replyText` follows the buffer's current length: a reply that does not fit the mailbox as it is now goes the
    // queued way, whose `#write` grows the buffer first. A string has at most as many UTF-16 units as UTF-8 bytes.
    const room = this.#replyText;
    if (payload.length > room.length) return false;
    const { read, written } = encoder.encodeInto(payload, room);
    if (read < payload.length) return false; // bytes encoded so far are left unpublished (DOWN_STATE stays 0)
    const u8 = this.#u8;
    u8[DOWN_DATA] = Down.Reply;
    this.#view.setUint32(DOWN_DATA + 1, id, true);
    this.#view.setUint32(DOWN_DATA + 5, written, true);
    const i32 = this.#i32;
    Atomics.store(i32, DOWN_LEN, REPLY_HEAD + written);
    Atomics.store(i32, DOWN_TOTAL, REPLY_HEAD + written);
    Atomics.store(i32, DOWN_STATE, 1);
    this.#wake();
    return true;
  }

  /**
   * Writes `chunk` (at most CAPACITY bytes) of a frame of `total` bytes into the empty down mailbox, growing the buffer
   * first when the chunk does not fit (its mailbox doubled from `INITIAL_MAILBOX` until it fits, at most `CAPACITY`),
   * and wakes the worker.
   */
  #write(chunk: Uint8Array, total: number): void {
    const i32 = this.#i32;
    const need = DOWN_DATA + chunk.length;
    if (this.#buf.byteLength < need) {
      let mailbox = INITIAL_MAILBOX;
      while (DOWN_DATA + mailbox < need) mailbox *= 2;
      try {
        this.#buf.grow(Math.min(CHANNEL_BYTES, DOWN_DATA + mailbox));
      } catch {
        // the worker grew it meanwhile past that length (it may write anything, grow included), or no memory was left
      }
      if (this.#buf.byteLength < need) {
        // cannot happen short of the process running out of memory: nothing more is sent, the script ends at its deadline
        this.close();
        return;
      }
    }
    this.#u8.set(chunk, DOWN_DATA);
    Atomics.store(i32, DOWN_LEN, chunk.length);
    Atomics.store(i32, DOWN_TOTAL, total);
    Atomics.store(i32, DOWN_STATE, 1);
    this.#wake();
  }

  /** Bumps `SIGNAL`; notifies it only when the worker is parked on it (`WORKER_PARKED`). */
  #wake(): void {
    Atomics.add(this.#i32, SIGNAL, 1);
    if (Atomics.load(this.#i32, WORKER_PARKED) !== 0) Atomics.notify(this.#i32, SIGNAL);
  }

  async #pump(): Promise<void> {
    this.#pumping = true;
    const i32 = this.#i32;
    try {
      while (this.#queue.length > 0 && !this.#closed) {
        const frame = encodeDown(this.#queue).slice(); // owned: the writer is reused while this frame waits
        this.#queue = [];
        let at = 0;
        do {
          // the worker empties the mailbox; waiting on whatever value is there (not on 1) keeps a worker that writes
          // another value from turning this into a busy loop on the main thread: only a notify wakes it
          for (let state = Atomics.load(i32, DOWN_STATE); state !== 0; state = Atomics.load(i32, DOWN_STATE)) {
            if (this.#closed) return;
            Atomics.store(i32, HOST_WAITING, 1);
            const w = Atomics.waitAsync(i32, DOWN_STATE, state);
            if (w.async) await w.value;
            // closed meanwhile: the buffer may already serve the next script, whose header this end must not touch
            if (this.#closed) return;
            Atomics.store(i32, HOST_WAITING, 0);
          }
          if (this.#closed) return;
          const n = Math.min(CAPACITY, frame.length - at);
          this.#write(frame.subarray(at, at + n), frame.length);
          at += n;
        } while (at < frame.length);
      }
    } finally {
      this.#pumping = false;
    }
  }

  /** Sets the cancel word and wakes the worker (blocked or not: its interrupt handler reads the word too). */
  cancel(): void {
    Atomics.store(this.#i32, CANCEL, 1);
    this.#wake();
  }

  /** Stops sending; wakes this end's own pending wait for the mailbox so nothing stays parked; this end writes nothing into the buffer after. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#queue = [];
    Atomics.notify(this.#i32, DOWN_STATE);
  }
}

function assertNever(v: never): never {
  throw new Error(`unexpected message ${JSON.stringify(v)}`);
}
