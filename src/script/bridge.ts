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
 * How the guest's `main` ended, as it passes it to the host's `settle` (a number: the bootstrap compares with operators only),
 * and the value passed with it: `returned`, the return value's JSON text (or undefined); `threw`, the thrown guest value;
 * `unserialisable`, what `JSON.stringify` of the return value threw; `calledLate`, how many tool calls a getter or
 * `toJSON` made while it was serialised (refused in the guest, never sent); `notJson`, the `typeof` of a return value
 * other than `undefined` that `JSON.stringify` made nothing of (a function, a Symbol, an object whose `toJSON` gave one).
 */
export const SETTLE = { returned: 0, threw: 1, unserialisable: 2, calledLate: 3, notJson: 4 } as const;
export type SettleKind = keyof typeof SETTLE;

/** Calls the guest queues before it hands them to the host without waiting for its slice to end (`hostFlush`). */
export const FLUSH_AT = 32;

/**
 * One part of the bridge as guest source text, from which both builds are made: the part compiled apart
 * (`partFunction`: `(function (PARAMS) { "use strict"; BODY return RESULT; })`, for the core's first read) and the
 * bridge in one piece (`BOOTSTRAP_WHOLE`: BODY spliced into the bootstrap's own function, where every name of
 * `params` is the bootstrap's binding of the same name). `params` names only intrinsics the bootstrap captured before
 * user code ran, its `door` and host functions (the core passes exactly these names, so a part reads no global).
 */
interface PartSource {
  /** The parameter list, comma-separated: names the bootstrap binds (`CAPTURE`, its arguments). */
  readonly params: string;
  /** Statements (no `return`); the names they declare must not clash with the bootstrap's. */
  readonly body: string;
  /** The expression the compiled-apart part returns. */
  readonly result: string;
}

/**
 * The bootstrap's first statements, in both builds: the intrinsics captured before user code runs, Object.prototype's
 * names, `SharedArrayBuffer` deleted (QuickJS's growable one reaches past its bytes), and the door's state `door` (`open`, `late`: a null-prototype record only the bridge holds, which the `tools`
 * part reads and counts in; a record, not two functions: each guest function costs its compile a few µs).
 */
const CAPTURE = String.raw`  const stringify = JSON.stringify, parse = JSON.parse, GuestError = Error, TypeErr = TypeError, GuestPromise = Promise, GuestString = String, GuestProxy = Proxy;
  const reflectGet = Reflect.get, freeze = Object.freeze, defineProperty = Object.defineProperty, create = Object.create;
  // a null-prototype record, read with operators only (a Set's has would be the guest's Set.prototype.has at call time)
  const reserved = create(null), names = Object.getOwnPropertyNames(Object.prototype);
  for (let i = 0; i < names.length; i++) reserved[names[i]] = true;
  // open until the script's value is decided (its function returned or threw): a call made after is refused, never
  // queued, and counted in late (a getter or toJSON run while its return value is serialised)
  const door = { __proto__: null, open: true, late: 0 };
  // no shared memory: QuickJS allocates a growable SharedArrayBuffer's first bytes only and grow lengthens it in place,
  // over the heap and past its break (test/security/script-no-growable-shared-memory-past-its-bytes); a script has no
  // thread to share with
  delete globalThis.SharedArrayBuffer;`;

/**
 * `tools`: the proxy whose every name is a tool function, the queue of calls and their resolvers. Declares `tools`,
 * `take`, `deliver` and `close` (shuts the door, then hands the host the calls still queued), which `BOOTSTRAP_WHOLE`
 * uses by name; compiled apart it returns `[tools, take, deliver, close]`.
 */
