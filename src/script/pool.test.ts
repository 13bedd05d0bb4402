/**
 * @module script/pool.test
 * The script sandbox with real worker threads and real QuickJS: isolation, escape attempts,
 * denial of service (right code, within deadline + 1 s, next script fine), concurrency, parked
 * calls, the caller's AsyncLocalStorage context, cancellation and the worker-replacement backstop.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { GateContext } from "../gate/context.ts";
import type { ToolOutcome } from "./protocol.ts";
import { ScriptPool, type RunOptions } from "./pool.ts";
import { ALLOWED_GLOBALS, DOS_CASES, ESCAPE_SCRIPT, HOST_NAMES, ISOLATION_IMPORTS, ISOLATION_SCRIPT, NATIVE_STALL_SCRIPT, POLLUTION_SCRIPT } from "./test-scripts.ts";

// Generous deadlines (a loaded 2-core machine preempts the guest): only tests about a deadline set a short one.
const LIMITS: RunOptions = { cpuTimeoutMs: 30_000, wallTimeoutMs: 60_000, maxToolCalls: 1000, maxLogBytes: 64 * 1024, maxResultBytes: 1024 * 1024 };
/** The CPU deadline of the tests that are about it, ms. */
const SHORT_CPU_MS = 500;

type Call = { name: string; args: unknown };
function recorder(extra: Record<string, (args: unknown) => Promise<ToolOutcome>> = {}) {
  const calls: Call[] = [];
  const fn = async (name: string, args: unknown): Promise<ToolOutcome> => {
    calls.push({ name, args });
    if (extra[name]) return extra[name](args);
    if (name === "echo") return { ok: true, result: args };
    if (name === "fail") return { ok: false, error: { code: "tool_failed", message: (args as { message?: string }).message ?? "failed" } };
    return { ok: false, error: { code: "unknown_tool", message: `no tool ${name}` } };
  };
  return { calls, fn };
}

let pool: ScriptPool;
beforeAll(() => {
  pool = new ScriptPool({ workers: 2, memoryMb: 64, stackKb: 512 });
});
afterAll(async () => {
  await pool.close();
});

describe("ScriptPool.run limits checked", () => {
  test("invalid limits (fractional, negative, NaN, unsafe) are refused bad_request with the schema's message; valid ones run", async () => {
    const { fn } = recorder();
    for (const bad of [{ cpuTimeoutMs: 1.5 }, { wallTimeoutMs: 0 }, { maxToolCalls: -1 }, { maxLogBytes: Number.NaN }, { maxResultBytes: 2 ** 53 }]) {
      const key = Object.keys(bad)[0]!;
      const err = await pool.run("return 1", { ...LIMITS, ...bad }, fn).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toMatchObject({ code: "bad_request" });
      expect((err as Error).message).toContain(`script limits are invalid: ${key}:`);
    }
    expect(await pool.run("return 1", { ...LIMITS, maxToolCalls: 0, maxLogBytes: 0 }, fn)).toMatchObject({ ok: true, value: 1 });
  });
});

