/**
 * @module test/security/script-isolation
 * One script never harms another (docs/security-model.md, "Script isolation"): real worker threads and
 * real QuickJS, `workers: 1` (one run slot). A script's memory is its own, a QuickJS abort in one script's
 * runtime touches only that script, a stalled script's thread runs that script only
 * (test/security/script-hostile-inputs.test.ts), and a script whose thread goes away ends with a distinct
 * retryable code that says which of its calls ran.
 */
import { describe, expect, test } from "bun:test";
import type { ToolOutcome } from "../../src/tool/tool.ts";
import { ScriptPool, type RunOptions, type ScriptResult } from "../../src/script/pool.ts";
import { NATIVE_STALL_SCRIPT } from "../../src/script/test-scripts.ts";

// Generous deadlines: these tests must hold on a busy 2-core machine; only the stall test needs a short CPU deadline.
const LIMITS: RunOptions = { cpuTimeoutMs: 30_000, wallTimeoutMs: 120_000, maxToolCalls: 1000, maxLogBytes: 64 * 1024, maxResultBytes: 1024 * 1024 };

/** A tool `park` that resolves only when released, and reports when a script reaches it. */
function parking() {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let arrived!: () => void;
  const reached = new Promise<void>((r) => (arrived = r));
  const fn = async (name: string, args: unknown): Promise<ToolOutcome> => {
    if (name === "park") {
      arrived();
      await released;
      return { ok: true, result: "unparked" };
    }
    return { ok: true, result: name === "developer__list_dir" ? [{ name: "a.txt", type: "file" }] : args };
  };
  return { fn, reached, release };
}

const code = (r: ScriptResult): string => (r.ok ? "ok" : r.error.code);

describe("script isolation", () => {
  test("a script allocating 200k objects after an awaited tool call returns its value, and a script parked on the same worker is unharmed", async () => {
    await using pool = new ScriptPool({ workers: 1, memoryMb: 64, stackKb: 512 });
    const p = parking();
    const parked = pool.run("return await tools.park({})", LIMITS, p.fn);
    await p.reached;
    const r = await pool.run("await tools.developer__list_dir({path:'.'}); const a=[]; for (let i=0;i<200000;i++) a.push({i}); return a.length;", LIMITS, p.fn);
    expect(r).toEqual({ ok: true, value: 200000, logs: [], calls: 1 });
    p.release();
    expect(await parked).toEqual({ ok: true, value: "unparked", logs: [], calls: 1 });
    expect(pool.workerErrors).toEqual([]);
  });

  test("a script parked on a tool while holding 48 MiB does not take from another script's 64 MiB limit", async () => {
    await using pool = new ScriptPool({ workers: 1, memoryMb: 64, stackKb: 512 });
    const p = parking();
    const holder = pool.run("const keep = new Uint8Array(48 * 2 ** 20).fill(1); await tools.park({}); return keep.length;", LIMITS, p.fn);
    await p.reached;
    const other = await pool.run("const b = new Uint8Array(12 * 2 ** 20).fill(2); return b.length;", LIMITS, p.fn);
    expect(other).toEqual({ ok: true, value: 12 * 2 ** 20, logs: [], calls: 0 });
    p.release();
    expect(await holder).toEqual({ ok: true, value: 48 * 2 ** 20, logs: [], calls: 1 });
  });

  test("a script stalled in a native call ends script_timeout on its own thread; a script parked before it returns its value", async () => {
    await using pool = new ScriptPool({ workers: 1, memoryMb: 64, stackKb: 512 });
    const p = parking();
    const parked = pool.run("await tools.echo(1); return await tools.park({})", LIMITS, p.fn);
    await p.reached;
    const threads = pool.threadIds;
    const stalled = await pool.run(NATIVE_STALL_SCRIPT, { ...LIMITS, cpuTimeoutMs: 200 }, p.fn);
    expect(code(stalled)).toBe("script_timeout");
    p.release();
    expect(await parked).toEqual({ ok: true, value: "unparked", logs: [], calls: 2 });
    expect(pool.threadIds).toContain(threads[0]!); // the parked script's thread was never replaced
    expect(await pool.run("return 'after'", LIMITS, p.fn)).toMatchObject({ ok: true, value: "after" });
  });

  test("a script whose worker thread goes away (the pool closes) ends script_worker_lost, saying which calls ran", async () => {
    const pool = new ScriptPool({ workers: 1, memoryMb: 64, stackKb: 512 });
    const p = parking();
    const parked = pool.run("await tools.echo(1); return await tools.park({})", LIMITS, p.fn);
    await p.reached;
    await pool.close();
    const lost = await parked;
    expect(lost.ok ? "ok" : lost.error).toMatchObject({ code: "script_worker_lost", message: expect.stringContaining("2 of its tool calls had started") });
    expect(lost.calls).toBe(2);
    p.release();
  });
});
