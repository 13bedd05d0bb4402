/**
 * @module test/security/script-snapshot-nothing-carries-over
 * A thread's scripts share one guest restored from a snapshot after each (src/script/snapshot.ts). Attacks on that,
 * through the real pool with `workers: 1` (every script on one thread): a script plants state in every place it can and
 * ends in every odd way it can (returned, threw, CPU deadline, wall deadline on a parked tool, cancelled, stack
 * overflow through a Proxy, memory wall, a throwing getter or endless toJSON in its return value, jobs and
 * FinalizationRegistry callbacks left pending); the next script sees a realm identical to the first one's, and its
 * own limits (CPU, memory, stack, tool calls) still hold.
 */
import { describe, expect, test } from "bun:test";
import type { ToolOutcome } from "../../src/tool/tool.ts";
import { ScriptPool, type RunOptions, type ScriptResult } from "../../src/script/pool.ts";

const LIMITS: RunOptions = { cpuTimeoutMs: 30_000, wallTimeoutMs: 120_000, maxToolCalls: 1000, maxLogBytes: 64 * 1024, maxResultBytes: 1024 * 1024 };
const SHORT: RunOptions = { ...LIMITS, cpuTimeoutMs: 400, wallTimeoutMs: 3_000 };

/** A fingerprint of the realm a script starts in: every own key of the global object and the built-in prototypes, and what state a planting script may have left. */
const LOOK = `
  const protos = { globalThis, Object, Function, Array, String, Number, Boolean, Symbol, Promise, RegExp, Error, Date, JSON, Math, Reflect,
    op: Object.prototype, fp: Function.prototype, ap: Array.prototype, sp: String.prototype, np: Number.prototype, pp: Promise.prototype,
    rp: RegExp.prototype, ep: Error.prototype, dp: Date.prototype, mp: Map.prototype, setp: Set.prototype, tap: Object.getPrototypeOf(Uint8Array.prototype) };
  const keys = {};
  for (const [n, o] of Object.entries(protos)) keys[n] = Reflect.ownKeys(o).map(String).sort().join(",") + "|" + Object.isExtensible(o) + "|" + Object.isFrozen(o);
  let re = /a/g;
  const seen = {
    keys,
    registry: ["plant", "k0", "k1"].map((k) => Symbol.keyFor(Symbol.for(k)) === k),
    legacy: typeof RegExp.$1 === "string" ? RegExp.$1 : null,
    lastIndex: re.lastIndex,
    leak: ({}).leak, tl: typeof Error.stackTraceLimit === "number" ? Error.stackTraceLimit : null,
    date: new Date(0).toString(),
    tz: new Date(0).getTimezoneOffset(),
    json: JSON.stringify({ a: [1, "x"] }),
    push: [1].push(2), str: String(1.5), ver: typeof version, names: Object.getOwnPropertyNames(globalThis).length,
  };
  await Promise.resolve();
  seen.later = typeof globalThis.ranLater + typeof globalThis.jobRan;
  return seen;`;

/** What a planting script leaves, then how it ends. */
const PLANT = `
  globalThis.left = { secret: "s3cr3t" }; globalThis.ranLater = undefined;
  Object.prototype.leak = 1; Array.prototype.push = () => 0; JSON.stringify = () => "x"; String = () => "y";
  Object.defineProperty(Number.prototype, "toString", { value: () => "z" });
  Symbol.for("plant"); Symbol.for("k0");
  /(s3cr3t)/.exec("s3cr3t");
  Error.stackTraceLimit = 0;
  Date.prototype.toString = () => "d";
  new FinalizationRegistry(() => { globalThis.ranLater = "yes"; }).register({}, 1);
  new WeakRef({ s: "s3cr3t" });
  Promise.resolve().then(() => { globalThis.jobRan = 1; });
  Object.freeze(Function.prototype); Object.preventExtensions(Math);
  const big = []; for (let i = 0; i < 20000; i++) big.push("s3cr3t" + i);
`;