describe("ScriptPool.run basics", () => {
  test("returns the value, the captured logs and the call count", async () => {
    const { fn } = recorder();
    const r = await pool.run("console.log('a', 1, {b: 2}); console.warn('w'); return { got: await tools.echo({ x: 1 }) };", LIMITS, fn);
    expect(r).toEqual({ ok: true, value: { got: { x: 1 } }, logs: ["a 1 {\"b\":2}", "[warn] w"], calls: 1 });
  });

  test("a script without return yields null; a thrown error is script_error with the guest stack", async () => {
    const { fn } = recorder();
    expect(await pool.run("1 + 1;", LIMITS, fn)).toEqual({ ok: true, value: null, logs: [], calls: 0 });
    const r = await pool.run("function inner() { throw new TypeError('bad input'); }\ninner();", LIMITS, fn);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.code).toBe("script_error");
    expect(r.error.message).toBe("TypeError: bad input");
    expect(r.error.stack).toContain("inner (script.js:1:");
    expect(r.error.stack).not.toContain(import.meta.dir);
  });

  test("an uncaught tool error keeps the tool's error code in the script error's message", async () => {
    const refuse = async () => ({ ok: false as const, error: { code: "no_human_surface" as const, message: "nobody can answer" } });
    const r = await pool.run("await tools.developer__shell({ command: 'x' });", LIMITS, refuse);
    expect(r.ok ? "ok" : r.error).toMatchObject({ code: "script_error", message: "ToolError [no_human_surface]: nobody can answer" });
  });

  test("a syntax error and a never-settling await are script_error", async () => {
    const { fn } = recorder();
    const syntax = await pool.run("return (", LIMITS, fn);
    expect(syntax.ok ? "ok" : syntax.error.code).toBe("script_error");
    const stuck = await pool.run("await new Promise(() => {});", LIMITS, fn);
    expect(stuck.ok ? "ok" : stuck.error.code).toBe("script_error");
  });

  test("a failed tool call rejects with a guest Error carrying name, message and code", async () => {
    const { fn } = recorder();
    const r = await pool.run("try { await tools.fail({ message: 'no way' }); } catch (e) { return [e instanceof Error, e.name, e.message, e.code]; }", LIMITS, fn);
    expect(r).toEqual({ ok: true, value: [true, "ToolError", "no way", "tool_failed"], logs: [], calls: 1 });
  });

  test("any tool name reaches the host; unknown names come back as unknown_tool", async () => {
    const { fn, calls } = recorder();
    const r = await pool.run("try { await tools.nope__nothing({}); } catch (e) { return e.code; }", LIMITS, fn);
    expect(r).toMatchObject({ ok: true, value: "unknown_tool" });
    expect(calls).toEqual([{ name: "nope__nothing", args: {} }]);
  });

  test("a throwing host tool becomes a guest error without host stack or paths", async () => {
    const { fn } = recorder({
      boom: async () => {
        throw new Error("host exploded");
      },
    });
    const r = await pool.run("try { await tools.boom({}); } catch (e) { return { keys: Object.getOwnPropertyNames(e).sort(), code: e.code, message: e.message, stack: e.stack }; }", LIMITS, fn);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    const v = r.value as { keys: string[]; code: string; message: string; stack: string };
    expect(v.keys).toEqual(["code", "message", "name", "stack"]);
    expect(v.code).toBe("internal");
    expect(v.message).toBe("host exploded");
    expect(v.stack).not.toContain(import.meta.dir);
    expect(v.stack).not.toContain(".ts");
  });
});

describe("ScriptPool isolation", () => {
  test("the guest sees only ECMAScript built-ins plus tools and console", async () => {
    const { fn } = recorder();
    const r = await pool.run(ISOLATION_SCRIPT, LIMITS, fn);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    const v = r.value as { names: string[]; types: Record<string, string>; imports: Record<string, string>; evalProcess: string; fnProcess: string };
    expect(v.names.filter((n) => !ALLOWED_GLOBALS.includes(n))).toEqual([]);
    expect(v.names).toContain("tools");
    expect(v.names).toContain("console");
    expect(v.types).toEqual(Object.fromEntries(HOST_NAMES.map((n) => [n, "undefined"])));
    expect(v.imports).toEqual(ISOLATION_IMPORTS);
    expect([v.evalProcess, v.fnProcess]).toEqual(["undefined", "undefined"]);
  });

  test("constructor walks from errors, results and every global end at the guest's own Function", async () => {
    const { fn } = recorder();
    const r = await pool.run(ESCAPE_SCRIPT, LIMITS, fn);
    expect(r).toEqual({
      ok: true,
      value: {
        errorIsGuestError: true,
        errorWalk: true,
        errorFnSeesNoHost: true,
        errorFieldsAreStrings: true,
        errorFields: ["code", "message", "name", "stack"],
        errorCode: "tool_failed",
        resultWalk: true,
        resultProto: true,
        fnGlobal: true,
        badGlobals: [],
      },
      logs: [],
      calls: 2,
    });
  });

  test("host objects never reach the guest: a result with functions, dates and getters arrives as JSON data", async () => {
    const hostObj = { fn: () => 1, date: new Date(0), nested: { get secret() { return "from-getter"; } }, proc: process.version };
    const { fn } = recorder({ host: async () => ({ ok: true, result: hostObj }) });
    const r = await pool.run("const v = await tools.host({}); return { keys: Object.keys(v).sort(), fn: typeof v.fn, date: v.date, secret: v.nested.secret, desc: typeof Object.getOwnPropertyDescriptor(v.nested, 'secret').get };", LIMITS, fn);
    expect(r).toMatchObject({ ok: true, value: { keys: ["date", "nested", "proc"], fn: "undefined", date: "1970-01-01T00:00:00.000Z", secret: "from-getter", desc: "undefined" } });
  });

  test("a guest that pollutes Object.prototype and JSON does not change what the host receives", async () => {
    const { fn, calls } = recorder();
    const r = await pool.run(POLLUTION_SCRIPT, LIMITS, fn);
    expect(r).toEqual({ ok: true, value: { a: 1, list: [1, 2] }, logs: [], calls: 1 });
    expect(calls).toEqual([{ name: "echo", args: { a: 1, list: [1, 2] } }]);
    const args = calls[0]!.args as Record<string, unknown>;
    expect(Object.getPrototypeOf(args)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.keys(args)).toEqual(["a", "list"]);
  });

  test("nothing survives between scripts", async () => {
    const { fn } = recorder();
    await pool.run("globalThis.leftover = 42; Object.prototype.leak = 1; return 1", LIMITS, fn);
    const r = await pool.run("return [typeof leftover, ({}).leak === undefined]", LIMITS, fn);
    expect(r).toMatchObject({ ok: true, value: ["undefined", true] });
  });
});

