/**
 * @module script/channel.test
 * The shared-memory channel between the script pool and its workers (script/channel.ts), with real worker
 * threads and real QuickJS: cancel and the wall-clock deadline while the worker is blocked in `Atomics.wait`,
 * cancel of a busy guest through the shared cancel word, payloads larger than the mailbox both ways, the growable
 * buffer (starts small, grown by the host only as far as a chunk needs), a misbehaving test worker (a scribbled
 * channel, malformed messages, outcomes the pool's hand check leaves to the schema), and many scripts at once.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { CAPACITY, CHANNEL_BYTES, encodeDown, HostChannel, INITIAL_CHANNEL_BYTES, newChannelBuffer, parseDownFrame, readDownFrame, resetChannelBuffer } from "./channel.ts";
import type { ToolOutcome } from "./protocol.ts";
import { ScriptPool, type RunOptions } from "./pool.ts";

const LIMITS: RunOptions = { cpuTimeoutMs: 30_000, wallTimeoutMs: 60_000, maxToolCalls: 10_000, maxLogBytes: 64 * 1024, maxResultBytes: 4 * 1024 * 1024 };
const echo = async (_n: string, args: unknown): Promise<ToolOutcome> => ({ ok: true, result: args });

let pool: ScriptPool;
beforeAll(() => {
  pool = new ScriptPool({ workers: 2, memoryMb: 64, stackKb: 512 });
});
afterAll(async () => {
  await pool.close();
});

describe("frames", () => {
  test("down frames round-trip, multi-byte UTF-8 included; a malformed one is refused", () => {
    const down = [{ t: "reply", id: 7, payload: '{"ok":true,"result":"ß😀"}' }, { t: "go" }] as const;
    const frame = encodeDown(down).slice();
    expect(parseDownFrame(frame)).toEqual([...down]);
    const longPayload = frame.slice();
    new DataView(longPayload.buffer).setUint32(5, 0xffff_fff0, true);
    const badUtf8 = frame.slice();
    badUtf8[9] = 0xff;
    for (const bad of [frame.slice(0, 12), longPayload, badUtf8, new Uint8Array([9])]) expect(parseDownFrame(bad)).toBeNull();
    // the worker's reading: the same records, each payload its UTF-8 bytes; the same cuts refused
    expect(readDownFrame(frame)).toEqual([{ t: "reply", id: 7, payload: new TextEncoder().encode(down[0].payload) }, { t: "go" }]);
    for (const bad of [frame.slice(0, 12), longPayload, new Uint8Array([9])]) expect(readDownFrame(bad)).toBeNull();
  });

  test("a reply the host writes straight into the mailbox is the frame encodeDown makes", () => {
    const buf = newChannelBuffer();
    const host = new HostChannel(buf);
    const payload = '{"ok":true,"result":"ß😀"}';
    host.send({ t: "reply", id: 9, payload });
    const header = new Int32Array(buf, 0, 8);
    expect(header[0]).toBe(1); // DOWN_STATE: a chunk waits
    const written = new Uint8Array(buf, 32, header[1]!).slice();
    expect(header[2]).toBe(written.length); // the whole frame in one chunk
    expect(written).toEqual(encodeDown([{ t: "reply", id: 9, payload }]).slice());
    host.close();
  });
});

describe("a reused buffer", () => {
  // FINDING (attack on reused buffers): an ended script's host end could still have its pump parked on the mailbox
  // (a reply larger than the mailbox, never read). Woken by close() after the buffer went to the next script, it
  // cleared HOST_WAITING in that script's header: the next script's worker then emptied the mailbox without notifying,
  // and that script's own chunked reply stalled until its deadline. Fixed: a closed host end writes nothing more.
  test("the previous script's host end, woken after its buffer was reused, does not stall the next script's chunked reply", async () => {
    const buf = newChannelBuffer();
    const old = new HostChannel(buf);
    old.send({ t: "reply", id: 1, payload: "o".repeat(3 * CAPACITY) }); // its first chunk fills the mailbox; the pump waits
    old.close(); // the script ended; its worker returned without reading
    resetChannelBuffer(buf); // the buffer serves the next script
    const next = new HostChannel(buf);
    next.send({ t: "reply", id: 1, payload: "n".repeat(3 * CAPACITY) }); // chunked: its pump waits for the worker
    await new Promise((r) => setTimeout(r, 50)); // the old pump's wake-up from close() runs now
    const worker = new Worker(new URL("../../test/fixtures/channel-reader-worker.ts", import.meta.url).href);
    try {
      const got = new Promise((r) => worker.addEventListener("message", (e) => r(e.data), { once: true }));
      worker.postMessage({ buf, timeoutMs: 5000 });
      expect(await got).toEqual({ t: "messages", lengths: [3 * CAPACITY] });
    } finally {
      next.close();
      worker.terminate();
    }
  }, 30_000);
});

describe("a growable buffer", () => {
  /** Sends one reply of `payload` on `buf` and has a real worker read it with the sandbox worker's own end. */
  async function deliver(buf: SharedArrayBuffer, payload: string): Promise<unknown> {
    const host = new HostChannel(buf);
    const worker = new Worker(new URL("../../test/fixtures/channel-reader-worker.ts", import.meta.url).href);
    try {
      const got = new Promise((r) => worker.addEventListener("message", (e) => r(e.data), { once: true }));
      worker.postMessage({ buf, timeoutMs: 10_000 });
      host.send({ t: "reply", id: 1, payload });
      return await got;
    } finally {
      host.close();
      worker.terminate();
    }
  }

  // a reply frame is 1 kind byte + u32 id + u32 length + the payload
  for (const n of [1, INITIAL_CHANNEL_BYTES - 32 - 9, INITIAL_CHANNEL_BYTES - 32 - 8, 5000, CAPACITY - 9, 3 * CAPACITY]) {
    test(`a new buffer starts at ${INITIAL_CHANNEL_BYTES} bytes; a ${n}-byte reply grows it only as far as needed (at most ${CHANNEL_BYTES}) and arrives whole`, async () => {
      const buf = newChannelBuffer();
      expect([buf.growable, buf.byteLength, buf.maxByteLength]).toEqual([true, INITIAL_CHANNEL_BYTES, CHANNEL_BYTES]);
      expect(await deliver(buf, "r".repeat(n))).toEqual({ t: "messages", lengths: [n] });
      // the header (32 bytes) and the first chunk; the mailbox doubles from its first size until that fits
      const need = 32 + Math.min(CAPACITY, 9 + n);
      let length = INITIAL_CHANNEL_BYTES;
      while (length < need) length = 32 + (length - 32) * 2;
      expect(buf.byteLength).toBe(Math.min(CHANNEL_BYTES, length));
    });
  }

  test("a buffer the worker grew itself (it may write anything) is used as it is: the reply arrives, nothing thrown on the host", async () => {
    const buf = newChannelBuffer();
    buf.grow(INITIAL_CHANNEL_BYTES + 1001); // an odd length no host growth makes
    expect(await deliver(buf, "w".repeat(900))).toEqual({ t: "messages", lengths: [900] });
    expect(buf.byteLength).toBe(INITIAL_CHANNEL_BYTES + 1001);
    expect(await deliver(buf, "w".repeat(1500))).toEqual({ t: "messages", lengths: [1500] });
    expect(buf.byteLength).toBe(32 + (INITIAL_CHANNEL_BYTES - 32) * 8);
  });

  test("a fixed buffer of the whole size is still a channel; any other length is refused on both ends", async () => {
    expect(await deliver(new SharedArrayBuffer(CHANNEL_BYTES), "f".repeat(3 * CAPACITY))).toEqual({ t: "messages", lengths: [3 * CAPACITY] });
    expect(() => new HostChannel(new SharedArrayBuffer(CHANNEL_BYTES - 1))).toThrow("wrong size");
    expect(() => new HostChannel(new SharedArrayBuffer(64, { maxByteLength: 2 * CHANNEL_BYTES }))).toThrow("wrong size");
    // growable with the right maximum but shorter than a new buffer: none is made so, and the host's mailbox views need it
    expect(() => new HostChannel(new SharedArrayBuffer(INITIAL_CHANNEL_BYTES - 1, { maxByteLength: CHANNEL_BYTES }))).toThrow("wrong size");
  });
});

