/**
 * @module test/security/script-bridge-lazy-attack
 * Attacks on the lazily made bridge parts (src/script/bridge.ts `BOOTSTRAP`, `PARTS`) and the worker's prepared and
 * late-freed guests (src/script/worker.ts): a part first made after the script's value is decided (a `toJSON`, a getter,
 * a promise job after return), `tools` reached without its name in the text, a part compiled at the stack's end or in a
 * nearly full guest, and state left by one script for the next on the same thread (one worker: every script shares it).
 * Real worker threads, real QuickJS.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { ScriptPool, type RunOptions } from "../../src/script/pool.ts";
import { toolRecorder } from "../script-tools.ts";

const LIMITS: RunOptions = { cpuTimeoutMs: 10_000, wallTimeoutMs: 30_000, maxToolCalls: 1000, maxLogBytes: 64 * 1024, maxResultBytes: 1024 * 1024 };

let pool: ScriptPool;
beforeAll(() => {
  pool = new ScriptPool({ workers: 1, memoryMb: 32, stackKb: 256 });
});
afterAll(async () => {
  await pool.close();
});


/** `tools` without the word in the text (the core build; the part made on first read). */
const T = `globalThis["to" + "ols"]`;

describe("a part first made after the script's value is decided sends nothing", () => {
  test("first read in toJSON of the return value", async () => {
    const { calls, fn } = toolRecorder();
    const r = await pool.run(`return { toJSON() { ${T}.late({ a: 1 }); return 1; } };`, LIMITS, fn);
    expect(r.ok).toBe(false);
    expect(calls).toEqual([]);
  });
  test("first read in a getter of the return value, and in a promise job after return", async () => {
    const { calls, fn } = toolRecorder();
    const r = await pool.run(`let p = Promise.resolve(); for (let i = 0; i < 20; i++) p = p.then(() => {}); p.then(() => ${T}.job(1)); return { get x() { ${T}.getter(2); return 1; } };`, LIMITS, fn);
    expect(r.ok).toBe(false);
    expect(calls).toEqual([]);
  });
  test("first read in a getter of what the script threw", async () => {
    const { calls, fn } = toolRecorder();
    const r = await pool.run(`throw { get message() { ${T}.thrown(1); return "m"; }, get name() { ${T}.thrown2(1); return "n"; } };`, LIMITS, fn);
    expect(r.ok).toBe(false);
    expect(calls).toEqual([]);
  });
});

describe("tools reached without its name in the text", () => {
  for (const [how, expr] of [
    ["computed", T],
    ["eval", `eval("to" + "ols")`],
    ["Function", `Function("return to" + "ols")()`],
    ["descriptor getter", `Object.getOwnPropertyDescriptor(globalThis, "to" + "ols").get.call(null)`],
    ["Reflect.get with a proxy receiver", `Reflect.get(globalThis, "to" + "ols", new Proxy({}, {}))`],
  ] as const) {
    test(how, async () => {
      const { calls, fn } = toolRecorder();
      const r = await pool.run(`const t = ${expr}; const u = ${T}; if (t !== u) throw new Error("two tools"); return await t.echo({ how: ${JSON.stringify(how)} });`, LIMITS, fn);
      expect(r.ok ? r.value : `${r.error.code}: ${r.error.message}`).toEqual({ echoed: { how } });
      expect(calls).toEqual([{ name: "echo", args: { how } }]);
    });
  }
});

describe("a part compiled where it cannot be", () => {
  test("at the stack's end: the read throws or works, a later read works, and only real calls are sent", async () => {
    const { calls, fn } = toolRecorder();
    const r = await pool.run(`
      let fails = 0;
      function deep(n) { try { return deep(n + 1); } catch (e) { try { return ${T}; } catch (e2) { fails++; throw e2; } } }
      try { deep(0); } catch (_) {}
      const c = (() => { try { return console; } catch (_) { return null; } })();
      return await ${T}.after({ fails: fails > 0 });`, LIMITS, fn);
    expect(r.ok ? "ok" : `${r.error.code}: ${r.error.message}`).toBe("ok");
    expect(calls.length).toBe(1);
    expect(calls[0]!.name).toBe("after");
  });
  test("in a guest whose memory is nearly full: the script ends with a named error, and the next one runs clean", async () => {
    const { calls, fn } = toolRecorder();
    const r = await pool.run(`
      const keep = [];
      try { for (;;) keep.push(new Array(4096).fill(keep.length)); } catch (_) {}
      let got;
      try { got = ${T}; } catch (e) { got = String(e); }
      try { await ${T}.full(1); } catch (_) {}
      return 1;`, LIMITS, fn);
    if (!r.ok) expect(["script_memory_limit", "script_timeout"]).toContain(r.error.code);
    expect(calls.every((c) => c.name === "full")).toBe(true);
    const next = toolRecorder();
    const r2 = await pool.run(`return await ${T}.next(2);`, LIMITS, next.fn);
    expect(r2.ok ? r2.value : `${r2.error.code}: ${r2.error.message}`).toEqual({ echoed: 2 });
  });
});