describe("ScriptPool prepared guests", () => {
  test("each script on one thread gets a fresh runtime made ahead of it: no global, prototype or bridge state leaks to the next", async () => {
    await using one = new ScriptPool({ workers: 1, maxScripts: 1, memoryMb: 64, stackKb: 512 });
    const { fn } = recorder();
    const leaky = `
      globalThis.leftover = (globalThis.leftover ?? 0) + 1;
      Object.prototype.leak = 1;
      Array.prototype.push = () => 0;
      JSON.parse = () => ({ hacked: true });
      Promise.prototype.then = function () { return "tampered"; };
      console.log("run", leftover);
      return [leftover, await tools.echo({ n: 1 })];`;
    const seen: unknown[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await one.run(leaky, LIMITS, fn);
      expect(r.ok).toBe(true);
      if (r.ok) seen.push(r.value);
      // a later script on the same thread sees none of it, and its own tool calls still work
      const clean = await one.run("const a = []; a.push(1); return [typeof leftover, 'leak' in {}, a.length, JSON.parse('[2]')[0], await tools.echo({ k: 3 })];", LIMITS, fn);
      expect(clean).toMatchObject({ ok: true, value: ["undefined", false, 1, 2, { k: 3 }] });
    }
    // The leaky script never saw its own earlier run's global: every run counted from 1; and its own tampered `then`,
    // `push` and `JSON.parse` did not reach the bridge (the call's promise is a native one the bridge settles itself).
    expect(seen).toEqual(Array.from({ length: 5 }, () => [1, { n: 1 }]));
    expect(one.threadIds.length).toBe(1);
  });

  test("a script's guest is freed just after its outcome left, never in the next script's task; the thread then keeps a snapshot its later scripts run in, restored after each", async () => {
    // the real worker, whose outcomes' logs end with its counts `guests AHEAD IN_TASK RELEASED_IN_TASK RESTORED` (test/fixtures/counting-script-worker.ts)
    await using one = new ScriptPool({ workers: 1, maxScripts: 1, memoryMb: 64, stackKb: 512, workerUrl: new URL("../../test/fixtures/counting-script-worker.ts", import.meta.url).href });
    const { fn } = recorder();
    const counts = (r: { logs: string[] }): number[] => (r.logs.at(-1) ?? "").split(" ").slice(1).map(Number);
    // each script alternately names tools or not, and leaves a global behind
    const script = (i: number): string => (i % 2 === 0 ? "const seen = typeof mark; globalThis.mark = 1; return seen" : "const seen = typeof mark; globalThis.mark = 1; return [seen, await tools.echo(1)]");
    const expected = (i: number): unknown => (i % 2 === 0 ? "undefined" : ["undefined", 1]);
    // Back to back: the next task reaches the thread as soon as the outcome is out. The first script's guest is freed
    // in a tick queued by the task (worker.ts `afterOutcome`), after tinypool's post and before the thread takes its
    // next message (queued with `setImmediate`, Bun ran it after the next task's message, inside that task); a
    // restored snapshot likewise.
    const n = 40;
    let last: number[] = [];
    for (let i = 0; i < n; i++) {
      const r = await one.run(script(i), LIMITS, fn);
      expect(r).toMatchObject({ ok: true, value: expected(i) });
      last = counts(r);
    }
    expect(last[0]! + last[1]! + last[3]!).toBe(n);
    expect(last[2]).toBe(0);
    // With the thread idle between scripts, the snapshot is made (`prepareWhenIdle`), and every later script runs in it.
    const idle = 6;
    for (let i = 0; i < idle; i++) {
      await Bun.sleep(50);
      const r = await one.run(script(i), LIMITS, fn);
      expect(r).toMatchObject({ ok: true, value: expected(i) });
      const now = counts(r);
      expect(now[3]).toBe(last[3]! + 1);
      expect(now[0]! + now[1]!).toBe(last[0]! + last[1]!);
      last = now;
    }
    expect(last[2]).toBe(0);
    expect(one.threadIds.length).toBe(1);
  });

  test("a script that ends before it gets a run slot leaves the thread's prepared guest unused, and later scripts are fine", async () => {
    await using one = new ScriptPool({ workers: 1, maxScripts: 2, memoryMb: 64, stackKb: 512 });
    const { fn } = recorder();
    // Both threads run a script first, so each has a guest prepared for its next one.
    const gates: Array<() => void> = [];
    const hold = async (name: string, args: unknown): Promise<ToolOutcome> => {
      if (name === "hold") await new Promise<void>((r) => gates.push(r));
      return { ok: true, result: args };
    };
    const first = [one.run("return await tools.hold({ a: 1 })", LIMITS, hold), one.run("return await tools.hold({ a: 2 })", LIMITS, hold)];
    while (gates.length < 2) await Bun.sleep(5);
    for (const g of gates) g();
    expect(await Promise.all(first)).toMatchObject([{ ok: true }, { ok: true }]);
    // One script holds the only run slot on guest code; another reaches the other thread, cannot start, and runs out of wall time.
    // The busy script gets the slot back with its first call's reply, then makes 32 calls without awaiting them
    // (worker.ts sends a slice's calls once 32 wait, without ending the slice) and spins: guest code runs only in a
    // held run slot, so once those calls are seen here the slot is the busy script's, whatever the machine's load.
    let spinning!: () => void;
    const seen = new Promise<void>((r) => (spinning = r));
    const signal = async (name: string, args: unknown): Promise<ToolOutcome> => {
      if (name === "spinning") spinning();
      else if (name !== "started") return fn(name, args);
      return { ok: true, result: null };
    };
    const busy = one.run("await tools.started({}); for (let i = 0; i < 32; i++) tools.spinning({}); const t = Date.now(); while (Date.now() - t < 1500) {} return 'busy';", LIMITS, signal);
    await seen;
    const starved = await one.run("globalThis.x = 1; return 2", { ...LIMITS, wallTimeoutMs: 200 }, fn);
    expect(starved).toMatchObject({ ok: false, error: { code: "script_timeout" } });
    expect(await busy).toMatchObject({ ok: true, value: "busy" });
    for (let i = 0; i < 4; i++) {
      expect(await one.run("return [typeof x, await tools.echo({ i: " + i + " })]", LIMITS, fn)).toMatchObject({ ok: true, value: ["undefined", { i }] });
    }
  });
});