const ENDINGS: Record<string, { code: string; opts?: RunOptions; tool?: boolean; cancel?: boolean }> = {
  returned: { code: "return 1" },
  threw: { code: "throw new Error('s3cr3t')" },
  cpu: { code: "for (;;) {}", opts: SHORT },
  "jobs left spinning": { code: "Promise.resolve().then(() => { for (;;) {} }); return 1", opts: SHORT },
  "never settles": { code: "await new Promise(() => {})" },
  "parked past its wall deadline": { code: "return await tools.park({})", opts: SHORT, tool: true },
  cancelled: { code: "for (;;) {}", cancel: true },
  "stack overflow": { code: "const f = (n) => f(n + 1) + 1; return f(0)" },
  "host stack overflow through a Proxy": { code: "const p = new Proxy({}, { get(t, k, r) { return r[k]; } }); return p.x" },
  // (not a.push: the planting script replaced Array.prototype.push with a function that stores nothing)
  "memory wall": { code: "const a = []; for (let i = 0; ; i++) a[i] = 's3cr3t'.repeat(1 << 16) + i" },
  "throwing getter in the result": { code: "return { get x() { throw new Error('s3cr3t'); } }" },
  "endless toJSON in the result": { code: "return { toJSON() { for (;;) {} } }", opts: SHORT },
  "result too big": { code: "return 's3cr3t'.repeat(1 << 19)" },
  "tool calls past the limit": { code: "for (let i = 0; i < 50; i++) tools.echo(i); return await tools.echo(1)", opts: { ...LIMITS, maxToolCalls: 3 } },
};

async function tool(name: string, args: unknown): Promise<ToolOutcome> {
  if (name === "park") return new Promise(() => {});
  return { ok: true, result: args };
}

const valueOf = (r: ScriptResult): unknown => (r.ok ? r.value : r.error.code);

describe("a thread's snapshot guest: nothing of one script reaches the next, whatever it did and however it ended", () => {
  test("every ending, twice: the realm after is the first script's, and the next script's limits hold", async () => {
    await using pool = new ScriptPool({ workers: 1, maxScripts: 1, memoryMb: 32, stackKb: 256, workerUrl: new URL("../fixtures/counting-script-worker.ts", import.meta.url).href });
    const first = await pool.run(LOOK, LIMITS, tool);
    expect(first.ok).toBe(true);
    const baseline = valueOf(first);
    let restored = 0;
    for (let round = 0; round < 2; round++) {
      for (const [what, e] of Object.entries(ENDINGS)) {
        const ac = new AbortController();
        const a = pool.run(PLANT + e.code, { ...(e.opts ?? LIMITS), ...(e.cancel ? { signal: ac.signal } : {}) }, tool);
        if (e.cancel) setTimeout(() => ac.abort(), 200);
        const ra = await a;
        expect([what, ra.ok && what !== "returned"]).toEqual([what, false]);
        if (what === "memory wall") expect(valueOf(ra)).toBe("script_memory_limit");
        const b = await pool.run(LOOK, LIMITS, tool);
        expect([what, valueOf(b)]).toEqual([what, baseline]);
        const counts = b.logs.at(-1)?.split(" ").slice(1).map(Number) ?? [];
        restored = Math.max(restored, counts[3] ?? 0);
      }
      // the limits of a script after all that
      expect(valueOf(await pool.run("for (;;) {}", SHORT, tool))).toBe("script_timeout");
      expect(valueOf(await pool.run("const a = []; for (;;) a.push(new Uint8Array(1 << 20))", LIMITS, tool))).toBe("script_memory_limit");
      expect(valueOf(await pool.run("const f = (n) => f(n + 1) + 1; return f(0)", LIMITS, tool))).toBe("script_stack_overflow");
      expect(valueOf(await pool.run("for (let i = 0; i < 5; i++) await tools.echo(i); return 1", { ...LIMITS, maxToolCalls: 3 }, tool))).not.toBe(1);
    }
    // most of these ran in the restored guest (the worker's counts: a dropped snapshot is made again when idle)
    expect(restored).toBeGreaterThan(14);
    expect(pool.workerErrors).toEqual([]);
  }, 600_000);

  test("Math.random in one script says nothing of the next's: 200 scripts, no first value repeated or among the previous script's values", async () => {
    await using pool = new ScriptPool({ workers: 1, maxScripts: 1, memoryMb: 32, stackKb: 256 });
    const firsts = new Set<number>();
    let prev: number[] = [];
    for (let i = 0; i < 200; i++) {
      const r = await pool.run("return [Math.random(), Math.random(), Math.random()]", LIMITS, tool);
      const v = valueOf(r) as number[];
      expect(firsts.has(v[0]!)).toBe(false);
      expect(prev.includes(v[0]!)).toBe(false);
      firsts.add(v[0]!);
      prev = v;
    }
  }, 300_000);
});
