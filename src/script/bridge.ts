/**
 * @module script/bridge
 * The guest side of the door out: `tools.NAME(args)` and `console.*`, written in guest JavaScript
 * and wired to three host functions that take and return strings only. Nothing from the host
 * realm is handed to the guest as a live object: arguments leave as JSON text, results and errors
 * come back as JSON text the guest parses into fresh guest values.
 */
import type { QuickJSContext, QuickJSHandle } from "quickjs-emscripten-core";

/** The file name guest stacks show for the user's script. */
export const SCRIPT_FILENAME = "script.js";

/**
 * Guest bootstrap. Evaluated once per context; it returns `main(fn)`, which runs the user's async
 * function and reports through `settle(ok, jsonOrError)`. It captures `JSON`, `Error`, `Reflect`
 * and `Object.prototype` before user code runs, so a guest that replaces them only fools itself.
 * The host functions stay in this closure: they are never globals.
 */
const BOOTSTRAP = String.raw`(function (hostCall, hostLog, hostSettle) {
  "use strict";
  const stringify = JSON.stringify, parse = JSON.parse, GuestError = Error, TypeErr = TypeError;
  const reflectGet = Reflect.get, reserved = new Set(Object.getOwnPropertyNames(Object.prototype));
  const freeze = Object.freeze, defineProperty = Object.defineProperty;
  function callTool(name, args) {
    const json = args === undefined ? "{}" : stringify(args);
    if (typeof json !== "string") return Promise.reject(new TypeErr("tools." + name + ": arguments must be a JSON-serialisable value"));
    return hostCall(name, json).then(function (text) {
      const reply = parse(text);
      if (reply.ok) return reply.result;
      const e = new GuestError(String(reply.error.message));
      e.name = String(reply.error.name);
      e.code = String(reply.error.code);
      throw e;
    });
  }
  const tools = new Proxy(freeze({}), {
    get(target, name) {
      if (typeof name !== "string" || name === "then" || reserved.has(name)) return reflectGet(target, name);
      return function (args) { return callTool(name, args); };
    },
  });
  function show(v) {
    if (typeof v === "string") return v;
    if (v instanceof GuestError) return String(v.stack ? v.name + ": " + v.message + "\n" + v.stack : v);
    try { const s = stringify(v); return s === undefined ? String(v) : s; } catch (_) { try { return String(v); } catch (_) { return "[unprintable]"; } }
  }
  function logger(level) {
    return function () {
      let line = "";
      for (let i = 0; i < arguments.length; i++) line += (i ? " " : "") + show(arguments[i]);
      hostLog(level, line);
    };
  }
  const console = freeze({ log: logger("log"), info: logger("info"), debug: logger("debug"), warn: logger("warn"), error: logger("error") });
  defineProperty(globalThis, "tools", { value: tools, writable: false, enumerable: false, configurable: false });
  defineProperty(globalThis, "console", { value: console, writable: true, enumerable: false, configurable: true });
  return async function main(fn) {
    let json;
    try {
      const value = await fn();
      json = value === undefined ? undefined : stringify(value);
    } catch (e) {
      hostSettle(false, e);
      return;
    }
    hostSettle(true, json);
  };
})`;

/** What the bridge asks of the run that owns the context. Each returns nothing or a guest error to throw. */
export interface BridgeHooks {
  /** `tools[name](json)`: return a guest promise handle (the run owns the deferred). */
  call(name: string, argsJson: string): QuickJSHandle | { error: QuickJSHandle };
  /** One `console.*` line. */
  log(level: string, line: string): { error: QuickJSHandle } | void;
  /** The user's function finished: `ok` with JSON text (or undefined), or failed with `error` (a guest value handle, borrowed). */
  settle(ok: boolean, value: QuickJSHandle): void;
}

/**
 * Installs `tools` and `console` in `ctx` and returns the guest `main(fn)` function handle
 * (owned by the caller). Throws if the bootstrap fails to evaluate (a bug, or no memory left).
 */
export function installBridge(ctx: QuickJSContext, hooks: BridgeHooks): QuickJSHandle {
  const str = (h: QuickJSHandle): string | undefined => (ctx.typeof(h) === "string" ? ctx.getString(h) : undefined);
  const hostCall = ctx.newFunction("call", (nameH, argsH) => {
    const name = str(nameH);
    const args = str(argsH);
    if (name === undefined || args === undefined) return { error: ctx.newError({ name: "TypeError", message: "tool name and arguments must be strings" }) };
    return hooks.call(name, args);
  });
  const hostLog = ctx.newFunction("log", (levelH, lineH) => hooks.log(str(levelH) ?? "log", str(lineH) ?? ""));
  const hostSettle = ctx.newFunction("settle", (okH, valueH) => {
    hooks.settle(ctx.typeof(okH) === "boolean" && ctx.dump(okH) === true, valueH);
  });
  try {
    const boot = ctx.unwrapResult(ctx.evalCode(BOOTSTRAP, "airlock:bootstrap.js"));
    try {
      return ctx.unwrapResult(ctx.callFunction(boot, ctx.undefined, hostCall, hostLog, hostSettle));
    } finally {
      boot.dispose();
    }
  } finally {
    hostCall.dispose();
    hostLog.dispose();
    hostSettle.dispose();
  }
}

/** Wraps user code as the body of an async arrow function; line numbers in stacks match the user's. */
export function wrapUserCode(code: string): string {
  return `(async () => {${code}\n})`;
}