describe("ScriptPool reused buffers", () => {
  test("a script after a cancelled one on a one-thread pool runs to its end: the cancel word of the buffers it reuses was cleared", async () => {
    await using one = new ScriptPool({ workers: 1, maxScripts: 1, memoryMb: 64, stackKb: 512 });
    const { fn } = recorder();
    for (let i = 0; i < 3; i++) {
      const ac = new AbortController();
      let reached!: () => void;
      const parked = new Promise<void>((r) => (reached = r));
      const run = one.run("await tools.park({}); return 'no';", { ...LIMITS, signal: ac.signal }, async (_n, _a, signal) => {
        reached();
        await new Promise((r) => signal.addEventListener("abort", r, { once: true }));
        return { ok: true, result: null };
      });
      await parked;
      ac.abort();
      expect(await run).toMatchObject({ ok: false, error: { code: "cancelled" } });
      // the cancelled script's worker returned, so its meter and channel serve this script (one thread, one buffer pair)
      expect(await one.run("return [await tools.echo({ i: " + i + " }), await tools.echo({ j: 2 })]", LIMITS, fn)).toMatchObject({ ok: true, value: [{ i }, { j: 2 }] });
    }
  });
});

describe("ScriptPool limits", () => {
  for (const c of DOS_CASES) {
    test(`${c.name}: ends with ${c.expect}, and the next script runs`, async () => {
      const { fn } = recorder();
      // Only a timeout case gets a short CPU deadline: the others must end by their own limit, however slow the machine.
      const r = await pool.run(c.code, c.expect === "script_timeout" ? { ...LIMITS, cpuTimeoutMs: SHORT_CPU_MS } : LIMITS, fn);
      expect(r.ok ? "ok" : r.error.code).toBe(c.expect);
      if (c.expect === "script_too_many_calls") expect(r.calls).toBe(1000);
      expect(await pool.run("return 'next'", LIMITS, fn)).toMatchObject({ ok: true, value: "next" });
    });
  }

  test("the wall-clock deadline ends a script stuck waiting on a tool", async () => {
    const { fn } = recorder({ never: () => new Promise<ToolOutcome>(() => {}) });
    const r = await pool.run("await tools.never({})", { ...LIMITS, wallTimeoutMs: 300 }, fn);
    expect(r.ok ? "ok" : r.error.code).toBe("script_timeout");
  });

  test("time spent waiting on tools does not count against the CPU deadline", async () => {
    // The tool waits well past the CPU deadline, which is itself far above any guest slice of this script.
    const { fn } = recorder({ slow: () => new Promise<ToolOutcome>((res) => setTimeout(() => res({ ok: true, result: "late" }), 4000)) });
    const r = await pool.run("return await tools.slow({})", { ...LIMITS, cpuTimeoutMs: 1500 }, fn);
    expect(r).toMatchObject({ ok: true, value: "late" });
  });

  test("an AbortSignal cancels a script waiting on a tool", async () => {
    let arrived!: () => void;
    const inCall = new Promise<void>((r) => (arrived = r));
    const { fn } = recorder({ never: () => (arrived(), new Promise<ToolOutcome>(() => {})) });
    const ac = new AbortController();
    const run = pool.run("await tools.never({})", { ...LIMITS, signal: ac.signal }, fn);
    await inCall;
    ac.abort();
    const ended = await run;
    expect(ended.ok ? "ok" : ended.error.code).toBe("cancelled");
  });

  test("a script stuck in a long native call is stopped by replacing its worker; the next script runs", async () => {
    await using big = new ScriptPool({ workers: 1, memoryMb: 64, stackKb: 512 });
    const { fn } = recorder();
    expect(await big.run("return 1", LIMITS, fn)).toMatchObject({ ok: true });
    const before = big.threadIds;
    const r = await big.run(NATIVE_STALL_SCRIPT, { ...LIMITS, cpuTimeoutMs: 200 }, fn);
    expect(r.ok ? "ok" : r.error.code).toBe("script_timeout");
    expect(await big.run("return 'after'", LIMITS, fn)).toMatchObject({ ok: true, value: "after" });
    expect(big.threadIds).not.toEqual(before);
  });
});