describe("a worker blocked on the channel", () => {
  test("cancel reaches a script waiting on a tool: cancelled, and its worker is not replaced", async () => {
    await pool.run("return 1", LIMITS, echo);
    const before = pool.threadIds.slice().sort();
    const ac = new AbortController();
    let reached!: () => void;
    const parked = new Promise<void>((r) => (reached = r));
    const run = pool.run("await tools.park({}); return 'no';", { ...LIMITS, signal: ac.signal }, async (_n, _a, signal) => {
      reached();
      await new Promise((r) => signal.addEventListener("abort", r, { once: true }));
      return { ok: true, result: null };
    });
    await parked;
    ac.abort();
    const r = await run;
    expect(r.ok ? "ok" : r.error).toEqual({ code: "cancelled", message: "the script was cancelled by its caller" });
    expect(pool.threadIds.slice().sort()).toEqual(before);
    expect(await pool.run("return await tools.echo(2)", LIMITS, echo)).toMatchObject({ ok: true, value: 2 });
  });

  test("cancel stops a busy guest through the shared cancel word, without replacing its worker", async () => {
    await pool.run("return 1", LIMITS, echo);
    const before = pool.threadIds.slice().sort();
    const ac = new AbortController();
    let reached!: () => void;
    const spinning = new Promise<void>((r) => (reached = r));
    const run = pool.run("await tools.mark({}); for (;;) {}", { ...LIMITS, signal: ac.signal }, async () => {
      reached();
      return { ok: true, result: null };
    });
    await spinning;
    ac.abort();
    const r = await run;
    expect(r.ok ? "ok" : r.error).toEqual({ code: "cancelled", message: "the script was cancelled by its caller" });
    expect(pool.threadIds.slice().sort()).toEqual(before);
  });

  test("the wall-clock deadline ends a script blocked on a tool that never answers, from the worker itself", async () => {
    await pool.run("return 1", LIMITS, echo);
    const before = pool.threadIds.slice().sort();
    const r = await pool.run("await tools.never({});", { ...LIMITS, wallTimeoutMs: 300 }, () => new Promise<ToolOutcome>(() => {}));
    expect(r.ok ? "ok" : r.error.code).toBe("script_timeout");
    // the worker's own deadline, not the host's watchdog (which replaces the worker and says so)
    expect(r.ok ? "" : r.error.message).toContain("tool waits included");
    expect(pool.threadIds.slice().sort()).toEqual(before);
  });
});

