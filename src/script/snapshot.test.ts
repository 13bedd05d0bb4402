import { describe, expect, test } from "bun:test";
import { Instances, type Instance } from "./instances.ts";
import { memoryLayout, type MemoryLayout } from "../side/quickjs-layout.ts";
import { GuestSnapshot } from "./snapshot.ts";
import { prepareGuest, ScriptRun, type RunOutcome } from "./vm.ts";
import { le32, leb, name, section, sleb, wasm } from "../../test/wasm-binary.ts";

const MEMORY = 64 * 2 ** 20;
const STACK = 512 * 1024;
const LIMITS = { cpuTimeoutMs: 5_000, wallTimeoutMs: 30_000, maxToolCalls: 100, maxLogBytes: 1 << 16, maxResultBytes: 1 << 20 };

// ---- a hand-made wasm binary (only the sections memoryLayout reads) ----
const globals = (...g: { mut: number; init: number; type?: number }[]): number[] => section(6, [...leb(g.length), ...g.flatMap((x) => [x.type ?? 0x7f, x.mut, 0x41, ...sleb(x.init), 0x0b])]);
const data = (...segs: { offset: number; bytes: number[]; flag?: number }[]): number[] =>
  section(11, [...leb(segs.length), ...segs.flatMap((s) => (s.flag === 1 ? [1, ...leb(s.bytes.length), ...s.bytes] : [0, 0x41, ...sleb(s.offset), 0x0b, ...leb(s.bytes.length), ...s.bytes]))]);
const importMemory = section(2, [...leb(2), ...name("a"), ...name("f"), 0, ...leb(0), ...name("a"), ...name("m"), 2, 0, ...leb(256)]);
const FIVE_MIB = 5 * 1024 * 1024;
const HIGH = FIVE_MIB + 4096;

describe("memoryLayout: the static data, stack and heap of an emscripten QuickJS build, from its binary", () => {
  test("the pinned build (quickjs-emscripten 0.32.0's singlefile release-sync): static data below 90,208, the heap from 5,333,088, the break at 86,864", async () => {
    const i = await Instances.create(64);
    expect(i.layout).toEqual({ staticEnd: 90_208, heapBase: 5_333_088, breakAt: 86_864 });
  });

  test("a binary laid out so: the stack pointer's start is the heap's base, static data ends 5 MiB below it, the break is the word holding the base", () => {
    expect(memoryLayout(wasm(importMemory, globals({ mut: 1, init: HIGH }), data({ offset: 16, bytes: [1, 2, 3] }, { offset: 100, bytes: le32(HIGH) })))).toEqual({ staticEnd: 4096, heapBase: HIGH, breakAt: 100 });
    // a base whose top byte is zero, packed into a 3-byte segment (as emscripten's memory packing leaves it)
    expect(memoryLayout(wasm(importMemory, globals({ mut: 1, init: HIGH }), data({ offset: 200, bytes: le32(HIGH).slice(0, 3) })))?.breakAt).toBe(200);
  });

  const refused: Record<string, Uint8Array> = {
    "no global": wasm(data({ offset: 100, bytes: le32(HIGH) })),
    "two globals": wasm(globals({ mut: 1, init: HIGH }, { mut: 1, init: 16 }), data({ offset: 100, bytes: le32(HIGH) })),
    "an immutable global": wasm(globals({ mut: 0, init: HIGH }), data({ offset: 100, bytes: le32(HIGH) })),
    "an i64 global": wasm(globals({ mut: 1, init: HIGH, type: 0x7e }), data({ offset: 100, bytes: le32(HIGH) })),
    "an imported global": wasm(section(2, [...leb(1), ...name("a"), ...name("g"), 3, 0x7f, 1]), globals({ mut: 1, init: HIGH }), data({ offset: 100, bytes: le32(HIGH) })),
    "a passive data segment": wasm(globals({ mut: 1, init: HIGH }), data({ offset: 100, bytes: le32(HIGH) }, { offset: 0, bytes: [1], flag: 1 })),
    "a segment reaching the stack": wasm(globals({ mut: 1, init: HIGH }), data({ offset: 100, bytes: le32(HIGH) }, { offset: 4090, bytes: [1, 2, 3, 4, 5, 6, 7] })),
    "no word holding the base": wasm(globals({ mut: 1, init: HIGH }), data({ offset: 100, bytes: le32(HIGH + 16) })),
    "two words holding the base": wasm(globals({ mut: 1, init: HIGH }), data({ offset: 100, bytes: le32(HIGH) }, { offset: 200, bytes: le32(HIGH) })),
    "a base not 16-aligned": wasm(globals({ mut: 1, init: HIGH + 8 }), data({ offset: 100, bytes: le32(HIGH + 8) })),
    "a stack larger than the memory below it": wasm(globals({ mut: 1, init: 4096 }), data({ offset: 100, bytes: le32(4096) })),
    "a truncated section": wasm(globals({ mut: 1, init: HIGH })).slice(0, 12),
    "not wasm": new TextEncoder().encode("#!/bin/sh\necho not a module\n"),
  };
  for (const [what, bytes] of Object.entries(refused)) {
    test(`refused (null, so no snapshot): ${what}`, () => {
      expect(memoryLayout(bytes)).toBeNull();
    });
  }
});

