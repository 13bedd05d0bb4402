/**
 * @module test/security/script-bridge-lazy
 * The bridge's `tools` and `console` are accessors, made on first read: compiled then (src/script/bridge.ts `BOOTSTRAP`,
 * `PARTS`) for a script whose text does not name `tools`, made with the core (`BOOTSTRAP_WHOLE`) for one that does.
 * Each test runs against both: the "core" variant writes `tools` as `\u0074ools` (the same name to JavaScript, not to
 * `mentionsTools`). Attacked by a guest that replaces the built-ins they use before it first touches them, that reads
 * their accessors and walks everything they reach looking for a host function, and that never touches them at all.
 * Real worker threads, real QuickJS.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { ScriptPool, type RunOptions } from "../../src/script/pool.ts";
import type { ToolOutcome } from "../../src/script/protocol.ts";
import { toolRecorder } from "../script-tools.ts";

const LIMITS: RunOptions = { cpuTimeoutMs: 30_000, wallTimeoutMs: 60_000, maxToolCalls: 1000, maxLogBytes: 64 * 1024, maxResultBytes: 1024 * 1024 };

/** Replaces every built-in the bridge's parts use (and then some) with something that lies or throws. */
const POISON = `
  const boom = () => { throw new Error("poisoned"); };
  JSON.stringify = () => '"lie"'; JSON.parse = () => [1, { ok: true, result: "lie" }];
  globalThis.Proxy = function () { boom(); }; globalThis.Promise = function () { boom(); };
  globalThis.String = () => "lie"; globalThis.Error = function () { boom(); }; globalThis.TypeError = globalThis.Error;
  Object.freeze = boom; Object.create = boom; Object.defineProperty = boom; Object.getOwnPropertyNames = boom; Reflect.get = boom;
  Function.prototype.call = boom; Function.prototype.apply = boom; Function.prototype.bind = boom;
`;

let pool: ScriptPool;
beforeAll(() => {
  pool = new ScriptPool({ workers: 1, memoryMb: 64, stackKb: 512 });
});
afterAll(async () => {
  await pool.close();
});


/**
 * Runs a script of `variant`'s kind: the worker prepares its next guest after the last script's kind (worker.ts
 * `lastNamedTools`), so the script that follows runs on that build whether it gets the prepared guest or makes its own.
 */
const warm = async (variant: "core" | "whole"): Promise<void> => {
  await pool.run(variant === "core" ? "return 1;" : "// tools\nreturn 1;", LIMITS, toolRecorder().fn);
};

