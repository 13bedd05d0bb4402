/**
 * @module test/security/script-bridge-attacks
 * The batched script bridge (src/script/bridge.ts, vm.ts, direct.ts, pool.ts) attacked by its guest: a guest that fills
 * its memory so the host cannot copy a batch of calls or its return value out of QuickJS, and a guest that goes on
 * calling tools after its caller cancelled it. Real QuickJS; each through both QuickJS paths (the FFI one and the
 * handle API) where the finding is in the worker, and through real worker threads where it is in the pool.
 */
import { describe, expect, test } from "bun:test";
import { Instances } from "../../src/script/instances.ts";
import { ScriptPool, type RunOptions } from "../../src/script/pool.ts";
import type { CallRequest } from "../../src/script/protocol.ts";
import { ScriptRun, type RunOutcome } from "../../src/script/vm.ts";

const LIMITS: RunOptions = { cpuTimeoutMs: 30_000, wallTimeoutMs: 60_000, maxToolCalls: 1000, maxLogBytes: 64 * 1024, maxResultBytes: 16 << 20 };
const MEMORY_MB = 16;
/** How many 64 KiB strings the guest frees after filling its memory: a spread of headrooms (0.5 to 4.5 MiB). */
const HEADROOMS = [8, 16, 24, 32, 40, 48, 56, 64, 72];
/** Fills the guest's memory with 64 KiB strings kept on a global (they outlive the script's function), then frees `n` of them. */
const fill = (n: number): string => `const keep = globalThis.keep = []; try { for (;;) keep.push("z".repeat(1 << 16) + keep.length); } catch (e) {} for (let i = 0; i < ${n}; i++) keep.pop();`;

/** Runs `code` in one thread (no worker), answering every call with `1`; the calls that reached the host in `seen`. */
async function runHere(instances: Instances, code: string, directCalls: boolean, seen: CallRequest[]): Promise<RunOutcome> {
  const inst = await instances.take();
  let pending: CallRequest[] = [];
  const run = new ScriptRun(inst.module, {
    code,
    limits: LIMITS,
    memoryBytes: MEMORY_MB << 20,
    stackBytes: 512 << 10,
    meter: new Float64Array(3),
    memoryExhausted: (w) => inst.exhausted(w),
    post: (m) => (seen.push(m), pending.push(m)),
    directCalls,
  });
  run.start();
  while (!run.finished) {
    const now = pending;
    pending = [];
    if (now.length === 0) break;
    for (const c of now) run.reply(c.id, JSON.stringify({ ok: true, result: 1 }));
  }
  const out = await run.done;
  instances.give(inst, !out.fatal);
  return out;
}

const code = (o: RunOutcome): string => (o.ok ? "ok" : o.error.code);

describe("a guest whose memory is full when the host copies its calls out", () => {
  // FINDING (high): quickjs-emscripten's getString (and QTS_GetString on the FFI path) returns "" when QuickJS cannot
  // make the UTF-8 copy of a guest string. The batch `take()` returned after a slice then read as "no calls": every
  // call of the batch was dropped without reaching the host, and the script ended `script_error` ("waiting on a promise
  // that can never settle"), or went on without them when other calls were pending. Fixed: a copy that fails ends the
  // script `script_memory_limit` (script/bridge.ts `copyString`, direct.ts `callForString`).
  for (const directCalls of [true, false]) {
    test(`a batch taken after the slice (${directCalls ? "FFI" : "handle API"} path) is never dropped: the script ends script_memory_limit or its calls arrive`, async () => {
      const instances = await Instances.create(MEMORY_MB);
      for (const n of HEADROOMS) {
        const seen: CallRequest[] = [];
        const out = await runHere(instances, `const p = tools.first("A".repeat(2 << 20)); ${fill(n)} const q = tools.second(1); await Promise.all([p, q]); return "both";`, directCalls, seen);
        expect({ n, end: code(out) }).toEqual({ n, end: out.ok ? "ok" : "script_memory_limit" });
        if (out.ok) expect(seen.map((c) => c.name)).toEqual(["first", "second"]);
      }
    }, 120_000);

    // FINDING (medium): the same empty copy of a batch the guest flushes itself (32 calls waiting) failed to parse and
    // ended the script `internal` ("the script's bridge sent a malformed batch"), for the guest's own memory use.
    test(`a batch the guest flushes at 32 calls (${directCalls ? "FFI" : "handle API"} path) ends script_memory_limit, never internal, when it cannot be copied`, async () => {
      const instances = await Instances.create(MEMORY_MB);
      for (const n of HEADROOMS) {
        const seen: CallRequest[] = [];
        const script = `const ps = [tools.first("A".repeat(2 << 20))]; for (let i = 0; i < 30; i++) ps.push(tools.small(i)); ${fill(n)}
          try { ps.push(tools.last(1)); } catch (e) { keep.length = 0; ps.push(Promise.resolve(String(e))); }
          keep.length = 0; return (await Promise.all(ps)).length;`;
        const out = await runHere(instances, script, directCalls, seen);
        expect({ n, end: code(out) }).toEqual({ n, end: out.ok ? "ok" : "script_memory_limit" });
        if (out.ok) expect(seen.length).toBe(32);
      }
    }, 120_000);
  }
});