describe("payloads larger than the mailbox", () => {
  test(`a ${(5 * CAPACITY) >> 10} KiB result (in chunks) and argument arrive whole, UTF-8 intact`, async () => {
    const big = "ab€😀".repeat(Math.ceil((5 * CAPACITY) / 9));
    const seen: string[] = [];
    const r = await pool.run(
      "const a = await tools.big({}); const b = await tools.echo({ s: a }); const c = await Promise.all([tools.big({}), tools.big({}), tools.echo({ s: 'small' })]); return [a.length, b.s === a, c[0] === a, c[1] === a, c[2].s];",
      LIMITS,
      async (name, args) => {
        if (name === "big") return { ok: true, result: big };
        seen.push((args as { s: string }).s);
        return { ok: true, result: args };
      },
    );
    expect(r).toMatchObject({ ok: true, value: [big.length, true, true, true, "small"], calls: 5 });
    expect(seen).toEqual([big, "small"]);
  });
});

describe("attack2: replies at the mailbox's edges and across runs on one thread (held)", () => {
  // a reply frame is 1 kind byte + u32 id + u32 length + the payload {"ok":true,"result":"…"} (23 bytes around the string)
  const stringFor = (frameBytes: number) => "a".repeat(frameBytes - 9 - 23);

  test("frames of CAPACITY - 1, CAPACITY, CAPACITY + 1, 2 × CAPACITY ± 1 bytes, and 4-byte UTF-8 straddling each chunk boundary, arrive whole", async () => {
    const results: string[] = [];
    for (const n of [CAPACITY - 1, CAPACITY, CAPACITY + 1, 2 * CAPACITY - 1, 2 * CAPACITY, 2 * CAPACITY + 1]) results.push(stringFor(n));
    for (const shift of [0, 1, 2, 3]) {
      // the emoji's 4 bytes start `shift` + 1 bytes before the first chunk's end, and again before the second's
      const head = "a".repeat(CAPACITY - 9 - 21 - shift - 1);
      results.push(`${head}😀${"b".repeat(CAPACITY - 4)}😀€ß\ud800`);
    }
    const r = await pool.run(`const out = []; for (let i = 0; i < ${results.length}; i++) out.push(await tools.get({ i })); return out;`, LIMITS, async (_n, args) => ({ ok: true, result: results[(args as { i: number }).i] }));
    expect(r).toMatchObject({ ok: true, value: results });
  });

  test("a script that ends (deadline, cancel) while its chunked reply is half written: the next script on that thread gets only its own replies", async () => {
    await using one = new ScriptPool({ workers: 1, memoryMb: 64, stackKb: 512, maxScripts: 1 });
    expect(await one.run("return 1", LIMITS, echo)).toMatchObject({ ok: true });
    const thread = one.threadIds.slice();
    // 32 calls fill a batch, so they reach the host while the guest spins; the guest never waits again, so the worker
    // never empties the mailbox: the first chunk of the 4-chunk reply to call 1 stays there, the rest never written
    const SPIN = "for (let i = 0; i < 32; i++) tools.part({ i }); for (;;) {}";
    const big = "z".repeat(4 * CAPACITY);
    let served = 0;
    const timedOut = await one.run(SPIN, { ...LIMITS, cpuTimeoutMs: 300 }, async () => {
      served++;
      return { ok: true, result: big };
    });
    expect(timedOut.ok ? "ok" : timedOut.error.code).toBe("script_timeout");
    const ac = new AbortController();
    const cancelled = await one.run(SPIN, { ...LIMITS, signal: ac.signal }, async (_n, args) => {
      served++;
      if ((args as { i: number }).i === 31) setTimeout(() => ac.abort(), 0);
      return { ok: true, result: big };
    });
    expect(cancelled.ok ? "ok" : cancelled.error).toEqual({ code: "cancelled", message: "the script was cancelled by its caller" });
    expect(served).toBe(64);
    const mine = await one.run("const out = []; for (let i = 0; i < 5; i++) out.push(await tools.echo({ i })); return out;", LIMITS, echo);
    expect(mine).toMatchObject({ ok: true, value: [0, 1, 2, 3, 4].map((i) => ({ i })) });
    expect(one.threadIds).toEqual(thread); // nothing was replaced: the worker itself stopped both
  });
});

