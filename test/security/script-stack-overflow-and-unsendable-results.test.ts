/**
 * @module test/security/script-stack-overflow-and-unsendable-results
 * Script outcomes a guest could make wrong (src/script/vm.ts, bridge.ts), through real worker threads and real QuickJS:
 * - recursion through native code (a Proxy trap, a getter, `toString`, `valueOf`, `Symbol.toPrimitive`, the result's
 *   serialisation, a tool call's arguments, a getter of a thrown value the host reads) uses up the worker thread's own
 *   stack before QuickJS's limit trips: the
 *   script ends `script_stack_overflow` (never `internal`), its instance is dropped, and the next script on the thread
 *   runs clean;
 * - a return value JSON makes nothing of (a function, a Symbol, a `toJSON` that gives one) ends `script_result_invalid`
 *   saying what it was, never `ok` with no value;
 * - promise jobs a returned value's getter leaves running end the script at its deadline, saying they ran after it returned.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ScriptPool, type RunOptions } from "../../src/script/pool.ts";
import { codeOf, echoTool } from "../script-tools.ts";

const LIMITS: RunOptions = { cpuTimeoutMs: 30_000, wallTimeoutMs: 60_000, maxToolCalls: 1000, maxLogBytes: 64 * 1024, maxResultBytes: 1024 * 1024 };

// one thread, the shipped stack limit: each script runs on the thread the one before it overflowed
let pool: ScriptPool;
beforeAll(() => {
  pool = new ScriptPool({ workers: 1, memoryMb: 64, stackKb: 512 });
});
afterAll(async () => {
  await pool.close();
});

/** A trap that reads the property again on the Proxy itself: unbounded recursion through native code. */
const LOOP_GET = "new Proxy({}, { get(t, k, r) { return r[k]; } })";

const OVERFLOWS: Record<string, string> = {
  "a Proxy get trap behind Array.prototype": `Object.setPrototypeOf(Array.prototype, ${LOOP_GET}); return [].foo;`,
  "a Proxy get trap": `const p = ${LOOP_GET}; return p.x;`,
  "a Proxy has trap": `const p = new Proxy({}, { has(t, k) { return k in p; } }); return "x" in p;`,
  "a Proxy getPrototypeOf trap": `const p = new Proxy({}, { getPrototypeOf(t) { return Object.getPrototypeOf(p); } }); return Object.getPrototypeOf(p);`,
  "a Proxy ownKeys trap": `const p = new Proxy({}, { ownKeys(t) { return Reflect.ownKeys(p); } }); return Object.keys(p);`,
  "toString": "const o = { toString() { return String(o); } }; return String(o);",
  "valueOf": "const o = { valueOf() { return +o; } }; return +o;",
  "Symbol.toPrimitive": "const o = { [Symbol.toPrimitive]() { return `${o}`; } }; return `${o}`;",
  "the result's serialisation (get trap)": `return ${LOOP_GET};`,
  "the result's serialisation (ownKeys trap)": "const p = new Proxy({}, { ownKeys(t) { return Reflect.ownKeys(p); } }); return p;",
  "a tool call's arguments (get trap)": `return await tools.echo(${LOOP_GET});`,
  "a tool call's arguments (ownKeys trap)": "const p = new Proxy({}, { ownKeys(t) { return Reflect.ownKeys(p); } }); return await tools.echo({ a: p });",
  "a tool call's arguments behind Array.prototype": `Object.setPrototypeOf(Array.prototype, ${LOOP_GET}); return await tools.echo([1, 2]);`,
};

