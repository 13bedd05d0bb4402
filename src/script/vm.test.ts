/**
 * @module script/vm.test
 * When a script's guest is freed (script/vm.ts `ScriptRun.release`, `releaseLater`): before `done` resolves by default,
 * after it when the caller asked to free it later, never before the script has finished, and once. One thread, real QuickJS.
 */
import { describe, expect, test } from "bun:test";
import { Instances } from "./instances.ts";
import { prepareGuest, ScriptRun } from "./vm.ts";

const LIMITS = { cpuTimeoutMs: 30_000, wallTimeoutMs: 60_000, maxToolCalls: 50, maxLogBytes: 4096, maxResultBytes: 1 << 20 };
const MEMORY = 16 << 20;
const STACK = 512 << 10;

async function runOnce(releaseLater: boolean | undefined, code = "return 1 + 1") {
  const instances = await Instances.create(16);
  const inst = await instances.take();
  const guest = prepareGuest(inst.module, MEMORY, STACK);
  const run = new ScriptRun(inst.module, { code, limits: LIMITS, memoryBytes: MEMORY, stackBytes: STACK, meter: new Float64Array(3), memoryExhausted: () => false, post: () => {}, ...(releaseLater === undefined ? {} : { releaseLater }) });
  return { run, guest };
}

describe("a script's guest is freed", () => {
  test("before done resolves by default", async () => {
    const { run, guest } = await runOnce(undefined);
    run.start(guest);
    const out = await run.done;
    expect(out).toMatchObject({ ok: true, json: "2", fatal: false });
    expect([guest.ctx.alive, guest.rt.alive]).toEqual([false, false]);
    expect(run.release()).toBe(true); // already freed: idempotent
  });

  test("with releaseLater, only by release(): the outcome comes first, and release() frees it once", async () => {
    const { run, guest } = await runOnce(true);
    run.start(guest);
    const out = await run.done;
    expect(out).toMatchObject({ ok: true, json: "2", fatal: false });
    expect([guest.ctx.alive, guest.rt.alive]).toEqual([true, true]);
    expect(run.release()).toBe(true);
    expect([guest.ctx.alive, guest.rt.alive]).toEqual([false, false]);
    expect(run.release()).toBe(true);
  });

  test("release() before the script has finished frees nothing and says so", async () => {
    const { run, guest } = await runOnce(true, "await tools.wait(1); return 1;");
    run.start(guest);
    expect(run.finished).toBe(false);
    expect(run.release()).toBe(false);
    expect([guest.ctx.alive, guest.rt.alive]).toEqual([true, true]);
    run.cancel();
    const out = await run.done;
    expect(out.ok ? "ok" : out.error.code).toBe("cancelled");
    expect(run.release()).toBe(true);
    expect(guest.rt.alive).toBe(false);
  });
});

describe("a guest prepared with the bridge in one piece or its core alone", () => {
  for (const whole of [false, true]) {
    test(`(${whole ? "whole" : "core"}) tools work after user code replaced built-ins, and a script that never reads tools frees cleanly`, async () => {
      const instances = await Instances.create(16);
      const inst = await instances.take();
      const code = "JSON.stringify = () => 'x'; JSON.parse = () => 0; globalThis.Proxy = null; globalThis.Promise = null; Object.freeze = null; Object.create = null; return (await tools.echo({ n: 1 })).n + 1;";
      let pending: Array<{ id: number; args: string }> = [];
      const run = new ScriptRun(inst.module, { code, limits: LIMITS, memoryBytes: MEMORY, stackBytes: STACK, meter: new Float64Array(3), memoryExhausted: () => false, post: (m) => pending.push(m) });
      run.start(prepareGuest(inst.module, MEMORY, STACK, whole));
      while (!run.finished && pending.length > 0) {
        const now = pending;
        pending = [];
        for (const c of now) run.reply(c.id, `{"ok":true,"result":${c.args}}`);
      }
      expect(await run.done).toMatchObject({ ok: true, json: "2", calls: 1, fatal: false });
      const idle = new ScriptRun(inst.module, { code: "return 1", limits: LIMITS, memoryBytes: MEMORY, stackBytes: STACK, meter: new Float64Array(3), memoryExhausted: () => false, post: () => {} });
      idle.start(prepareGuest(inst.module, MEMORY, STACK, whole));
      // a handle left unfreed would make freeing the runtime fail: fatal
      expect(await idle.done).toMatchObject({ ok: true, json: "1", fatal: false });
      const unused = prepareGuest(inst.module, MEMORY, STACK, whole);
      expect(() => unused.dispose()).not.toThrow();
    });
  }
});