/** A snapshot of a fresh guest on a fresh instance of `pool`'s build. */
async function snapshotOf(pool: Instances): Promise<GuestSnapshot> {
  const inst = await pool.fresh();
  const snap = GuestSnapshot.take(inst, prepareGuest(inst.module, MEMORY, STACK, true), pool.layout);
  if (!snap) throw new Error("no snapshot on the pinned build");
  return snap;
}

/** Runs `code` in the snapshot's guest (tool calls answered with their arguments), then restores it. */
async function runIn(snap: GuestSnapshot, code: string, limits = LIMITS): Promise<{ outcome: RunOutcome; restored: boolean }> {
  const inst: Instance = snap.inst;
  let run: ScriptRun;
  const pending: { id: number; args: string }[] = [];
  run = new ScriptRun(inst.module, {
    code,
    limits,
    memoryBytes: MEMORY,
    stackBytes: STACK,
    meter: new Float64Array(8),
    memoryExhausted: (w) => inst.exhausted(w),
    memoryWallHit: () => inst.atWall(),
    releaseLater: true,
    post: (m) => pending.push({ id: m.id, args: m.args }),
  });
  run.start(snap.lend());
  while (!run.finished) {
    const call = pending.shift();
    if (!call) break;
    run.reply(call.id, JSON.stringify({ ok: true, result: JSON.parse(call.args) }));
  }
  const outcome = await run.done;
  const released = run.release();
  return { outcome, restored: released && !outcome.fatal && snap.restore() };
}

const bytesOf = (inst: Instance, from: number, to: number): Uint8Array => new Uint8Array(inst.memory.buffer).slice(from, to);