const TOOLS_PART: PartSource = {
  params: "stringify, parse, GuestError, TypeErr, GuestPromise, GuestString, GuestProxy, reflectGet, freeze, create, reserved, hostFlush, door",
  body: String.raw`  const waiting = create(null);
  let nextId = 1, queued = "", count = 0;
  function takeText() {
    const text = queued;
    queued = "";
    count = 0;
    return text;
  }
  function callTool(name, head, args) {
    if (!door.open) {
      door.late++;
      return GuestPromise.reject(new GuestError("tools." + name + ": the script has ended (its value is decided); a tool call made after that is not sent"));
    }
    const json = args === undefined ? "{}" : stringify(args);
    if (typeof json !== "string") return GuestPromise.reject(new TypeErr("tools." + name + ": arguments must be a JSON-serialisable value"));
    const id = nextId++;
    const p = new GuestPromise(function (resolve, reject) {
      waiting[id] = function (reply) {
        if (reply.ok) return resolve(reply.result);
        const e = new GuestError(GuestString(reply.error.message));
        e.name = GuestString(reply.error.name);
        e.code = GuestString(reply.error.code);
        reject(e);
      };
    });
    queued += id + ":" + json.length + ":" + head + json;
    if (++count >= ${FLUSH_AT}) hostFlush(takeText());
    return p;
  }
  function take() {
    return count === 0 ? "" : takeText();
  }
  function deliver(text) {
    const r = parse(text), id = r[0];
    const settle = waiting[id];
    if (settle === undefined) return;
    delete waiting[id];
    settle(r[1]);
  }
  // the calls made before the script's value was decided go out before its end is reported, and the door closes
  // before anything of the guest runs again (the host reading what it threw, its return value's getters and toJSON)
  function close() {
    // first: a refused flush throws, and the door must be shut already
    door.open = false;
    if (count !== 0) hostFlush(takeText());
  }
  // each tool's function is made once, with its record head (the name's JSON text and its length)
  const named = create(null);
  const tools = new GuestProxy(freeze({}), {
    get(target, name) {
      const known = named[name];
      if (known !== undefined) return known;
      if (typeof name !== "string" || name === "then" || reserved[name] === true) return reflectGet(target, name);
      const nameJson = stringify(name), head = nameJson.length + ":" + nameJson;
      const f = function (args) { return callTool(name, head, args); };
      named[name] = freeze(f);
      return f;
    },
  });`,
  result: "[tools, take, deliver, close]",
};

/** `console`: five loggers over `hostLog`; compiled apart it returns the frozen console object. */
const CONSOLE_PART: PartSource = {
  params: "stringify, GuestError, GuestString, freeze, hostLog",
  body: String.raw`  function show(v) {
    if (typeof v === "string") return v;
    if (v instanceof GuestError) return GuestString(v.stack ? v.name + ": " + v.message + "\n" + v.stack : v);
    try { const s = stringify(v); return s === undefined ? GuestString(v) : s; } catch (_) { try { return GuestString(v); } catch (_) { return "[unprintable]"; } }
  }
  function logger(level) {
    return function () {
      let line = "";
      for (let i = 0; i < arguments.length; i++) line += (i ? " " : "") + show(arguments[i]);
      hostLog(level, line);
    };
  }`,
  result: `freeze({ log: logger("log"), info: logger("info"), debug: logger("debug"), warn: logger("warn"), error: logger("error") })`,
};

/**
 * `text` without its comment lines (each line whose first non-blank characters are `//`), as the guest compiles it:
 * QuickJS keeps every function's source text, comments too, and the bootstrap's comments (≈ 15 % of it) measurably
 * cost its compile (docs/performance.md). Only whole lines go: no guest code here has a string or template spanning
 * lines, and no comment follows code on its line.
 */
function withoutComments(text: string): string {
  return text.replace(/^[ \t]*\/\/.*\n/gm, "");
}

/** A part compiled apart: a function expression the core calls with the bindings `part.params` names. */
function partFunction(part: PartSource): string {
  return withoutComments(`(function (${part.params}) {\n  "use strict";\n${part.body}\n  return ${part.result};\n})`);
}

/** `console` as a plain writable data property holding `v` (its accessor's getter and setter both end so). */
const CONSOLE_DATA = (v: string): string => `defineProperty(globalThis, "console", { value: ${v}, writable: true, enumerable: false, configurable: true })`;

/**
 * The global `console` accessor, in both builds: its getter runs `firstRead` (statements that leave the object in the
 * bootstrap's `console`), then becomes the data property; its setter makes the data property at once.
 */
const consoleAccessor = (firstRead: string): string => String.raw`  defineProperty(globalThis, "console", { get: function () {
${firstRead}    ${CONSOLE_DATA("console")};
    return console;
  }, set: function (v) {
    ${CONSOLE_DATA("v")};
  }, enumerable: false, configurable: true });`;