describe("a script that overflows the host's stack (a recursing Proxy trap)", () => {
  // QuickJS's own limit, counted on emscripten's shadow stack, set far above what this thread's stack holds of the
  // trap's native frames: the host's stack runs out first (script/vm.ts `isHostStackOverflow`)
  const BIG_STACK = 4 << 20;
  const LOOP = "new Proxy({}, { get(t, k, r) { return r[k]; } })";
  const CASES: Array<[string, string, boolean]> = [
    ["in the script's code", `const p = ${LOOP}; return p.x;`, false],
    ["in the script's code", `const p = ${LOOP}; return p.x;`, true],
    // the host reads a thrown value's fields, running its getters: was read as "a non-error value"
    ["in a getter of the value it threw, read by the host", `throw { get message() { const p = ${LOOP}; return p.x; } };`, true],
  ];
  for (const [where, CODE, releaseLater] of CASES) {
    test(`${where}: ends script_stack_overflow, is fatal, and nothing of it is freed (releaseLater ${releaseLater})`, async () => {
      const instances = await Instances.create(16);
      const inst = await instances.take();
      const guest = prepareGuest(inst.module, MEMORY, BIG_STACK);
      const run = new ScriptRun(inst.module, { code: CODE, limits: LIMITS, memoryBytes: MEMORY, stackBytes: BIG_STACK, meter: new Float64Array(3), memoryExhausted: () => false, post: () => {}, releaseLater });
      run.start(guest);
      const out = await run.done;
      expect(out.ok ? "ok" : out.error.code).toBe("script_stack_overflow");
      expect(out.ok ? "" : out.error.message).toContain("sandbox thread's stack");
      expect(out.fatal).toBe(true);
      // QuickJS was unwound mid-call: its runtime is dropped with the instance, never freed (nor reused)
      expect(run.release()).toBe(false);
      expect([guest.ctx.alive, guest.rt.alive]).toEqual([true, true]);
    });
  }
});

describe("the host's stack running out in a bridge function (its error simulated where the host sends a call)", () => {
  // 40 calls at once: the guest hands the host the first 32 from inside its `tools.*` call (the bridge's flush), where
  // quickjs-emscripten turns a host error into a guest exception the script can catch
  const CODE = "try { await Promise.all(Array.from({ length: 40 }, (_, i) => tools.echo(i))); return 'done'; } catch (e) { return 'caught ' + e; }";
  for (const directCalls of [true, false]) {
    test(`ends script_stack_overflow and is fatal though the guest caught the error (${directCalls ? "FFI" : "handle API"})`, async () => {
      const instances = await Instances.create(16);
      const inst = await instances.take();
      const run = new ScriptRun(inst.module, {
        code: CODE,
        limits: LIMITS,
        memoryBytes: MEMORY,
        stackBytes: STACK,
        meter: new Float64Array(3),
        memoryExhausted: () => false,
        directCalls,
        post: () => {
          throw new RangeError("Maximum call stack size exceeded.");
        },
      });
      run.start();
      const out = await run.done;
      expect(out.ok ? "ok" : out.error.code).toBe("script_stack_overflow");
      expect(out.fatal).toBe(true);
      expect(run.release()).toBe(false);
    });
  }
});

describe("the host's stack running out in the interrupt callback's own frames (simulated: the runtime's callback throws the RangeError)", () => {
  // quickjs-emscripten's callback caught it and interrupted QuickJS with no `#stop` set: the guest got an "interrupted"
  // error (read as the host's stack only by its shape, which a script can forge) or, from `toJSON`, the script "waited
  // on a promise that can never settle" with its instance kept (script/vm.ts `interruptsUnswallowed`)
  const CASES: Record<string, string> = {
    "in the script's loop": "let s = 0; for (let i = 0; i < 1e7; i++) s += i; return s;",
    "in a loop a catch surrounds": "try { let s = 0; for (let i = 0; i < 1e7; i++) s += i; return s; } catch (e) { return 'caught ' + e; }",
    "after an await": "await 0; let s = 0; for (let i = 0; i < 1e7; i++) s += i; return s;",
    "in toJSON of the return value": "return { toJSON() { let s = 0; for (let i = 0; i < 1e7; i++) s += i; return s; } };",
  };
  for (const [where, code] of Object.entries(CASES)) {
    test(`${where}: script_stack_overflow, fatal`, async () => {
      const instances = await Instances.create(16);
      const inst = await instances.take();
      const guest = prepareGuest(inst.module, MEMORY, STACK);
      const runtimes = (inst.module as unknown as { callbacks: { runtimeCallbacks: Map<number, { shouldInterrupt: (rt: number) => number }> } }).callbacks.runtimeCallbacks;
      let checks = 0;
      for (const callbacks of runtimes.values()) {
        const real = callbacks.shouldInterrupt;
        callbacks.shouldInterrupt = (rt) => {
          if (++checks === 3) throw new RangeError("Maximum call stack size exceeded.");
          return real(rt);
        };
      }
      const run = new ScriptRun(inst.module, { code, limits: LIMITS, memoryBytes: MEMORY, stackBytes: STACK, meter: new Float64Array(3), memoryExhausted: () => false, post: () => {}, releaseLater: true });
      run.start(guest);
      const out = await run.done;
      expect(checks).toBeGreaterThanOrEqual(3);
      expect(out.ok ? "ok" : out.error.code).toBe("script_stack_overflow");
      expect(out.fatal).toBe(true);
    });
  }
});