describe("a guest whose return value cannot be copied out (real workers)", () => {
  // FINDING (high): the return value's JSON copied out as "" when the guest's memory was full; the worker reported
  // `{ok: true, json: ""}` and the pool's JSON.parse("") threw inside the task's `then`: an unhandled rejection on the
  // host, and the script's run() hung until the watchdog replaced a healthy worker. Fixed: such a return ends the script
  // `script_memory_limit`, and the pool turns an outcome it cannot parse into `internal` instead of throwing.
  test("a full guest returning 1.5 MiB of JSON ends ok or script_memory_limit, and the next script runs", async () => {
    await using one = new ScriptPool({ workers: 1, maxScripts: 1, memoryMb: MEMORY_MB, stackKb: 512 });
    const tool = async () => ({ ok: true as const, result: null });
    for (const n of HEADROOMS) {
      const r = await one.run(`const s = "\\u00e9".repeat(3 << 19); ${fill(n)} return s;`, LIMITS, tool);
      expect({ n, end: r.ok ? (typeof r.value === "string" ? r.value.length : r.value) : r.error.code }).toEqual({ n, end: r.ok ? 3 << 19 : "script_memory_limit" });
    }
    expect(await one.run("return 'next'", LIMITS, tool)).toMatchObject({ ok: true, value: "next" });
  }, 120_000);
});