describe("ScriptPool concurrency", () => {
  test("three concurrent tools.* calls via Promise.all all get their results", async () => {
    // The barrier resolves only once all three calls are in flight at the same time.
    let waiting: Array<() => void> = [];
    const barrier = (args: unknown): Promise<ToolOutcome> =>
      new Promise((res) => {
        waiting.push(() => res({ ok: true, result: args }));
        if (waiting.length === 3) for (const w of waiting) w();
      });
    const { fn } = recorder({ barrier });
    const r = await pool.run("return await Promise.all([tools.barrier(1), tools.barrier(2), tools.barrier(3)])", LIMITS, fn);
    expect(r).toEqual({ ok: true, value: [1, 2, 3], logs: [], calls: 3 });
    waiting = [];
  });

  test("100 calls of one slice reach the host in the order made; answered in reverse, each result settles its own call", async () => {
    const pending: Array<{ i: number; answer: () => void }> = [];
    let all!: () => void;
    const arrived = new Promise<void>((r) => (all = r));
    const order: number[] = [];
    const run = pool.run("const ps = []; for (let i = 0; i < 100; i++) ps.push(tools.slow({ i })); return await Promise.all(ps);", LIMITS, (_n, args) => {
      const i = (args as { i: number }).i;
      order.push(i);
      return new Promise<ToolOutcome>((resolve) => {
        pending.push({ i, answer: () => resolve({ ok: true, result: { got: i } }) });
        if (pending.length === 100) all();
      });
    });
    await arrived;
    for (const p of pending.slice().reverse()) p.answer();
    const r = await run;
    expect(order).toEqual(Array.from({ length: 100 }, (_, i) => i));
    expect(r).toMatchObject({ ok: true, value: Array.from({ length: 100 }, (_, i) => ({ got: i })), calls: 100 });
  });

  test("a guest that replaces Promise, JSON, Object.create, String and Error after the bridge started still gets each call's own result", async () => {
    const { fn } = recorder();
    const r = await pool.run(
      `const first = await tools.echo({ a: 1 });
       globalThis.Promise = function () { throw new Error("no"); };
       JSON.parse = () => ({ hacked: true }); JSON.stringify = () => '"hacked"';
       Object.create = () => ({}); globalThis.String = () => "s"; globalThis.Error = function () { return {}; };
       const second = await tools.echo({ b: 2 });
       let failed; try { await tools.fail({ message: "m" }); } catch (e) { failed = [e.code, e.message]; }
       return [first.a, second.b, failed];`,
      LIMITS,
      fn,
    );
    expect(r).toMatchObject({ ok: true, value: [1, 2, ["tool_failed", "m"]], calls: 3 });
  });

  test("a parked call does not stop 4 other scripts from running on a pool of 1 worker", async () => {
    await using one = new ScriptPool({ workers: 1, memoryMb: 64, stackKb: 512 });
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let parkedArrived!: () => void;
    const parked = new Promise<void>((r) => (parkedArrived = r));
    const { fn } = recorder({
      park: async () => {
        parkedArrived();
        await released;
        return { ok: true, result: "unparked" };
      },
    });
    const first = one.run("return await tools.park({})", LIMITS, fn);
    await parked;
    const others = await Promise.all([1, 2, 3, 4].map((i) => one.run(`let s = 0; for (let j = 0; j < 1e4; j++) s += j; return [await tools.echo(${i}), s]`, LIMITS, fn)));
    expect(others.map((o) => o.ok && o.value)).toEqual([[1, 49995000], [2, 49995000], [3, 49995000], [4, 49995000]]);
    release();
    expect(await first).toMatchObject({ ok: true, value: "unparked" });
  });

  test("each call runs in the AsyncLocalStorage context of its own run()", async () => {
    const { fn } = recorder({
      whoami: async () => {
        await new Promise((r) => setTimeout(r, 5));
        return { ok: true, result: GateContext.use() };
      },
    });
    const ctxs = ["a", "b", "c"].map((x) => ({ sessionId: `ses_${x}`, turnId: `turn_${x}`, callId: `call_${x}` }));
    const results = await Promise.all(ctxs.map((c) => GateContext.provide(c, () => pool.run("return await Promise.all([tools.whoami({}), tools.whoami({})])", LIMITS, fn))));
    expect(results.map((r) => r.ok && r.value)).toEqual(ctxs.map((c) => [c, c]));
  });

  test("close() is idempotent and run() after close throws", async () => {
    const p = new ScriptPool({ workers: 1, memoryMb: 16, stackKb: 256 });
    await p.close();
    await p.close();
    await expect(p.run("return 1", LIMITS, recorder().fn)).rejects.toThrow("closed");
  });
});