describe("attack2: cancel of a script still queued for a thread", () => {
  // attack2: it ended "its worker was replaced because it did not stop", though it had no worker and nothing was replaced
  test("ends cancelled, 'before it started', and replaces no worker; the script ahead of it and the next one are unaffected", async () => {
    await using one = new ScriptPool({ workers: 1, memoryMb: 64, stackKb: 512, maxScripts: 1 });
    expect(await one.run("return 1", LIMITS, echo)).toMatchObject({ ok: true });
    const thread = one.threadIds.slice();
    let release!: () => void;
    let reached!: () => void;
    const parked = new Promise<void>((r) => (reached = r));
    const ahead = one.run("await tools.park({}); return 'ahead'", LIMITS, async () => {
      reached();
      await new Promise<void>((r) => (release = r));
      return { ok: true, result: null };
    });
    await parked; // the only thread is taken: the next script waits in the queue
    const ac = new AbortController();
    const queued = one.run("return 'queued'", { ...LIMITS, signal: ac.signal }, echo);
    await new Promise((r) => setImmediate(r)); // run()'s awaits are on settled promises: after this turn the task is in tinypool's queue
    ac.abort();
    const r = await queued;
    expect(r.ok ? "ok" : r.error).toEqual({ code: "cancelled", message: "the script was cancelled before it started" });
    release();
    expect(await ahead).toMatchObject({ ok: true, value: "ahead" });
    expect(await one.run("return await tools.echo(5)", LIMITS, echo)).toMatchObject({ ok: true, value: 5 });
    expect(one.threadIds).toEqual(thread);
    expect(one.workerErrors).toEqual([]);
  });
});