describe("calls made while the return value is serialised (real workers)", () => {
  test("a getter or toJSON of the returned value starts no tool call, and the result says why nothing was returned", async () => {
    await using one = new ScriptPool({ workers: 1, maxScripts: 1, memoryMb: 64, stackKb: 512 });
    const started: string[] = [];
    const tool = async (name: string) => (started.push(name), { ok: true as const, result: 1 });
    const r = await one.run("await tools.before(1); return { get x() { tools.inGetter(1); return 1; }, toJSON() { for (let i = 0; i < 40; i++) tools.inJson(i); return {}; } };", LIMITS, tool);
    expect(r.ok ? "ok" : r.error.code).toBe("script_result_invalid");
    expect(r.ok ? "" : r.error.message).toContain("40 tool call(s)");
    expect(started).toEqual(["before"]);
    const cyclic = await one.run("const a = []; a.push(a); return a;", LIMITS, tool);
    expect(cyclic.ok ? "ok" : cyclic.error.message).toMatch(/^the script's return value was not sent: it cannot be serialised as JSON: TypeError/);
    expect(await one.run("return 'next'", LIMITS, tool)).toMatchObject({ ok: true, value: "next" });
  }, 60_000);
});

describe("a guest that fills its memory and then compiles or takes its next step (real workers)", () => {
  // FINDING (medium): a guest whose memory was full when the VM compiled (eval, new Function, a regular expression) or
  // ran its next step (the job after an await) did not end with the memory error: it ended script_error "threw a
  // non-error value" (QuickJS could not make the error object and threw null), "InternalError: " with no message,
  // "SyntaxError: invalid assignment left-hand side" (the parser read a failed allocation as bad syntax), "waiting on
  // a promise that can never settle" (the job was lost), or internal "the script sandbox failed: Out of bounds memory
  // access" (a fault inside QuickJS) — each telling the model to fix code that was fine, or to retry. The instance's
  // memory stops short of its cap by up to one growth step (emscripten grows it by at least 5% at a time), and the
  // check for "full" wanted it exactly at the cap. Fixed: within 1/16 of the cap counts as full, and those failures of
  // a full guest end script_memory_limit (the instance is then not reused). QuickJS's own malloc counter does not see
  // these (on emscripten it counts 8 bytes per allocation), so the memory's cap is the wall.
  test("every such failure ends script_memory_limit (or the script succeeds), and the next script runs", async () => {
    await using one = new ScriptPool({ workers: 1, maxScripts: 1, memoryMb: MEMORY_MB, stackKb: 512 });
    const tool = async () => ({ ok: true as const, result: 1 });
    const steps = ['eval("(function (a) { return a + 1; })(1)")', 'new Function("a", "return a + 1")(1)', 'new RegExp("a(b|c)+d").test("abd")', "(await null, 1)"];
    const ends: string[] = [];
    for (const step of steps) {
      for (const k of [0, 1, 2, 3, 4, 5, 8, 16, 27, 64]) {
        const script = `let head = null; try { for (;;) head = { n: head }; } catch (e) {} for (let i = 0; i < ${k} && head; i++) head = head.n; globalThis.h = head; return ${step};`;
        const r = await one.run(script, LIMITS, tool);
        const end = r.ok ? "ok" : r.error.code;
        if (end !== "ok" && end !== "script_memory_limit") ends.push(`${step} k=${k}: ${end} ${r.ok ? "" : r.error.message.slice(0, 80)}`);
      }
    }
    expect(ends).toEqual([]);
    expect(await one.run("return 'next'", LIMITS, tool)).toMatchObject({ ok: true, value: "next" });
  }, 120_000);

  // FINDING (medium): a guest that caught the memory error of a compile and tried again (a retry loop, as model code
  // writes) spun until its CPU deadline (30 s by default) and ended script_timeout: each compile failed at once, the
  // interrupt handler saw nothing wrong until the deadline. Fixed: a failed growth of the instance's memory (the one
  // exact sign that an allocation could not be had) ends the script script_memory_limit at its next interrupt check.
  test("a guest retrying a compile in a full memory ends script_memory_limit, not at its CPU deadline", async () => {
    await using one = new ScriptPool({ workers: 1, maxScripts: 1, memoryMb: MEMORY_MB, stackKb: 512 });
    const tool = async () => ({ ok: true as const, result: 1 });
    const retries = ['new Function("return " + n)()', 'eval("let x = 0;" + "x += 1;".repeat(300) + "x")'];
    const ends: string[] = [];
    for (const retry of retries) {
      for (const k of [30, 50, 100]) {
        const script = `let head = null; try { for (;;) head = { n: head }; } catch (e) {} for (let i = 0; i < ${k} && head; i++) head = head.n; globalThis.h = head;
          let n = 0; for (;;) { n++; try { return ${retry}; } catch (e) {} }`;
        // a CPU deadline far above what the fixed script takes: an end at it is the spin, whatever the machine's load
        const r = await one.run(script, { ...LIMITS, cpuTimeoutMs: 10_000 }, tool);
        const end = r.ok ? "ok" : r.error.code;
        if (end !== "ok" && end !== "script_memory_limit") ends.push(`${retry} k=${k}: ${end}`);
      }
    }
    expect(ends).toEqual([]);
  }, 120_000);
});

describe("a script memory near the QuickJS module's 2 GiB (real workers)", () => {
  // FINDING (medium): limits.script_memory_mb accepts up to 2048, and an instance's memory was capped at it + 16 MiB; the
  // QuickJS build declares a 2 GiB maximum, so from 2033 every instance failed to instantiate and every script, however
  // healthy, ended script_worker_lost; at 2032 (a cap of exactly 2 GiB) emscripten's heap resize refused each allocation
  // past 2 GiB without trying to grow the memory, so the wall check never fired and a guest retrying a compile in a full
  // memory spun to its CPU deadline (script_timeout). Fixed: the cap is at most 2 GiB less 16 MiB (script/instances.ts
  // MAX_CAP_PAGES).
  const tool = async () => ({ ok: true as const, result: 1 });
  test("a script runs at script_memory_mb 2033 and 2048", async () => {
    for (const memoryMb of [2033, 2048]) {
      await using one = new ScriptPool({ workers: 1, maxScripts: 1, memoryMb, stackKb: 512 });
      const r = await one.run("return 1", LIMITS, tool);
      expect({ memoryMb, end: r.ok ? "ok" : `${r.error.code} ${r.error.message}` }).toEqual({ memoryMb, end: "ok" });
    }
  }, 60_000);

  // fills 2 GiB (about 10 s on a loaded machine); the CPU deadline is far above what the fixed script takes
  test("a guest retrying a compile in a full 2032 MiB memory ends script_memory_limit, not at its CPU deadline", async () => {
    await using one = new ScriptPool({ workers: 1, maxScripts: 1, memoryMb: 2032, stackKb: 512 });
    const script = `const keep = globalThis.keep = []; for (const sz of [1 << 20, 1 << 16, 1 << 12, 256]) { try { for (;;) keep.push("z".repeat(sz) + keep.length); } catch (e) {} }
      let head = null; try { for (;;) head = { n: head }; } catch (e) {} globalThis.h = head;
      let n = 0; for (;;) { n++; try { return new Function("return " + n)(); } catch (e) {} }`;
    const r = await one.run(script, { ...LIMITS, cpuTimeoutMs: 45_000, wallTimeoutMs: 90_000 }, tool);
    expect(r.ok ? "ok" : r.error.code).toMatch(/^(ok|script_memory_limit)$/);
  }, 120_000);
});

describe("calls after a cancel (real workers)", () => {
  // FINDING (medium): a script busy making calls went on sending them after its caller aborted, until its interrupt
  // handler saw the cancel word; the host ran every call that arrived meanwhile (575 of 576 in one run) with a signal
  // not yet aborted. Fixed: the host runs no call of a script whose caller aborted it.
  test("no tool call starts after the caller aborted the script", async () => {
    await using one = new ScriptPool({ workers: 1, maxScripts: 1, memoryMb: 64, stackKb: 512 });
    const ac = new AbortController();
    let afterAbort = 0;
    const r = await one.run("let i = 0; for (;;) tools.x(i++);", { ...LIMITS, maxToolCalls: 1_000_000, signal: ac.signal }, async () => {
      if (ac.signal.aborted) afterAbort++;
      else ac.abort();
      return { ok: true, result: null };
    });
    expect(r.ok ? "ok" : r.error.code).toBe("cancelled");
    expect(afterAbort).toBe(0);
  }, 60_000);
});

describe("calls made after the script's function ended", () => {
  // FINDING (medium): a call made after the script's function returned (in a callback that ran later) or threw (in a
  // getter of the thrown value, which the host reads to report the error) was sent to the host like any other, and its
  // tool started (aborted once the outcome arrived). Fixed: the bridge sends the calls made before the end, then the
  // end; the worker sends none made after.
  for (const directCalls of [true, false]) {
    test(`only calls made before the end reach the host (${directCalls ? "FFI" : "handle API"} path)`, async () => {
      const instances = await Instances.create(MEMORY_MB);
      const cases: Array<[string, string[], string]> = [
        // a callback a few ticks later runs after the bridge saw the function end (one that runs before still counts as before)
        ["tools.before(1); (async () => { for (let i = 0; i < 5; i++) await null; tools.late(1); })(); return 1;", ["before"], "ok"],
        ["tools.before(1); (async () => { for (let i = 0; i < 5; i++) await null; for (let i = 0; i < 40; i++) tools.late(i); })(); return 1;", ["before"], "ok"],
        ["tools.before(1); throw { name: 'E', get message() { for (let i = 0; i < 40; i++) tools.getter(i); return 'm'; } };", ["before"], "script_error"],
        // FINDING (medium): a call made in a getter or toJSON of the return value (run while the bridge serialised it,
        // before its end was reported) was sent. Fixed: the door closes before the value is serialised; the script
        // ends script_result_invalid saying so (also past 32 calls, the bridge's own flush)
        ["const r = await tools.first(1); return { toJSON() { tools.inJson(r); return r; } };", ["first"], "script_result_invalid"],
        ["await tools.first(1); return { a: 1, get b() { for (let i = 0; i < 40; i++) tools.getter(i); return 2; } };", ["first"], "script_result_invalid"],
        ["await tools.first(1); return [{ toJSON() { try { tools.inJson(1); } catch (e) {} return 1; } }];", ["first"], "script_result_invalid"],
        // a value JSON cannot carry is said to be that, not a guest error the script threw
        ["const o = { n: await tools.first(1) }; o.self = o; return o;", ["first"], "script_result_invalid"],
        ["await tools.first(1); return { n: 1n };", ["first"], "script_result_invalid"],
        ["await tools.first(1); return { toJSON() { throw new Error('no'); } };", ["first"], "script_result_invalid"],
      ];
      for (const [script, names, end] of cases) {
        const seen: CallRequest[] = [];
        const out = await runHere(instances, script, directCalls, seen);
        expect({ script, end: code(out), names: seen.map((c) => c.name) }).toEqual({ script, end, names });
      }
    }, 60_000);
  }
});

describe("other guest code run once the value is decided (real workers)", () => {
  // Tried against the closed door (no finding): every other way QuickJS runs guest code while the bridge serialises the
  // return value or the host reads a thrown one — Proxy traps, a toJSON getter on Object.prototype, Array.prototype.toJSON,
  // a wrapper object's Symbol.toPrimitive / toString, console.log of a value with toJSON inside a getter, jobs a getter
  // queues (they run after the end), a then-able return whose value has getters, a thrown or rejected value whose
  // name/message/stack/code are getters. No such call starts; a call made before the value is decided (in `then`, or a
  // Proxy's `get` asked for `then` by the await) still does.
  test("no call made by them starts, and each ends as the door says", async () => {
    await using one = new ScriptPool({ workers: 1, maxScripts: 1, memoryMb: MEMORY_MB, stackKb: 512 });
    const cases: Array<[string, string, string[]]> = [
      ["return new Proxy({ a: 1 }, { ownKeys(t) { tools.late(1); return Reflect.ownKeys(t); }, get(t, k) { if (k !== 'then') tools.late(2); else tools.beforeThen(1); return t[k]; } });", "script_result_invalid", ["beforeThen"]],
      ["Object.defineProperty(Object.prototype, 'toJSON', { get() { tools.late(1); return undefined; } }); return { a: { b: 1 } };", "script_result_invalid", []],
      ["Array.prototype.toJSON = function () { tools.late(1); return 1; }; return [[1]];", "script_result_invalid", []],
      ["const n = new Number(1); n[Symbol.toPrimitive] = () => { tools.late(1); return 2; }; return { n };", "script_result_invalid", []],
      ["const s = new String('a'); s.toString = () => { tools.late(1); return 'b'; }; return [s];", "script_result_invalid", []],
      ["return { get x() { console.log({ toJSON() { tools.late(1); return 1; } }); return 1; } };", "script_result_invalid", []],
      ["return { get x() { Promise.resolve().then(() => { for (let i = 0; i < 40; i++) tools.late(i); }); return 1; } };", "ok", []],
      ["return { then(r) { tools.inThen(1); r({ get x() { tools.late(1); return 1; } }); } };", "script_result_invalid", ["inThen"]],
      ["throw { get name() { tools.late(1); return 'E'; }, get message() { tools.late(2); return 'm'; }, get stack() { tools.late(3); return 's'; }, get code() { tools.late(4); return 'c'; } };", "script_error", []],
      ["return Promise.reject({ get message() { for (let i = 0; i < 40; i++) tools.late(i); return 'm'; } });", "script_error", []],
      ["return { toJSON() { throw { get message() { tools.late(1); return 'm'; } }; } };", "script_result_invalid", []],
    ];
    for (const [script, end, names] of cases) {
      const started: string[] = [];
      const r = await one.run(script, LIMITS, async (name: string) => (started.push(name), { ok: true as const, result: 1 }));
      expect({ script, end: r.ok ? "ok" : r.error.code, started }).toEqual({ script, end, started: names });
    }
    expect(await one.run("return 'next'", LIMITS, async () => ({ ok: true as const, result: 1 }))).toMatchObject({ ok: true, value: "next" });
  }, 60_000);
});