for (const variant of ["core", "whole"] as const) {
  /** The script as this variant runs it: for "core", no literal `tools` in its text (bridge.ts `mentionsTools`). */
  const src = (code: string): string => (variant === "core" ? code.replaceAll("tools", "\\u0074ools") : code);
  describe(`${variant}: tools and console first touched after user code replaced built-ins`, () => {
    beforeEach(() => warm(variant));
    test("a tool call sends the real arguments, its result comes back, and console logs the real text", async () => {
      const { calls, fn } = toolRecorder();
      const r = await pool.run(src(`${POISON}
        console.log("hello", { a: 1 }, [2]);
        const v = await tools.echo({ n: 7, s: "x" });
        const a = await tools.first(1), b = await tools.second([2]);
        console.warn("got", v);
        return { v, a, b };`), LIMITS, fn);
      expect(r.ok ? "ok" : `${r.error.code}: ${r.error.message}`).toBe("ok");
      if (!r.ok) return;
      // the bridge serialises the return value with the JSON.stringify it captured, not the guest's lying one
      expect(r.value).toEqual({ v: { echoed: { n: 7, s: "x" } }, a: { echoed: 1 }, b: { echoed: [2] } });
      expect(calls).toEqual([
        { name: "echo", args: { n: 7, s: "x" } },
        { name: "first", args: 1 },
        { name: "second", args: [2] },
      ]);
      expect(r.logs).toEqual(['hello {"a":1} [2]', '[warn] got {"echoed":{"n":7,"s":"x"}}']);
      expect(r.calls).toBe(3);
    });

    test("a failed tool call rejects with the host's error, built from the captured Error", async () => {
      const r = await pool.run(src(`${POISON.replace("globalThis.Error = function () { boom(); };", "globalThis.Error = function () { return { fake: true }; };")}
        try { await tools.nope(1); return "no error"; } catch (e) { return [e instanceof Object.getPrototypeOf(RangeError.prototype).constructor, e.code, e.message, e.fake === undefined]; }`), LIMITS, async () => ({ ok: false, error: { code: "unknown_tool", message: "no tool nope" } }));
      expect(r.ok ? "ok" : `${r.error.code}: ${r.error.message}`).toBe("ok");
      expect(r.ok && r.value).toEqual([true, "unknown_tool", "no tool nope", true]);
    });

    test("with built-ins replaced only after the first touch, the same objects serve", async () => {
      const { calls, fn } = toolRecorder();
      const r = await pool.run(src(`const t = tools, c = console; ${POISON} c.log("x"); await t.one(1); return tools === t && console === c;`), LIMITS, fn);
      expect(r.ok ? "ok" : `${r.error.code}: ${r.error.message}`).toBe("ok");
      expect(calls).toEqual([{ name: "one", args: 1 }]);
      expect(r.ok && r.logs).toEqual(["x"]);
    });
  });

  describe(`${variant}: the accessors`, () => {
    beforeEach(() => warm(variant));
    test("reading them directly yields only the same tools and console; nothing they reach is a host function", async () => {
      const { fn } = toolRecorder();
      const r = await pool.run(src(`
        const seen = new Set(), found = [], queue = [];
        const visit = (v, path) => { if ((typeof v === "object" && v !== null) || typeof v === "function") { if (!seen.has(v)) { seen.add(v); queue.push([v, path]); } } };
        const td = Object.getOwnPropertyDescriptor(globalThis, "tools");
        const cd = Object.getOwnPropertyDescriptor(globalThis, "console");
        visit(td.get, "tools.get"); visit(cd.get, "console.get"); visit(cd.set, "console.set");
        const t1 = td.get(), t2 = td.get.call(undefined), t3 = td.get.call({});
        const c1 = cd.get();
        const same = t1 === tools && t2 === tools && t3 === tools && c1 === console;
        visit(tools, "tools"); visit(console, "console");
        for (const k of ["log", "info", "debug", "warn", "error"]) visit(console[k], "console." + k);
        visit(tools.anything, "tools.anything");
        while (queue.length) {
          const [v, path] = queue.shift();
          if (typeof v === "function") {
            const src = Function.prototype.toString.call(v);
            if (/^function (part|flush|log|settle)\\(\\)/.test(src) || (src.includes("[native code]") && ["part", "flush", "log", "settle"].includes(v.name))) found.push(path);
            for (const k of ["caller", "arguments"]) { try { visit(v[k], path + "." + k); } catch (e) {} }
          }
          if (v === tools) continue; // a proxy whose every name is a tool function (already visited one)
          for (const k of Reflect.ownKeys(v)) {
            const d = Reflect.getOwnPropertyDescriptor(v, k);
            if (d === undefined) continue;
            visit(d.value, path + "." + String(k)); visit(d.get, path + ".get " + String(k)); visit(d.set, path + ".set " + String(k));
          }
          visit(Object.getPrototypeOf(v), path + ".__proto__");
        }
        return { same, found, toolsConfigurable: td.configurable, consoleKind: "value" in Object.getOwnPropertyDescriptor(globalThis, "console") ? "data" : "accessor" };`), LIMITS, fn);
      expect(r.ok ? r.value : `${r.error.code}: ${r.error.message}`).toEqual({ same: true, found: [], toolsConfigurable: false, consoleKind: "data" });
    });

    test("tools cannot be replaced or deleted; console can be assigned, and deleted, before or after its first read", async () => {
      const { fn } = toolRecorder();
      const r = await pool.run(src(`
        const out = {};
        try { globalThis.tools = 1; // sloppy code: the assignment is ignored, as it was to the old read-only value
   out.assign = typeof tools; } catch (e) { out.assign = e.name; }
        out.del = delete globalThis.tools; out.after = typeof tools;
        try { Object.defineProperty(globalThis, "tools", { value: 1 }); out.define = "defined"; } catch (e) { out.define = e.name; }
        console = { log: () => 1 }; out.assigned = console.log();
        out.delConsole = delete globalThis.console; out.gone = typeof console;
        return out;`), LIMITS, fn);
      expect(r.ok ? r.value : `${r.error.code}: ${r.error.message}`).toEqual({ assign: "object", del: false, after: "object", define: "TypeError", assigned: 1, delConsole: true, gone: "undefined" });
      const before = await pool.run(src(`delete globalThis.console; return typeof console;`), LIMITS, fn);
      expect(before.ok ? before.value : before.error.code).toBe("undefined");
    });
  });

  describe(`${variant}: a script that never touches tools or console`, () => {
    beforeEach(() => warm(variant));
    test("runs, returns its value and makes no call; the next script's tools work", async () => {
      const { calls, fn } = toolRecorder();
      const r = await pool.run(src("return [1 + 1, Object.keys(globalThis).includes('tools')];"), LIMITS, fn);
      expect(r).toMatchObject({ ok: true, value: [2, false], logs: [], calls: 0 });
      const next = await pool.run(src("console.log('n'); return await tools.echo(3);"), LIMITS, fn);
      expect(next).toMatchObject({ ok: true, value: { echoed: 3 }, logs: ["n"], calls: 1 });
      expect(calls).toEqual([{ name: "echo", args: 3 }]);
    });
  });
}

