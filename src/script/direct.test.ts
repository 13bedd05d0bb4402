/**
 * @module script/direct.test
 * The FFI path of a tool call (script/direct.ts) on the pinned quickjs-emscripten: it is there, it refuses what does
 * not look like the library it was written against, and a script's tool calls, results, rejected calls, thrown errors
 * and limits end the same through it as through the handle API (one thread, real QuickJS, no worker).
 */
import { describe, expect, test } from "bun:test";
import { parseBatch } from "./bridge.ts";
import { DirectCalls } from "./direct.ts";
import { Instances } from "./instances.ts";
import type { CallRequest } from "./protocol.ts";
import { ScriptRun, type RunOutcome } from "./vm.ts";

const LIMITS = { cpuTimeoutMs: 30_000, wallTimeoutMs: 60_000, maxToolCalls: 50, maxLogBytes: 4096, maxResultBytes: 1 << 20 };

/** Runs `code` to its end in one thread, answering each call from `answer` (JSON text of `{ok, result | error}`). */
async function runHere(instances: Instances, code: string, directCalls: boolean, answer: (c: CallRequest) => string, asBytes = false): Promise<RunOutcome> {
  const inst = await instances.take();
  let pending: CallRequest[] = [];
  const run = new ScriptRun(inst.module, { code, limits: LIMITS, memoryBytes: 64 << 20, stackBytes: 512 << 10, meter: new Float64Array(3), memoryExhausted: () => false, post: (m) => pending.push(m), directCalls });
  run.start();
  while (!run.finished) {
    const now = pending;
    pending = [];
    if (now.length === 0) break;
    for (const c of now) run.reply(c.id, asBytes ? new TextEncoder().encode(answer(c)) : answer(c)); // bytes: as the worker reads them off its channel
  }
  const out = await run.done;
  instances.give(inst, !out.fatal);
  return out;
}

describe("the FFI path of a tool call", () => {
  test("is there on the pinned library, and refused for a context that does not look like it", async () => {
    const instances = await Instances.create(16);
    const inst = await instances.take();
    const rt = inst.module.newRuntime();
    const ctx = rt.newContext();
    const direct = DirectCalls.for(inst.module, rt, ctx);
    expect(direct).not.toBeNull();
    direct?.free();
    const fake = Object.create(ctx) as typeof ctx;
    Object.defineProperty(fake, "ctx", { value: { value: "not a pointer" } });
    expect(DirectCalls.for(inst.module, rt, fake)).toBeNull();
    ctx.dispose();
    rt.dispose();
  });

  test("a script's calls, results, rejected calls, thrown errors and the call limit end the same through it and through the handle API, replies as strings or UTF-8 bytes", async () => {
    const instances = await Instances.create(64);
    const answer = (c: CallRequest): string => (c.name === "fail" ? JSON.stringify({ ok: false, error: { name: "ToolError", code: "tool_failed", message: `no ${c.args}` } }) : JSON.stringify({ ok: true, result: { echoed: JSON.parse(c.args), name: c.name, big: "€".repeat(3000) } }));
    const scripts = [
      "let s = 0; for (let i = 0; i < 20; i++) s += (await tools.echo({ i })).echoed.i; return s;",
      "const all = await Promise.all([1, 2, 3].map((i) => tools.echo({ i }))); return all.map((r) => r.echoed.i + r.big.length);",
      "try { await tools.fail({ x: 1 }); } catch (e) { return [e.name, e.code, e.message]; }",
      "await tools.echo({}); throw new TypeError('boom');",
      "for (let i = 0; i < 60; i++) await tools.echo({ i });",
      "const p = tools.echo({ a: 1 }); return 'left before its call';",
      "await new Promise(() => {});",
    ];
    for (const code of scripts) {
      const viaHandles = await runHere(instances, code, false, answer);
      const viaFfi = await runHere(instances, code, true, answer);
      expect(viaFfi).toEqual(viaHandles);
      expect(viaFfi.fatal).toBe(false);
      expect(await runHere(instances, code, true, answer, true)).toEqual(viaHandles);
      expect(await runHere(instances, code, false, answer, true)).toEqual(viaHandles);
    }
    const sum = await runHere(instances, scripts[0]!, true, answer);
    expect(sum).toMatchObject({ ok: true, json: "190", calls: 20 });
    expect(await runHere(instances, scripts[4]!, true, answer)).toMatchObject({ ok: false, error: { code: "script_too_many_calls" } });
  });
});

describe("the batch text of a slice's calls (bridge.ts parseBatch)", () => {
  test("reads records one after another; refuses every cut, sign, overlong number, bad length or non-string name", () => {
    expect(parseBatch('1:7:6:"echo"{"i":0}12:2:3:"x"{}')).toEqual([
      { id: 1, name: "echo", args: '{"i":0}' },
      { id: 12, name: "x", args: "{}" },
    ]);
    expect(parseBatch("")).toEqual([]);
    for (const bad of [
      '1:7:6:"echo"{"i":0', // args cut short
      '1:7:6:"echo"{"i":0}1', // a record cut short
      '0:2:3:"x"{}', // id 0
      '4294967296:2:3:"x"{}', // id past u32
      '-1:2:3:"x"{}',
      '+1:2:3:"x"{}',
      '1:2:3:"x"{}:',
      '1::3:"x"{}',
      '1:2:1:x{}', // a name that is not JSON text
      '1:2:1:1{}', // JSON text, not a string
      '1:2:3:"x"{}'.replace("3", "99"),
      '1:99999999999:3:"x"{}', // 11 digits
      ':2:3:"x"{}',
    ]) {
      expect(parseBatch(bad)).toBeNull();
    }
  });

  test("names JSON cannot pass raw (a lone surrogate, quotes, a colon, astral characters) reach the host as the guest wrote them", async () => {
    const instances = await Instances.create(64);
    const names: string[] = [];
    const out = await runHere(instances, 'const r = []; for (const n of ["\\ud800", "a\\"b:c", "é😀", "echo", "echo"]) r.push((await tools[n]({ n })).n); return [r, tools.echo === tools.echo];', true, (c) => {
      names.push(c.name);
      return JSON.stringify({ ok: true, result: JSON.parse(c.args) });
    });
    expect(out).toMatchObject({ ok: true, calls: 5 });
    expect(JSON.parse((out as { json: string }).json)).toEqual([["\ud800", 'a"b:c', "é😀", "echo", "echo"], true]);
    expect(names).toEqual(["\ud800", 'a"b:c', "é😀", "echo", "echo"]);
  });
});
