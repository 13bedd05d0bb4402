/**
 * @module script/test-scripts
 * Guest scripts shared by the script tests (script/pool.test.ts) and the compiled-binary tests
 * (test/e2e/script-binary.test.ts), with what each must end with. Test support only.
 */

/** The globals a guest may see: ECMAScript built-ins of QuickJS, plus `tools` and `console`. */
export const ALLOWED_GLOBALS = [
  "Error", "EvalError", "RangeError", "ReferenceError", "SyntaxError", "TypeError", "URIError", "InternalError", "AggregateError",
  "Array", "Object", "Function", "Iterator", "parseInt", "parseFloat", "isNaN", "isFinite", "decodeURI", "decodeURIComponent",
  "encodeURI", "encodeURIComponent", "escape", "unescape", "Infinity", "NaN", "undefined", "eval", "Number", "Boolean", "String",
  "Math", "Reflect", "Symbol", "globalThis", "BigInt", "Date", "RegExp", "JSON", "Proxy", "Map", "Set", "WeakMap", "WeakSet",
  "ArrayBuffer", "Uint8ClampedArray", "Int8Array", "Uint8Array", "Int16Array", "Uint16Array", "Int32Array",
  "Uint32Array", "BigInt64Array", "BigUint64Array", "Float16Array", "Float32Array", "Float64Array", "DataView", "Promise",
  "WeakRef", "FinalizationRegistry", "Atomics", "tools", "console",
];

/** Host names that must be `undefined` in the guest. */
export const HOST_NAMES = [
  "require", "process", "fetch", "Bun", "Deno", "setTimeout", "setInterval", "setImmediate", "queueMicrotask", "WebAssembly",
  "std", "os", "module", "exports", "Buffer", "navigator", "Worker", "postMessage", "importScripts", "__filename", "__dirname",
  "structuredClone", "TextEncoder", "performance", "crypto", "SharedArrayBuffer",
];

/** Returns `{names, types, imports, evalProcess, fnProcess}`: what the guest can reach. */
export const ISOLATION_SCRIPT = `
const types = {};
for (const n of ${JSON.stringify(HOST_NAMES)}) types[n] = typeof globalThis[n];
const imports = {};
for (const m of ["fs", "node:fs", "node:child_process", "bun:sqlite", "./script/worker.ts", "/etc/passwd"]) {
  try { await import(m); imports[m] = "loaded"; } catch (e) { imports[m] = "refused"; }
}
return {
  names: Object.getOwnPropertyNames(globalThis),
  types,
  imports,
  evalProcess: eval("typeof process"),
  fnProcess: Function("return typeof this.process")(),
};
`;

/** Expected result of ISOLATION_SCRIPT's `imports`. */
export const ISOLATION_IMPORTS = { fs: "refused", "node:fs": "refused", "node:child_process": "refused", "bun:sqlite": "refused", "./script/worker.ts": "refused", "/etc/passwd": "refused" };

/**
 * Walks `.constructor` chains from a caught tool error, a tool result and every global; needs tools
 * `fail` (an error outcome) and `echo` (returns its args). Every field must be `true` / empty.
 */
export const ESCAPE_SCRIPT = `
const walk = (v) => { let x = v; for (let i = 0; i < 4; i++) x = x.constructor; return x; };
let err;
try { await tools.fail({ message: "boom" }); } catch (e) { err = e; }
const res = await tools.echo({ a: { b: [1, { c: "d" }] } });
const badGlobals = [];
for (const k of Object.getOwnPropertyNames(globalThis)) {
  const v = globalThis[k];
  if (v === null || (typeof v !== "object" && typeof v !== "function")) continue;
  if (walk(v) !== Function) badGlobals.push(k);
}
for (const [k, f] of [["tools.x", tools.x], ["console.log", console.log], ["tools.echo", tools.echo]]) if (walk(f) !== Function) badGlobals.push(k);
const F = walk(err);
return {
  errorIsGuestError: err instanceof Error && Object.getPrototypeOf(err) === Error.prototype,
  errorWalk: walk(err) === Function,
  errorFnSeesNoHost: F("return typeof process + typeof require + typeof Bun")() === "undefinedundefinedundefined",
  errorFieldsAreStrings: Object.getOwnPropertyNames(err).every((k) => typeof err[k] === "string"),
  errorFields: Object.getOwnPropertyNames(err).sort(),
  errorCode: err.code,
  resultWalk: walk(res) === Function && walk(res.a.b) === Function && walk(res.a.b[1]) === Function,
  resultProto: Object.getPrototypeOf(res) === Object.prototype && Array.isArray(res.a.b),
  fnGlobal: Function("return this")() === globalThis,
  badGlobals,
};
`;

/** Denial-of-service scripts and the code each must end with (run with cpuTimeoutMs 500, maxToolCalls 1000). */
export const DOS_CASES: { name: string; code: string; expect: string }[] = [
  { name: "for(;;){} in a promise callback after return", code: "Promise.resolve().then(() => { for (;;) {} }); return 1", expect: "script_timeout" },
  { name: "for(;;){} after a tool call", code: "await tools.echo({}); for (;;) {}", expect: "script_timeout" },
  { name: "memory bomb of retained strings", code: "const keep = []; for (let i = 0; ; i++) keep.push(String(i).repeat(10000) + i);", expect: "script_memory_limit" },
  { name: "unbounded recursion", code: "function f(n) { return f(n + 1) + 1; } return f(0);", expect: "script_stack_overflow" },
  { name: "huge log flood", code: "for (;;) console.log('x'.repeat(10000));", expect: "script_output_too_large" },
  { name: "10,000 concurrent tool calls (limit 1,000)", code: "const ps = []; for (let i = 0; i < 10000; i++) ps.push(tools.echo({ i })); await Promise.all(ps);", expect: "script_too_many_calls" },
  { name: "10,000 sequential tool calls (limit 1,000)", code: "for (let i = 0; i < 10000; i++) await tools.echo({ i });", expect: "script_too_many_calls" },
  { name: "a result bigger than the result limit", code: "return 'x'.repeat(3 * 1024 * 1024);", expect: "script_output_too_large" },
];

/** Pollutes the guest's prototypes and JSON, then echoes `{a: 1, list: [1, 2]}`. */
export const POLLUTION_SCRIPT = `
Object.prototype.polluted = "yes";
Object.prototype.toJSON = undefined;
Array.prototype.extra = "no";
JSON.stringify = () => '{"hacked":true}';
JSON.parse = () => ({ hacked: true });
const r = await tools.echo({ a: 1, list: [1, 2] });
return { a: r.a, list: [r.list[0], r.list[1]] };
`;

/**
 * One native call that never checks the interrupt handler: `includes` on an array-like of length 2^40
 * walks 2^40 missing properties inside C. Only the host watchdog (replacing the worker) stops it.
 */
export const NATIVE_STALL_SCRIPT = "return Array.prototype.includes.call({ length: 2 ** 40 }, 1);";