describe("replies larger than the script's memory", () => {
  // attack2: the reply's copy into the guest (QuickJS newString) outgrew the instance's capped WASM memory, the
  // module faulted ("Out of bounds memory access") and the script ended `internal` ("run the script again": it
  // fails again) instead of `script_memory_limit`
  test("a reply larger than the whole memory limit ends script_memory_limit; the next script on the thread is fine", async () => {
    await using small = new ScriptPool({ workers: 1, memoryMb: 16, stackKb: 512, maxScripts: 1 });
    const huge = "z".repeat(40 * 2 ** 20);
    const r = await small.run("const a = await tools.big({}); return a.length;", LIMITS, async () => ({ ok: true, result: huge }));
    expect(r.ok ? "ok" : r.error.code).toBe("script_memory_limit");
    expect(await small.run("return (await tools.echo(3)) + (await tools.echo(4))", LIMITS, echo)).toMatchObject({ ok: true, value: 7 });
  });

  test("a reply into a guest that holds nearly all its memory ends script_memory_limit", async () => {
    await using small = new ScriptPool({ workers: 1, memoryMb: 16, stackKb: 512, maxScripts: 1 });
    const r = await small.run(
      "const hog = []; try { for (;;) hog.push('x'.repeat(1 << 18) + hog.length); } catch {} hog.length -= 2; const a = await tools.big({}); return a.length + hog.length;",
      LIMITS,
      async () => ({ ok: true, result: "y".repeat(4 * 2 ** 20) }),
    );
    expect(r.ok ? "ok" : r.error.code).toBe("script_memory_limit");
    expect(await small.run("return (await tools.echo(3)) + (await tools.echo(4))", LIMITS, echo)).toMatchObject({ ok: true, value: 7 });
  });
});