/** The bootstrap's last statements, in both builds: `main`, and the function the bootstrap returns. Calls `close`. */
const MAIN = String.raw`  async function main(fn) {
    let value;
    try {
      value = await fn();
    } catch (e) {
      close();
      hostSettle(${SETTLE.threw}, e);
      return;
    }
    close();
    let json, failed = false, failure;
    try {
      json = value === undefined ? undefined : stringify(value);
    } catch (e) {
      failed = true;
      failure = e;
    }
    if (door.late !== 0) hostSettle(${SETTLE.calledLate}, door.late);
    else if (failed) hostSettle(${SETTLE.unserialisable}, failure);
    else if (json === undefined && value !== undefined) hostSettle(${SETTLE.notJson}, typeof value);
    else hostSettle(${SETTLE.returned}, json);
  }
  return [main, take, deliver];`;

/**
 * Guest bootstrap, the core compiled in every context. Evaluated once per context; it returns `[main, take, deliver]`:
 * - `main(fn)` runs the user's async function, hands the host the calls it made (`flush`), closes the door (a later
 *   `tools.*` call is refused in the guest and never queued), then serialises the return value and reports through
 *   `settle(SETTLE kind, jsonOrErrorOrReason)`;
 * - `take()` hands the host the tool calls made since the last take as one batch text (`parseBatch` reads it), or
 *   `""` when none was made;
 * - `deliver(text)` settles call `id`'s promise from the JSON text `[id, {ok, result | error}]`.
 * A tool call is a guest promise whose resolver stays in this closure: the host never creates, holds or
 * resolves a guest promise, and a call crosses into the host only in a batch (`take`, or `flush` once
 * `FLUSH_AT` calls wait, so a `Promise.all` of many calls reaches the host while the guest goes on).
 * It captures `JSON`, `Error`, `TypeError`, `Promise`, `String`, `Proxy`, `Reflect.get`, `Object`'s functions and
 * `Object.prototype`'s names before user code runs (`CAPTURE`) and uses only operators (no prototype method) on its own
 * data, so a guest that replaces built-ins only fools itself; the host checks every batch anyway. The host functions
 * stay in this closure: they are never globals.
 *
 * For a script whose text does not name `tools` (`mentionsTools`) only this core is compiled (QuickJS compiles ≈ 40 µs
 * per KB, and such a script mostly touches neither global; one that names tools gets `BOOTSTRAP_WHOLE`):
 * `tools` and `console` are accessors on the global object, and the first read of either asks the host function
 * `hostPart(n)` to compile that part (`PARTS[n]`, a function expression), which the core then calls with the
 * intrinsics it captured before user code ran. The accessor returns the same object ever after (`tools` stays a
 * non-configurable global; `console` becomes a plain writable data property, as before); calling the getter directly
 * yields nothing more than reading the global. A part made after the script's value is decided (first touched by a
 * getter or `toJSON` of its return value) sees the door shut: its calls are refused and counted in `door.late`.
 */
const BOOTSTRAP = withoutComments(String.raw`(function (hostLog, hostSettle, hostFlush, hostPart) {
  "use strict";
${CAPTURE}
  let tools, console, partTake = null, partDeliver = null, partClose = null;
  defineProperty(globalThis, "tools", { get: function () {
    if (tools === undefined) {
      const part = hostPart(0)(${TOOLS_PART.params});
      tools = part[0]; partTake = part[1]; partDeliver = part[2]; partClose = part[3];
    }
    return tools;
  }, enumerable: false, configurable: false });
${consoleAccessor(`    if (console === undefined) console = hostPart(1)(${CONSOLE_PART.params});\n`)}
  function take() {
    return partTake === null ? "" : partTake();
  }
  function deliver(text) {
    if (partDeliver !== null) partDeliver(text);
  }
  // the part's close when it was made (it shuts the door too), else the door alone
  function close() {
    door.open = false;
    if (partClose !== null) partClose();
  }
${MAIN}
})`);

/**
 * The bridge in one piece, for a script likely to use `tools` (`mentionsTools`): `CAPTURE`, then the parts' bodies
 * (`TOOLS_PART`, `CONSOLE_PART`) spliced into the bootstrap's own function, so the guest compiles one flat function as
 * before user code runs (compiling the core and a part apart, or the parts nested in the core as functions, cost such
 * a script ≈ 100 µs more: docs/performance.md). The guest sees what `BOOTSTRAP` gives it (the same accessors, objects,
 * `main`, `take`, `deliver`), made from the same text; only when the parts are compiled differs.
 */