describe("nothing crosses from one script to the next on the same thread", () => {
  const leave = `
    globalThis.leaked = "yes"; Object.prototype.polluted = "yes"; JSON.stringify = () => '"lie"';
    Object.defineProperty(globalThis, "console", { value: { log() {} }, writable: false, configurable: false });`;
  const look = `return { leaked: typeof leaked, polluted: ({}).polluted === undefined, real: JSON.stringify([1]) };`;
  for (const first of ["core", "whole"] as const) {
    for (const second of ["core", "whole"] as const) {
      test(`${first} then ${second}`, async () => {
        const a = toolRecorder();
        // "whole": the text names tools (a comment is enough); "core": it does not
        await pool.run(`${first === "whole" ? "// tools\n" : ""}${leave} const t = ${T}; return 1;`, LIMITS, a.fn);
        // twice: the second script on a guest prepared after the first
        for (let i = 0; i < 2; i++) {
          const b = toolRecorder();
          const r = await pool.run(`${second === "whole" ? "// tools\n" : ""}${look.replace("return {", `await ${T}.probe(${i}); console.log("x"); return {`)}`, LIMITS, b.fn);
          expect(r.ok ? r.value : `${r.error.code}: ${r.error.message}`).toEqual({ leaked: "undefined", polluted: true, real: "[1]" });
          expect(b.calls).toEqual([{ name: "probe", args: i }]);
        }
      });
    }
  }
  test("a cancelled and a timed-out script leave the thread's next script clean", async () => {
    const a = toolRecorder();
    const r = await pool.run(`globalThis.leaked = 1; for (;;) {}`, { ...LIMITS, cpuTimeoutMs: 200 }, a.fn);
    expect(r.ok).toBe(false);
    const b = toolRecorder();
    const r2 = await pool.run(`return [typeof leaked, await ${T}.ok(1)];`, LIMITS, b.fn);
    expect(r2.ok ? r2.value : `${r2.error.code}: ${r2.error.message}`).toEqual(["undefined", { echoed: 1 }]);
  });
});

describe("the two builds use only what they captured: a replaced Set.prototype.has or String changes neither", () => {
  for (const variant of ["core", "whole"] as const) {
    const src = (code: string): string => (variant === "core" ? code.replaceAll("tools", "\\u0074ools") : code);
    // the worker prepares a guest after the last script's kind (worker.ts lastNamedTools): one of this kind first, so
    // the script below runs on that build whether it gets the prepared guest or makes its own
    beforeEach(async () => {
      await pool.run(variant === "core" ? "return 1;" : "// tools\nreturn 1;", LIMITS, toolRecorder().fn);
    });
    test(`${variant}: Object.prototype's names on tools stay Object.prototype's, and send no call`, async () => {
      const { calls, fn } = toolRecorder();
      const r = await pool.run(src(`
        Set.prototype.has = () => false;
        const same = tools.hasOwnProperty === Object.prototype.hasOwnProperty && tools.toString === Object.prototype.toString;
        let sent = "none";
        try { const v = tools.hasOwnProperty("x"); sent = v && typeof v.then === "function" ? "a call" : "no call"; } catch (e) { sent = String(e); }
        return { same, sent };`), LIMITS, fn);
      expect(r.ok ? r.value : `${r.error.code}: ${r.error.message}`).toEqual({ same: true, sent: "no call" });
      expect(calls).toEqual([]);
    });
    test(`${variant}: console prints with the String it captured`, async () => {
      const { fn } = toolRecorder();
      const r = await pool.run(src(`const t = tools; globalThis.String = () => "lie"; console.log(10n); return 1;`), LIMITS, fn);
      expect(r.ok ? r.logs : `${r.error.code}: ${r.error.message}`).toEqual([expect.stringContaining("10")]);
    });
  }
});

describe("the global object locked before the first read", () => {
  test("Object.freeze(globalThis): tools still made and working; console's read fails in the guest only", async () => {
    const { calls, fn } = toolRecorder();
    const r = await pool.run(`Object.freeze(globalThis);
      let c; try { c = typeof console.log; } catch (e) { c = "threw"; }
      return [c, await ${T}.locked(1)];`, LIMITS, fn);
    expect(r.ok ? (r.value as unknown[])[1] : `${r.error.code}: ${r.error.message}`).toEqual({ echoed: 1 });
    expect(calls).toEqual([{ name: "locked", args: 1 }]);
  });
});

describe("a deadline that falls while a part compiles", () => {
  test("the script ends at its deadline even when it catches around every first read, and sends nothing after", async () => {
    const { calls, fn } = toolRecorder();
    const r = await pool.run(`
      let n = 0;
      function deep(d) { try { return deep(d + 1); } catch (e) { try { ${T}; } catch (_) {} n++; return 0; } }
      for (;;) { try { deep(0); } catch (_) {} if (n > 1e9) break; }
      await ${T}.never(1);`, { ...LIMITS, cpuTimeoutMs: 300, wallTimeoutMs: 5000 }, fn);
    expect(r.ok ? "ok" : r.error.code).toBe("script_timeout");
    expect(calls).toEqual([]);
  });
});

describe("a part first compiled inside a reply's slice (the direct FFI path)", () => {
  test("console first read after a tool's reply logs, and later calls still go out in order", async () => {
    const { calls, fn } = toolRecorder();
    const r = await pool.run(`
      const t = ${T};
      const a = await t.one(1);
      globalThis["con" + "sole"].log("after", a);
      const all = await Promise.all(Array.from({ length: 40 }, (_, i) => t.many(i)));
      return all.length;`, LIMITS, fn);
    expect(r.ok ? [r.value, r.logs] : `${r.error.code}: ${r.error.message}`).toEqual([40, ['after {"echoed":1}']]);
    expect(calls.length).toBe(41);
  });
});