describe("ScriptPool start", () => {
  test("no worker starts before the first script (cold start: docs/performance.md); the first script starts them", async () => {
    await using lazy = new ScriptPool({ workers: 2, memoryMb: 64, stackKb: 512 });
    expect(lazy.threadIds).toEqual([]);
    const { fn } = recorder();
    expect(await lazy.run("return 1", LIMITS, fn)).toMatchObject({ ok: true, value: 1 });
    expect(lazy.threadIds.length).toBeGreaterThanOrEqual(1);
  });
});

describe("ScriptPool calls caught by polling", () => {
  test("a long run of sequential calls, answered at once, comes in order and lets the event loop turn: a timer's cancel ends it", async () => {
    await using one = new ScriptPool({ workers: 1, memoryMb: 64, stackKb: 512 });
    const { fn } = recorder();
    expect(await one.run("return 1", LIMITS, fn)).toMatchObject({ ok: true, value: 1 });
    const ac = new AbortController();
    let ticks = 0;
    const tick = setInterval(() => ticks++, 5);
    const stop = setTimeout(() => ac.abort(), 300);
    const r = await one.run(
      "let i = 0; for (;;) { const v = await tools.echo({ i }); if (v.i !== i) throw new Error(`reply ${v.i} for call ${i}`); i++; }",
      { ...LIMITS, maxToolCalls: 100_000_000, signal: ac.signal },
      fn,
    );
    clearInterval(tick);
    clearTimeout(stop);
    expect(r).toMatchObject({ ok: false, error: { code: "cancelled" } });
    expect(r.calls).toBeGreaterThan(100);
    // the 5 ms timer ran through the calls (not only once they ended): a chain of polled calls ends within CHAIN_MS
    expect(ticks).toBeGreaterThan(5);
  });
});
