/**
 * @module test/security/script-hostile-inputs
 * Scripts under attack (src/script/*.ts, src/tool/code-execution.ts), with real
 * worker threads and real QuickJS, and the full stack (gate, bus, launcher) where the finding needs it:
 * the `tools` object, hostile arguments and names, host results, limits that must hold at the door
 * to the host, calls a script leaves behind, and what one script can do to another.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { ToolOutcome } from "../../src/tool/tool.ts";
import { ScriptPool, type RunOptions } from "../../src/script/pool.ts";
import { NATIVE_STALL_SCRIPT } from "../../src/script/test-scripts.ts";
import { harnessSse, startHarness, waitForBus, type Harness } from "../harness.ts";

// Generous deadlines: a loaded machine preempts the guest; only the CPU-bound test sets a short one.
const LIMITS: RunOptions = { cpuTimeoutMs: 30_000, wallTimeoutMs: 60_000, maxToolCalls: 1000, maxLogBytes: 64 * 1024, maxResultBytes: 1024 * 1024 };

type Call = { name: string; args: unknown };
function recorder(extra: Record<string, (args: unknown) => Promise<ToolOutcome>> = {}) {
  const calls: Call[] = [];
  let bytes = 0;
  const fn = async (name: string, args: unknown): Promise<ToolOutcome> => {
    calls.push({ name, args });
    bytes += JSON.stringify(args)?.length ?? 0;
    if (extra[name]) return extra[name](args);
    return { ok: true, result: args };
  };
  return { calls, fn, bytes: () => bytes };
}

let pool: ScriptPool;
beforeAll(() => {
  pool = new ScriptPool({ workers: 1, memoryMb: 64, stackKb: 512 });
});
afterAll(async () => {
  await pool.close();
});

describe("the tools object (held)", () => {
  test("introspection finds nothing, cannot be changed, and reaches no host object", async () => {
    const { fn, calls } = recorder();
    const r = await pool.run(
      `const out = {};
       const t = (k, f) => { try { out[k] = f(); } catch (e) { out[k] = "threw " + e.name; } };
       t("names", () => Object.getOwnPropertyNames(tools));
       t("keys", () => Reflect.ownKeys(tools).length);
       t("ctor", () => tools.constructor === Object);
       t("proto", () => tools["__proto__"] === Object.prototype);
       t("hasOwn", () => tools.hasOwnProperty("developer__shell"));
       t("in", () => "developer__shell" in tools);
       t("then", () => typeof tools.then);
       t("define", () => Object.defineProperty(tools, "x", { value: 1 }));
       t("setProto", () => Object.setPrototypeOf(tools, {}));
       t("assign", () => { tools.developer__shell = 1; return typeof tools.developer__shell; });
       t("walk", () => tools.x.constructor("return typeof process + typeof require + typeof Bun")());
       t("ctorWalk", () => tools.constructor.constructor("return typeof process")());
       return out;`,
      LIMITS,
      fn,
    );
    expect(r).toEqual({
      ok: true,
      value: {
        names: [],
        keys: 0,
        ctor: true,
        proto: true,
        hasOwn: false,
        in: false,
        then: "undefined",
        define: "threw TypeError",
        setProto: "threw TypeError",
        assign: "function",
        walk: "undefinedundefinedundefined",
        ctorWalk: "undefined",
      },
      logs: [],
      calls: 0,
    });
    expect(calls).toEqual([]);
  });

  test("names with .., /, unicode or nothing never reach a tool; the host judges only the name it runs", async () => {
    const { fn, calls } = recorder();
    const r = await pool.run(
      `const out = {};
       for (const n of ["../x", "a/b", "dév", "", "x y", "__proto__", "constructor", "hasOwnProperty", ".."]) {
         try { await tools[n]({}); out[n] = "resolved"; } catch (e) { out[n] = e.code ?? e.name; }
       }
       return out;`,
      LIMITS,
      fn,
    );
    expect(r.ok).toBe(true);
    // "..", the only one the door's name pattern lets through, reaches the host as exactly ".." (the gate's registry knows no such tool)
    expect(calls.map((c) => c.name)).toEqual([".."]);
    expect((r as { value: Record<string, string> }).value).toMatchObject({ "../x": "unknown_tool", "a/b": "unknown_tool", "dév": "unknown_tool", "": "unknown_tool", "x y": "unknown_tool", __proto__: "TypeError", hasOwnProperty: "resolved" });
  });
});

describe("hostile arguments (held unless marked)", () => {
  test("BigInt, cyclic, throwing getters fail in the guest; functions and Symbols are refused; nothing reaches the host", async () => {
    const { fn, calls } = recorder();
    const r = await pool.run(
      `const out = {};
       const cyc = {}; cyc.self = cyc;
       const cases = { bigint: { n: 10n }, cyclic: cyc, getter: { get boom() { throw new RangeError("getter ran"); } }, fn: () => 1, sym: Symbol("s") };
       for (const [k, a] of Object.entries(cases)) {
         try { await tools.echo(a); out[k] = "called"; } catch (e) { out[k] = e.name + ": " + e.message; }
       }
       return out;`,
      LIMITS,
      fn,
    );
    expect(calls).toEqual([]);
    expect(r).toMatchObject({
      ok: true,
      value: {
        bigint: expect.stringContaining("TypeError"),
        cyclic: expect.stringContaining("TypeError"),
        getter: "RangeError: getter ran",
        fn: expect.stringContaining("TypeError"),
        sym: expect.stringContaining("TypeError"),
      },
    });
  });

  test("Proxy, toJSON and __proto__ keys arrive as plain host data; the host's prototypes stay clean", async () => {
    const { fn, calls } = recorder();
    const r = await pool.run(
      `const p = new Proxy({}, { ownKeys: () => ["a"], getOwnPropertyDescriptor: () => ({ value: 1, enumerable: true, configurable: true }), get: (t, k) => (k === "toJSON" ? undefined : 7) });
       await tools.echo({ p, side: { toJSON() { globalThis.sideEffect = true; return "ran"; } }, evil: JSON.parse('{"__proto__": {"polluted": "yes"}, "constructor": {"prototype": {"polluted": "yes"}}}') }).catch(() => 0);
       // pollute the guest's prototypes, then pass more data out
       Object.prototype.then = function () { return "guest-then"; };
       Array.prototype.toJSON = function () { return "guest-array"; };
       tools.echo({ list: [1] }).then(() => 0, () => 0);
       return globalThis.sideEffect === true;`,
      LIMITS,
      fn,
    );
    expect(r).toMatchObject({ ok: true, value: true });
    expect(calls[1]!.args).toEqual({ list: "guest-array" }); // the guest's own JSON only fools itself
    const args = calls[0]!.args as Record<string, any>;
    expect(args.p).toEqual({ a: 7 });
    expect(args.side).toBe("ran");
    expect(Object.getPrototypeOf(args)).toBe(Object.prototype);
    expect(Object.getPrototypeOf(args.evil)).toBe(Object.prototype);
    expect(Object.hasOwn(args.evil, "__proto__")).toBe(true);
    expect(({} as any).polluted).toBeUndefined();
    expect(({} as any).then).toBeUndefined();
    expect(([] as any).toJSON).toBeUndefined();
  });

  test("a 100 MB string hits the script's memory limit, not the host", async () => {
    const { fn, calls } = recorder();
    const before = process.memoryUsage().rss;
    const r = await pool.run("const s = 'x'.repeat(100 * 1024 * 1024); return await tools.echo({ s });", LIMITS, fn);
    expect(r.ok ? "ok" : r.error.code).toBe("script_memory_limit");
    expect(calls).toEqual([]);
    expect(process.memoryUsage().rss - before).toBeLessThan(100 * 1024 * 1024);
  });

  // FINDING (high): every tools.* call copied its arguments to the host, where the gate publishes them
  // (tool_request, kept in the session's replay buffer of 1,024+ events). A 64 MiB script could send a
  // 16 MB string 1,000 times: 16 GB held by the host (measured: 40 calls kept 650 MB of host heap).
  // Fixed: the argument bytes a script sends count against its memory limit (script_memory_limit).
  test("the arguments a script sends the host, summed over its calls, are bounded by its memory limit", async () => {
    const { fn, bytes } = recorder({ echo: async () => ({ ok: true, result: 1 }) });
    const r = await pool.run("const s = 'x'.repeat(4 * 1024 * 1024); for (let i = 0; i < 40; i++) await tools.echo({ s }); return 'sent 160 MiB';", LIMITS, fn);
    expect(r.ok ? "ok" : r.error.code).toBe("script_memory_limit");
    expect(bytes()).toBeLessThanOrEqual(64 * 1024 * 1024);
    // the worker is fine afterwards
    expect(await pool.run("return 1", LIMITS, fn)).toMatchObject({ ok: true, value: 1 });
  });
});

describe("results and errors (held unless marked)", () => {
  test("host results with BigInt, Buffers, cycles or throwing getters come back as JSON data or a plain error", async () => {
    const cyc: Record<string, unknown> = {};
    cyc.self = cyc;
    const results: Record<string, unknown> = {
      big: { n: 10n },
      buf: { b: Buffer.from("hi") },
      cyc,
      getter: {
        get x() {
          throw new Error(`host getter at ${import.meta.path}`);
        },
      },
      map: { m: new Map([["k", 1]]), fn: () => 1 },
    };
    const extra = Object.fromEntries(Object.entries(results).map(([k, v]) => [k, async () => ({ ok: true as const, result: v })]));
    const { fn } = recorder(extra);
    const r = await pool.run(
      `const out = {};
       for (const k of ["big", "buf", "cyc", "getter", "map"]) {
         try { const v = await tools[k]({}); out[k] = { ok: JSON.stringify(v), proto: Object.getPrototypeOf(v) === Object.prototype }; }
         catch (e) { out[k] = { code: e.code, fields: Object.getOwnPropertyNames(e).sort(), stack: e.stack }; }
       }
       return out;`,
      LIMITS,
      fn,
    );
    expect(r.ok).toBe(true);
    const v = (r as { value: Record<string, any> }).value;
    expect(v.buf).toEqual({ ok: JSON.stringify({ b: { type: "Buffer", data: [104, 105] } }), proto: true });
    expect(v.map).toEqual({ ok: JSON.stringify({ m: {} }), proto: true });
    for (const k of ["big", "cyc", "getter"]) {
      expect(v[k].code).toBe("internal");
      expect(v[k].fields).toEqual(["code", "message", "name", "stack"]);
      expect(v[k].stack).not.toContain(".ts");
    }
    expect(JSON.stringify(v)).not.toContain(import.meta.dir);
  });

  // FINDING (medium): a script's return value is capped (script_max_result_bytes, 1 MiB) but its error
  // was not: `throw new Error("x".repeat(20e6))` put 20 MB into the tool result, the conversation and
  // the next model request. Fixed: the message and stack are cut to the result limit and say so.
  test("a thrown error cannot carry more than the result limit into the conversation", async () => {
    const { fn } = recorder();
    for (const code of [
      "throw new Error('x'.repeat(20e6))",
      "const e = new Error('m'); Object.defineProperty(e, 'stack', { get() { return 's'.repeat(20e6); } }); throw e",
      "throw 'y'.repeat(20e6)",
      "const e = new Error('m'); e.name = 'n'.repeat(20e6); throw e",
    ]) {
      const r = await pool.run(code, LIMITS, fn);
      expect(r.ok).toBe(false);
      if (r.ok) continue;
      expect(r.error.code).toBe("script_error");
      expect(r.error.message.length + (r.error.stack?.length ?? 0)).toBeLessThanOrEqual(2 * LIMITS.maxResultBytes + 200);
    }
  });
});

describe("what one script can do to another", () => {
  test("a script cannot read memory another script used (fresh buffers are zeroed)", async () => {
    const { fn } = recorder();
    const secret = await pool.run("const keep = []; for (let i = 0; i < 2000; i++) keep.push(('SECRET' + i).repeat(500)); const b = new Uint8Array(8e6).fill(0x53); return keep.length + b[0];", LIMITS, fn);
    expect(secret.ok).toBe(true);
    const r = await pool.run(
      `const nz = (u) => (new Set(u).size === 1 && u[0] === 0 ? 0 : 1); // native scan: a guest loop over 8 MB is slow on a loaded machine
       const out = { ab: nz(new Uint8Array(new ArrayBuffer(8e6))), f64: nz(new Uint8Array(new Float64Array(1e6).buffer)) };
       try { const rab = new ArrayBuffer(16, { maxByteLength: 8e6 }); rab.resize(8e6); out.resized = nz(new Uint8Array(rab)); } catch (e) { out.resized = 0; }
       return out;`,
      LIMITS,
      fn,
    );
    expect(r).toMatchObject({ ok: true, value: { ab: 0, f64: 0, resized: 0 } });
  });

  test("a CPU-bound script delays, but does not fail, another script's tool result on the same worker", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const { fn } = recorder({
      wait: async () => {
        await gate;
        return { ok: true, result: "answer" };
      },
    });
    const victim = pool.run("return await tools.wait({})", LIMITS, fn);
    const spin = pool.run("for (;;) {}", { ...LIMITS, cpuTimeoutMs: 300 }, fn);
    release();
    expect((await spin).ok ? "ok" : (await spin as { error: { code: string } }).error.code).toBe("script_timeout");
    expect(await victim).toMatchObject({ ok: true, value: "answer" });
  });

  // Each script in flight has a worker thread of its own (docs/security-model.md §9), so the watchdog
  // replacing a stalled script's thread ends that script only. Pool of one run slot (`workers: 1`): before,
  // every script here shared the one thread the stalled script blocked.
  test("a script stalled in a native call does not fail other scripts on its worker", async () => {
    await using one = new ScriptPool({ workers: 1, memoryMb: 64, stackKb: 512 });
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let parkedNow = 0;
    let allParked!: () => void;
    const parked = new Promise<void>((r) => (allParked = r));
    const { fn } = recorder({
      park: async (args) => {
        if (++parkedNow === 3) allParked();
        await released;
        return { ok: true, result: args };
      },
    });
    const waiting = [1, 2, 3].map((i) => one.run(`await tools.echo(${i}); const got = await tools.park(${i}); let s = 0; for (let j = 0; j < 1e4; j++) s += j; return [got, s];`, LIMITS, fn));
    await parked;
    const stalled = one.run(NATIVE_STALL_SCRIPT, { ...LIMITS, cpuTimeoutMs: 200 }, fn);
    // Scripts started while the stall holds its thread still run, and scripts parked before it still finish.
    const during = one.run("return await tools.echo('during')", LIMITS, fn);
    const s = await stalled;
    expect(s.ok ? "ok" : s.error.code).toBe("script_timeout");
    expect(await during).toMatchObject({ ok: true, value: "during" });
    release();
    const ends = await Promise.all(waiting);
    expect(ends.map((e) => (e.ok ? e.value : e.error.code))).toEqual([[1, 49995000], [2, 49995000], [3, 49995000]]);
    expect(await one.run("return 'after'", LIMITS, fn)).toMatchObject({ ok: true, value: "after" });
  });
});

describe("calls a script leaves behind (full stack)", () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  function scripted(code: string): string {
    return `turns:\n  - tool_calls:\n      - name: code_execution__execute\n        arguments:\n          code: ${JSON.stringify(code)}\n  - text: done\n`;
  }

  test("a script cannot call code_execution__execute or list_tools through tools.*", async () => {
    h = await startHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous" },
      files: {
        "turns.yaml": scripted(
          "const out = {}; for (const n of ['code_execution__execute', 'code_execution__list_tools']) { try { await tools[n]({ code: 'return 1' }); out[n] = 'ran'; } catch (e) { out[n] = e.code; } } return out;",
        ),
      },
    });
    const s = await h.createSession({ mode: "autonomous" });
    const r = await h.rt.runTurn(s.id, "go");
    expect(r.status).toBe("completed");
    const tool = (await h.rt.store.listMessages(s.id)).find((m) => m.role === "tool")!;
    expect(JSON.parse(tool.content).value).toEqual({ code_execution__execute: "unknown_tool", code_execution__list_tools: "unknown_tool" });
  });

  // FINDING (medium): a call the script started but did not await (`tools.x(); return 1`, or a call made
  // from a toJSON during the return) kept running after the script ended and after its turn finished:
  // the shell ran on, unobserved, holding a permit; POST /cancel could not stop it (no turn in flight).
  // Fixed: when a script ends, the calls it made that are still running are cancelled (ToolContext.invoke
  // takes the script's signal; the gate combines it with the turn's).
  test("a call the script did not await is cancelled when the script ends, not run after its turn", async () => {
    h = await startHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous", sandbox: "workspace-write" },
      files: { "turns.yaml": scripted("tools.developer__shell({ command: 'sleep 2; echo late > late.txt' }); return 'returned';") },
    });
    const s = await h.createSession({ mode: "autonomous", sandbox: "workspace-write" });
    const events = await harnessSse(h, `/sessions/${s.id}/events`);
    await h.api(`/sessions/${s.id}/reply`, { method: "POST", json: { message: "go" } });
    await events.waitFor((e) => e.event === "turn_finished");
    const shell = await events.waitFor((e) => e.event === "tool_result" && e.data.tool === "developer__shell");
    events.close();
    // the call was stopped (its process tree killed), so the file can never appear
    expect(shell.data).toMatchObject({ ok: false, error: { code: "cancelled" } });
    await waitForBus(h.rt, () => h!.rt.permits.inUse === 0);
    expect(existsSync(join(h.workspace, "late.txt"))).toBe(false);
  });

  test("a card raised by a call the script did not await is withdrawn when the script ends; a later allow cannot run it", async () => {
    h = await startHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "smart" },
      files: {
        "turns.yaml": `turns:\n  - tool_calls:\n      - name: code_execution__execute\n        arguments:\n          code: ${JSON.stringify("tools.developer__write_file({ path: 'orphan.txt', content: 'x' }); await tools.developer__list_dir({ path: '.' }); return 'returned';")}\n  - text: done\n    delay_ms: 1500\n`,
      },
    });
    const s = await h.createSession({ mode: "smart" });
    const reply = await harnessSse(h, `/sessions/${s.id}/reply`, { method: "POST", json: { message: "go" } });
    const card = (await reply.waitFor((e) => e.event === "action_required")).data;
    await reply.waitFor((e) => e.event === "tool_result" && e.data.tool === "code_execution__execute");
    // the turn is still running (the model's next answer takes 1.5 s): an allow now must not run the write
    expect(h.rt.inflight.has(s.id)).toBe(true);
    const late = await h.api(`/sessions/${s.id}/actions/${card.request_id}`, { method: "POST", json: { decision: "allow_once" } });
    expect(late.status).toBe(409);
    await reply.waitFor((e) => e.event === "turn_finished");
    reply.close();
    expect(reply.events.filter((e) => e.event === "action_resolved").map((e) => e.data.decision)).toEqual(["cancelled"]);
    expect(existsSync(join(h.workspace, "orphan.txt"))).toBe(false);
  });
});