const BOOTSTRAP_WHOLE = withoutComments(String.raw`(function (hostLog, hostSettle, hostFlush) {
  "use strict";
${CAPTURE}
${TOOLS_PART.body}
${CONSOLE_PART.body}
  const console = ${CONSOLE_PART.result};
  // the same accessors as the core's (BOOTSTRAP), over objects made already
  defineProperty(globalThis, "tools", { get: function () { return tools; }, enumerable: false, configurable: false });
${consoleAccessor("")}
${MAIN}
})`);

/**
 * The parts of the bridge compiled on first use (`hostPart(n)` evaluates `PARTS[n]`; the core calls the function with
 * what it captured before user code ran, and nothing else: no part reads a global).
 * 0, `tools`: returns `[tools, take, deliver, close]`. 1, `console`: returns the frozen console object.
 */
const PARTS = [partFunction(TOOLS_PART), partFunction(CONSOLE_PART)] as const;

/** True when the script's text contains `tools` (a substring test: a comment or a string counts too). */
export function mentionsTools(code: string): boolean {
  return code.includes("tools");
}

/** What the bridge asks of the run that owns the context. Each returns nothing or a guest error to throw. */
export interface BridgeHooks {
  /**
   * A batch of calls the guest made (the JSON text `take()` returns), handed over before its slice ended; null when
   * QuickJS could not copy it out (no memory left in the guest): the calls are lost, so the script must end.
   */
  flush(batchJson: string | null): { error: QuickJSHandle } | void;
  /** One `console.*` line. */
  log(level: string, line: string): { error: QuickJSHandle } | void;
  /**
   * The user's function finished (`SETTLE`: `value`, a borrowed handle, is what that kind passes).
   */
  settle(end: SettleKind, value: QuickJSHandle): void;
}

/** The guest functions the host drives (handles owned by whoever installed the bridge; `dispose()` frees them). */
export interface GuestBridge {
  /** `main(fn)`: runs the user's function `fn`. */
  readonly main: QuickJSHandle;
  /** `take()`: the calls made since the last take, a batch text (`parseBatch`), or `""`. */
  readonly take: QuickJSHandle;
  /** `deliver(text)`: settles one call from `[id, reply]` JSON text. */
  readonly deliver: QuickJSHandle;
  dispose(): void;
}

/**
 * Installs `tools` and `console` in `ctx` and returns the guest functions the host drives (owned by the
 * caller). `whole`: the bridge in one piece (`BOOTSTRAP_WHOLE`, for a script likely to use `tools`: `mentionsTools`),
 * else its core alone (`BOOTSTRAP`), each part compiled at its first read. The guest sees the same either way.
 * Throws if the bootstrap fails to evaluate (a bug, or no memory left).
 */
export function installBridge(ctx: QuickJSContext, hooks: BridgeHooks, whole = false): GuestBridge {
  const str = (h: QuickJSHandle): string | undefined => (ctx.typeof(h) === "string" ? (copyString(ctx, h) ?? undefined) : undefined);
  const hostFlush = ctx.newFunction("flush", (batchH) => {
    if (ctx.typeof(batchH) !== "string") return { error: ctx.newError({ name: "TypeError", message: "a batch of tool calls must be a string" }) };
    return hooks.flush(copyString(ctx, batchH));
  });
  const hostLog = ctx.newFunction("log", (levelH, lineH) => hooks.log(str(levelH) ?? "log", str(lineH) ?? ""));
  const hostSettle = ctx.newFunction("settle", (endH, valueH) => {
    const n = ctx.typeof(endH) === "number" ? ctx.getNumber(endH) : -1;
    // only the bootstrap holds this function, so another number is a bug: reported as what the guest threw
    hooks.settle(n === SETTLE.returned ? "returned" : n === SETTLE.unserialisable ? "unserialisable" : n === SETTLE.calledLate ? "calledLate" : n === SETTLE.notJson ? "notJson" : "threw", valueH);
  });
  // compiles part n on the guest's first read of `tools` (0) or `console` (1): only the core's getters hold it
  const hostPart = whole ? undefined : ctx.newFunction("part", (nH) => {
    const n = ctx.typeof(nH) === "number" ? ctx.getNumber(nH) : -1;
    const code = n === 0 ? PARTS[0] : n === 1 ? PARTS[1] : undefined;
    if (code === undefined) return { error: ctx.newError({ name: "TypeError", message: "no such part of the bridge" }) };
    const r = ctx.evalCode(code, n === 0 ? "airlock:tools.js" : "airlock:console.js");
    return r.error ? { error: r.error } : r.value;
  });
  try {
    const boot = ctx.unwrapResult(ctx.evalCode(whole ? BOOTSTRAP_WHOLE : BOOTSTRAP, "airlock:bootstrap.js"));
    let fns: QuickJSHandle;
    try {
      fns = ctx.unwrapResult(ctx.callFunction(boot, ctx.undefined, hostLog, hostSettle, hostFlush, hostPart ?? ctx.undefined));
    } finally {
      boot.dispose();
    }
    try {
      const main = ctx.getProp(fns, 0);
      const take = ctx.getProp(fns, 1);
      const deliver = ctx.getProp(fns, 2);
      return {
        main,
        take,
        deliver,
        dispose() {
          main.dispose();
          take.dispose();
          deliver.dispose();
        },
      };
    } finally {
      fns.dispose();
    }
  } finally {
    hostFlush.dispose();
    hostLog.dispose();
    hostSettle.dispose();
    hostPart?.dispose();
  }
}