describe("GuestSnapshot: each script starts from the guest's state before any script", () => {
  test("after a script that changed globals, built-ins, the symbol registry, atoms and the heap, the static data and heap are back byte for byte (but Math.random's seed)", async () => {
    const pool = await Instances.create(64);
    const snap = await snapshotOf(pool);
    const layout = pool.layout as MemoryLayout;
    const brk = (): number => new DataView(snap.inst.memory.buffer).getUint32(layout.breakAt, true);
    const heapEnd = brk();
    const before = { static: bytesOf(snap.inst, 0, layout.staticEnd), heap: bytesOf(snap.inst, layout.heapBase, heapEnd) };
    const { outcome, restored } = await runIn(snap, `
      globalThis.left = { secret: "s3cr3t" };
      Object.prototype.leak = 1; Array.prototype.push = () => 0; JSON.parse = () => 0;
      Symbol.for("airlock-test-registry");
      const o = {}; for (let i = 0; i < 20000; i++) o["atom_" + i] = i;
      const big = []; for (let i = 0; i < 100000; i++) big[i] = "x" + i;
      new FinalizationRegistry(() => { globalThis.ranLater = true; }).register({}, 1);
      new WeakRef({});
      /(a)(b)/.exec("ab");
      return await tools.echo({ n: big.length });`);
    expect(outcome).toMatchObject({ ok: true, json: '{"n":100000}' });
    expect(restored).toBe(true);
    expect(brk()).toBe(heapEnd);
    const after = { static: bytesOf(snap.inst, 0, layout.staticEnd), heap: bytesOf(snap.inst, layout.heapBase, heapEnd) };
    expect(Buffer.compare(after.static, before.static)).toBe(0);
    // the heap differs in one aligned 8-byte word at most: Math.random's state, seeded anew when the guest was lent
    const differ: number[] = [];
    for (let i = 0; i < after.heap.length; i += 8) if (Buffer.compare(after.heap.subarray(i, i + 8), before.heap.subarray(i, i + 8)) !== 0) differ.push(i);
    expect(differ.length).toBeLessThanOrEqual(1);
  });

  test("nothing of one script reaches the next, over many scripts on one snapshot; Math.random differs per script; the library's own state does not grow", async () => {
    const pool = await Instances.create(64);
    const snap = await snapshotOf(pool);
    const randoms = new Set<string>();
    // quickjs-emscripten's fields on the guest's context and runtime before any script (each run wraps two of them)
    const look = (): { keys: string; call: unknown } => {
      const g = snap.lend();
      const c = g.ctx as unknown as { cToHostCallbacks: { callFunction: unknown } };
      const seen = { keys: JSON.stringify([Object.keys(g.ctx), Object.keys(g.rt)]), call: c.cToHostCallbacks.callFunction };
      expect(snap.restore()).toBe(true);
      return seen;
    };
    const first = look();
    for (let i = 0; i < 150; i++) {
      const leaky = await runIn(snap, `
        const seen = [typeof left, ({}).leak, [1].length, Symbol.keyFor(Symbol.for("k" + ${i})) , typeof ranLater];
        globalThis.left = ${i}; Object.prototype.leak = ${i}; Array.prototype.push = null; delete globalThis.console;
        Symbol.for("k" + ${i});
        return [seen, Math.random(), typeof console];`);
      expect(leaky.outcome.ok).toBe(true);
      expect(leaky.restored).toBe(true);
      const [seen, r, con] = JSON.parse((leaky.outcome as { json: string }).json) as [unknown[], number, string];
      expect(seen).toEqual(["undefined", null, 1, `k${i}`, "undefined"]);
      expect(con).toBe("undefined");
      randoms.add(String(r));
      const clean = await runIn(snap, "return [typeof left, 'leak' in {}, typeof console, await tools.echo(7)]");
      expect(clean.outcome).toMatchObject({ ok: true, json: '["undefined",false,"object",7]' });
      expect(clean.restored).toBe(true);
      // and as the snapshot had them after it (no wrapper of an earlier run's left on them)
      const now = look();
      expect(now.keys).toBe(first.keys);
      expect(now.call).toBe(first.call);
    }
    expect(randoms.size).toBe(150);
    expect(snap.runs).toBe(1 + 150 * 3); // two scripts and one look a round
  });

  test("a script stopped by its CPU deadline, one that threw, and one whose promise never settles leave the guest restorable; the next script runs as usual", async () => {
    const pool = await Instances.create(64);
    const snap = await snapshotOf(pool);
    const spin = await runIn(snap, "globalThis.x = 1; for (;;) {}", { ...LIMITS, cpuTimeoutMs: 50 });
    expect(spin.outcome).toMatchObject({ ok: false, error: { code: "script_timeout" } });
    expect(spin.restored).toBe(true);
    const threw = await runIn(snap, "globalThis.x = 2; throw new TypeError('no')");
    expect(threw.outcome).toMatchObject({ ok: false, error: { code: "script_error" } });
    expect(threw.restored).toBe(true);
    const hang = await runIn(snap, "globalThis.x = 3; await new Promise(() => {})");
    expect(hang.outcome).toMatchObject({ ok: false, error: { code: "script_error" } });
    expect(hang.restored).toBe(true);
    const deep = await runIn(snap, "globalThis.x = 4; const f = (n) => f(n + 1) + 1; return f(0)");
    expect(deep.outcome).toMatchObject({ ok: false, error: { code: "script_stack_overflow" } });
    expect(deep.restored).toBe(true);
    const next = await runIn(snap, "return [typeof x, await tools.echo('ok')]");
    expect(next.outcome).toMatchObject({ ok: true, json: '["undefined","ok"]' });
  });

  test("a script that grew its instance's memory past what an instance may keep (32 MiB) drops the snapshot; a guest lent twice is refused", async () => {
    const pool = await Instances.create(64);
    const snap = await snapshotOf(pool);
    const g = snap.lend();
    expect(() => snap.lend()).toThrow(/in use/);
    expect(g.owned).toBe(false);
    g.dispose(); // frees nothing: the snapshot keeps its guest
    expect(snap.restore()).toBe(true);
    const big = await runIn(snap, "const a = []; for (let i = 0; i < 40; i++) a.push(new Uint8Array(1 << 20)); return a.length");
    expect(big.outcome).toMatchObject({ ok: true, json: "40" });
    expect(big.restored).toBe(false);
    expect(snap.available).toBe(false);
    expect(() => snap.lend()).toThrow(/dropped/);
  });

  test("no snapshot for an unknown layout, a guest already lent, or a layout that does not fit the instance", async () => {
    const pool = await Instances.create(64);
    const inst = await pool.fresh();
    const guest = prepareGuest(inst.module, MEMORY, STACK, true);
    expect(GuestSnapshot.take(inst, guest, null)).toBeNull();
    expect(GuestSnapshot.take(inst, guest.reissue(), pool.layout)).toBeNull();
    // a break word elsewhere (it then holds no heap address): refused, not guessed
    expect(GuestSnapshot.take(inst, guest, { ...(pool.layout as MemoryLayout), breakAt: 64 })).toBeNull();
    // the right layout still works on this guest
    expect(GuestSnapshot.take(inst, guest, pool.layout)).not.toBeNull();
  });
});