describe("recursion through native code (held: was `internal`, the instance kept)", () => {
  for (const [name, code] of Object.entries(OVERFLOWS)) {
    test(`${name}: script_stack_overflow, and the next script on the thread runs clean`, async () => {
      const r = await pool.run(code, LIMITS, echoTool);
      expect(codeOf(r)).toBe("script_stack_overflow");
      expect(r.ok ? "" : r.error.message).toContain("limits.script_stack_kb");
      expect(r.calls).toBe(0);
      // a fresh instance: built-ins untouched, a tool call works, and recursion a few hundred deep through a trap fits
      const next = await pool.run(
        "let d = 0; const p = new Proxy({}, { get(t, k, r) { return ++d < 200 ? r[k] : d; } }); const e = await tools.echo({ n: p.x }); return [Object.getPrototypeOf(Array.prototype) === Object.prototype, e.n];",
        LIMITS,
        echoTool,
      );
      expect(next).toEqual({ ok: true, value: [true, 200], logs: [], calls: 1 });
    });
  }

  // the host reads the thrown value's fields, running its getters: the host's stack running out there was read as "a
  // non-error value" (script_error) and the instance kept; QuickJS's own limit there still reads as a value without
  // fields (`Error: [object]`), as any getter that throws does
  const THROWN: Record<string, string> = {
    "a getter of the thrown value (message)": `throw { get message() { const p = ${LOOP_GET}; return p.x; } };`,
    "a getter of the thrown value (name, via toString)": "throw { get name() { const o = { toString() { return String(o); } }; return String(o); } };",
    "the thrown value is the Proxy": `throw ${LOOP_GET};`,
  };
  for (const [name, code] of Object.entries(THROWN)) {
    test(`${name}: script_stack_overflow (or QuickJS's own limit in the getter), and the next script on the thread runs clean`, async () => {
      for (let i = 0; i < 3; i++) {
        const r = await pool.run(code, LIMITS, echoTool);
        if (codeOf(r) === "script_error") expect(r.ok ? "" : r.error.message).toBe("Error: [object]");
        else expect(codeOf(r)).toBe("script_stack_overflow");
        expect(await pool.run("return [1, 2].map((x) => x * 2);", LIMITS, echoTool)).toEqual({ ok: true, value: [2, 4], logs: [], calls: 0 });
      }
    });
  }

  test("console.log of a value whose toJSON recurses: QuickJS's own limit is caught by console (logged as text), the host's ends the script", async () => {
    for (let i = 0; i < 3; i++) {
      const r = await pool.run(`console.log({ toJSON() { const p = ${LOOP_GET}; return p.x; } }); return 1;`, LIMITS, echoTool);
      if (r.ok) expect(r).toEqual({ ok: true, value: 1, logs: ["[object Object]"], calls: 0 });
      else expect(r.error.code).toBe("script_stack_overflow");
    }
  });

  test("a guest that catches what the overflow threw still ends script_stack_overflow or holds QuickJS's own error", async () => {
    for (let i = 0; i < 3; i++) {
      const r = await pool.run(`const p = ${LOOP_GET}; try { return p.x; } catch (e) { return String(e); }`, LIMITS, echoTool);
      // QuickJS's own limit is a catchable InternalError; the host's stack running out never is
      if (r.ok) expect(r.value).toBe("InternalError: stack overflow");
      else expect(r.error.code).toBe("script_stack_overflow");
    }
    expect(await pool.run("return 1 + 1", LIMITS, echoTool)).toEqual({ ok: true, value: 2, logs: [], calls: 0 });
  });
});

describe("a return value JSON cannot carry (held: was `ok` with no value)", () => {
  const CASES: Array<[string, string, string]> = [
    ["a function", "return () => 1;", "a function"],
    ["an async function", "return async function f() {};", "a function"],
    ["a Symbol", "return Symbol('x');", "a Symbol"],
    ["an object whose toJSON returns undefined", "return { toJSON() { return undefined; } };", "toJSON"],
    ["an object whose toJSON returns a function", "return { toJSON() { return () => 1; } };", "toJSON"],
  ];
  for (const [name, code, said] of CASES) {
    test(`${name}: script_result_invalid, saying what it was`, async () => {
      const r = await pool.run(code, LIMITS, echoTool);
      expect(codeOf(r)).toBe("script_result_invalid");
      expect(r.ok ? "" : r.error.message).toContain(said);
    });
  }

  test("BigInt stays script_result_invalid; undefined (or nothing) is ok with no value; a function with toJSON sends its JSON", async () => {
    expect(codeOf(await pool.run("return 1n;", LIMITS, echoTool))).toBe("script_result_invalid");
    expect(await pool.run("return undefined;", LIMITS, echoTool)).toEqual({ ok: true, value: null, logs: [], calls: 0 });
    expect(await pool.run("let x = 1;", LIMITS, echoTool)).toEqual({ ok: true, value: null, logs: [], calls: 0 });
    expect(await pool.run("const f = () => 1; f.toJSON = () => 'f'; return [f, { a: f }];", LIMITS, echoTool)).toEqual({ ok: true, value: ["f", { a: "f" }], logs: [], calls: 0 });
    // inside an object or array JSON drops or nulls them, as it always did: only the value as a whole must be data
    expect(await pool.run("return { f() {}, s: Symbol('x'), a: [() => 1] };", LIMITS, echoTool)).toEqual({ ok: true, value: { a: [null] }, logs: [], calls: 0 });
  });
});

describe("promise jobs left running after the script's end (held: the message blamed the script's own work)", () => {
  const SHORT: RunOptions = { ...LIMITS, cpuTimeoutMs: 300 };
  const LOOP = "(function loop() { Promise.resolve().then(loop); })();";
  const CASES: Record<string, string> = {
    "started by a getter of the return value while it is serialised": `return { get x() { ${LOOP} return 1; } };`,
    "started by toJSON of the return value": `return { toJSON() { ${LOOP} return 1; } };`,
    "started by a getter that then throws": `return { get x() { ${LOOP} throw new Error("boom"); } };`,
    "started by the script's code before it returned": `${LOOP} return 1;`,
  };
  for (const [name, code] of Object.entries(CASES)) {
    test(`${name}: script_timeout, saying the jobs ran after the script returned`, async () => {
      const r = await pool.run(code, SHORT, echoTool);
      expect(codeOf(r)).toBe("script_timeout");
      expect(r.ok ? "" : r.error.message).toContain("after its function returned or threw");
    });
  }

  test("a script busy in its own function keeps the plain deadline message", async () => {
    const r = await pool.run("for (;;) {}", SHORT, echoTool);
    expect(codeOf(r)).toBe("script_timeout");
    expect(r.ok ? "" : r.error.message).toContain("do less work per script");
    expect(r.ok ? "" : r.error.message).not.toContain("after its function returned");
  });
});