/**
 * The guest string `h` (a string handle) copied out; null when QuickJS could not make its UTF-8 copy (the guest's
 * memory is full: quickjs-emscripten then returns "" for a non-empty string, and leaves the exception pending).
 */
export function copyString(ctx: QuickJSContext, h: QuickJSHandle): string | null {
  const s = ctx.getString(h);
  if (s !== "") return s;
  // "" is QuickJS's empty-string atom: making it allocates nothing in the guest, comparing with it neither
  const empty = ctx.newString("");
  try {
    return ctx.sameValue(h, empty) ? "" : null;
  } finally {
    empty.dispose();
  }
}

/** One tool call of a batch: its id, the tool's name and its arguments as JSON text. */
export interface BatchCall {
  id: number;
  name: string;
  args: string;
}

/**
 * Reads a batch of calls the bootstrap made (`take()`, `hostFlush`): records one after another, each
 * `ID ":" ARGS_LENGTH ":" NAME_LENGTH ":" NAME_JSON ARGS`, the three integers in decimal (1–10 digits, no sign), the
 * lengths in UTF-16 code units, `NAME_JSON` the name as a JSON string (`JSON.stringify`), `ARGS` the arguments'
 * JSON text as the guest's `JSON.stringify` made it (well-formed: a lone surrogate is escaped, so the lengths hold
 * through the UTF-8 copy out of QuickJS). The arguments are not escaped a second time, which JSON text of
 * `[[id, name, argsJson], …]` cost the guest (and the host's parse undid). Only the id's range and the records'
 * shape are checked here; the caller checks the rest (ids outstanding, names, limits).
 * The worker sends the host its checked calls in the same records (`batchRecord`; script/protocol.ts `WorkerBatch`).
 * @param from where the records begin in `text` (default 0).
 * @returns the calls in order, or null when `text` is not such a batch (only a guest that broke the bootstrap's
 * closure, a compromised worker, or a bug makes one).
 */
export function parseBatch(text: string, from = 0): BatchCall[] | null {
  const calls: BatchCall[] = [];
  const end = text.length;
  let at = from;
  /** The decimal integer at `at` up to its ":" (`at` then past it), or -1. */
  const int = (): number => {
    let v = 0;
    for (let digits = 0; ; digits++) {
      const c = text.charCodeAt(at++); // NaN past the end: not a digit
      if (c === 58) return digits === 0 ? -1 : v;
      if (!(c >= 48 && c <= 57) || digits === 10) return -1;
      v = v * 10 + (c - 48);
    }
  };
  while (at < end) {
    const id = int();
    const argsLength = int();
    const nameLength = int();
    if (id < 1 || id > 0xffff_ffff || argsLength < 0 || nameLength < 2 || nameLength > end - at || argsLength > end - at - nameLength) return null;
    let name: unknown;
    try {
      name = JSON.parse(text.slice(at, at + nameLength));
    } catch {
      return null;
    }
    if (typeof name !== "string") return null;
    at += nameLength;
    calls.push({ id, name, args: text.slice(at, at + argsLength) });
    at += argsLength;
  }
  return calls;
}

/** One call as a batch record (`parseBatch` reads it); `nameJson` is `JSON.stringify(name)`. */
export function batchRecord(id: number, nameJson: string, args: string): string {
  return `${id}:${args.length}:${nameJson.length}:${nameJson}${args}`;
}

/** Wraps user code as the body of an async arrow function; line numbers in stacks match the user's. */
export function wrapUserCode(code: string): string {
  return `(async () => {${code}\n})`;
}