describe("a misbehaving worker", () => {
  const hostilePool = () => new ScriptPool({ workers: 1, memoryMb: 64, stackKb: 512, workerUrl: new URL("../../test/fixtures/hostile-script-worker.ts", import.meta.url).href });

  for (const kind of ["stuck-mailbox", "odd-mailbox"]) {
    test(`${kind}: a scribbled channel whose mailbox the worker never empties: the call is served once, the host's event loop stays free, the script ends at its deadline, the worker is replaced`, async () => {
      await using hostile = hostilePool();
      const seen: unknown[] = [];
      // counts turns of the host's event loop while the reply waits for the mailbox: a busy loop would starve it
      let ticks = 0;
      const ticker = setInterval(() => ticks++, 10);
      try {
        const r = await hostile.run(kind, { ...LIMITS, wallTimeoutMs: 300 }, async (name, args) => {
          seen.push([name, args]);
          return { ok: true, result: "x".repeat(3 * CAPACITY) };
        });
        expect(r.ok ? "ok" : r.error.code).toBe("script_timeout");
        expect(r.ok ? "" : r.error.message).toContain("its worker was replaced");
        expect(seen).toEqual([["probe", {}]]);
        expect(ticks).toBeGreaterThan(0);
      } finally {
        clearInterval(ticker);
      }
    });
  }

  for (const [size, way] of [[100, "written straight into the mailbox"], [3 * CAPACITY, "queued, the buffer grown past the worker's length"]] as const) {
    test(`grown-mailbox: a worker that grew and scribbled its buffer: a ${size}-character reply is ${way}, nothing thrown on the host, the script ends at its deadline`, async () => {
      await using hostile = hostilePool();
      const seen: unknown[] = [];
      const r = await hostile.run("grown-mailbox", { ...LIMITS, wallTimeoutMs: 300 }, async (name, args) => {
        seen.push([name, args]);
        return { ok: true, result: "g".repeat(size) };
      });
      expect(r.ok ? "ok" : r.error.code).toBe("script_timeout");
      expect(seen).toEqual([["probe", {}]]);
    });
  }

  test("malformed messages on the port are dropped: no tool runs, the script ends at its deadline", async () => {
    await using hostile = hostilePool();
    let called = 0;
    const r = await hostile.run("malformed", { ...LIMITS, wallTimeoutMs: 300 }, async () => {
      called++;
      return { ok: true, result: null };
    });
    expect(r.ok ? "ok" : r.error.code).toBe("script_timeout");
    expect(called).toBe(0);
  });

  test("an outcome the hand check does not take goes to the schema: a key too many is internal; a well-formed failure passes as it is", async () => {
    await using hostile = hostilePool();
    const tool = async (): Promise<ToolOutcome> => ({ ok: true, result: null });
    expect(await hostile.run("extra-key", { ...LIMITS, wallTimeoutMs: 300 }, tool)).toMatchObject({ ok: false, error: { code: "internal", message: "the sandbox worker answered with a malformed outcome" } });
    expect(await hostile.run("json-number", { ...LIMITS, wallTimeoutMs: 300 }, tool)).toMatchObject({ ok: false, error: { code: "internal", message: "the sandbox worker answered with a malformed outcome" } });
    expect(await hostile.run("failure", { ...LIMITS, wallTimeoutMs: 300 }, tool)).toEqual({ ok: false, error: { code: "script_error", message: "Error: m", stack: "s" }, logs: ["l"], calls: 2 });
    expect(await hostile.run("no-json", { ...LIMITS, wallTimeoutMs: 300 }, tool)).toEqual({ ok: true, value: null, logs: [], calls: 0 });
  });

  // FINDING (attack on the batched bridge): an outcome whose `json` was not JSON text made the pool's JSON.parse throw
  // inside the task's `then` (an unhandled rejection) and run() wait for the watchdog (`script_timeout`).
  test("an outcome whose return value is not JSON text ends the script internal at once, nothing thrown on the host", async () => {
    await using hostile = hostilePool();
    const r = await hostile.run("bad-json", { ...LIMITS, wallTimeoutMs: 300 }, async () => ({ ok: true, result: null }));
    expect(r).toMatchObject({ ok: false, error: { code: "internal" } });
  });
});

describe("many scripts at once", () => {
  test("60 scripts of 20 sequential calls each on 2 run slots: every call answered to its own script", async () => {
    const runs = Array.from({ length: 60 }, (_, k) =>
      pool.run(`let sum = 0; for (let i = 0; i < 20; i++) { const r = await tools.echo({ k: ${k}, i }); if (r.k !== ${k} || r.i !== i) throw new Error('crossed'); sum += r.i; } return [${k}, sum];`, LIMITS, echo),
    );
    const results = await Promise.all(runs);
    results.forEach((r, k) => expect(r).toEqual({ ok: true, value: [k, 190], logs: [], calls: 20 }));
  });
});
