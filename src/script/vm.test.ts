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