describe("the two builds give a guest the same objects", () => {
  test("what a guest can read of tools, console, their functions and the errors of a call is the same in both", async () => {
    const probe = `
      const view = (f) => [typeof f, f.name, f.length, Function.prototype.toString.call(f), Object.isFrozen(f), Reflect.ownKeys(f).map(String), Object.getPrototypeOf(f) === Function.prototype];
      const err = async (f) => { try { await f(); return "no error"; } catch (e) { return [e.constructor.name, e.name, e.code, e.message, Reflect.ownKeys(e).map(String)]; } };
      const t = tools, c = console;
      return {
        tools: [typeof t, Object.isFrozen(t), Reflect.ownKeys(t).map(String), Object.getPrototypeOf(t) === Object.prototype, t.then, t.hasOwnProperty === Object.prototype.hasOwnProperty, t.x === t.x, t.x === t.y],
        fn: view(t.x),
        console: [Object.isFrozen(c), Reflect.ownKeys(c).map(String), Object.getPrototypeOf(c) === Object.prototype],
        loggers: ["log", "info", "debug", "warn", "error"].map((k) => view(c[k])),
        failed: await err(() => t.nope(1)),
        unserialisable: await err(() => t.x(() => 1)),
        bigint: await err(() => t.x(1n)),
        descriptors: ["tools", "console"].map((k) => Object.entries(Object.getOwnPropertyDescriptor(globalThis, k)).map(([n, v]) => n + ":" + typeof v)),
      };`;
    const outcome = async (name: string): Promise<ToolOutcome> => (name === "nope" ? { ok: false, error: { code: "unknown_tool", message: "no tool nope" } } : { ok: true, result: 1 });
    const views: unknown[] = [];
    for (const variant of ["core", "whole"] as const) {
      await warm(variant);
      const r = await pool.run(variant === "core" ? probe.replaceAll("tools", "\\u0074ools") : probe, LIMITS, outcome);
      views.push(r.ok ? r.value : `${r.error.code}: ${r.error.message}`);
    }
    expect(views[0]).toMatchObject({ fn: ["function", "f", 1, "function (args) { return callTool(name, head, args); }", true, ["length", "name", "prototype"], true] });
    expect(views[1]).toEqual(views[0]);
  });
});
