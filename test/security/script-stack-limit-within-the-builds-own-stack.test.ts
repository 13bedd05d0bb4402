/**
 * @module test/security/script-stack-limit-within-the-builds-own-stack
 * `limits.script_stack_kb` is QuickJS's stack limit, counted on emscripten's stack, which the QuickJS build fixes at
 * 5 MiB. A limit past it (5,376 KiB and up, measured) made every script on the pool end `internal` with an empty
 * message, even `return 1` (and deep recursion `internal`, not `script_stack_overflow`): the config accepted any size
 * ≥ 64. Now a size past 4096 KiB is refused where it is read (config_invalid), and 4096 KiB itself runs scripts and
 * ends deep recursion `script_stack_overflow` (src/script/protocol.ts `MAX_STACK_KB`, src/config/schema.ts).
 */
import { describe, expect, test } from "bun:test";
import { Limits } from "../../src/config/schema.ts";
import { ScriptPool, type RunOptions } from "../../src/script/pool.ts";

const LIMITS: RunOptions = { cpuTimeoutMs: 30_000, wallTimeoutMs: 60_000, maxToolCalls: 10, maxLogBytes: 64 * 1024, maxResultBytes: 1024 * 1024 };
const none = async () => ({ ok: true as const, result: 1 });

describe("a QuickJS stack limit past the build's own stack (broke: every script internal)", () => {
  test("refused by the config and by the pool", () => {
    expect(Limits.safeParse({ script_stack_kb: 8192 }).success).toBe(false);
    expect(Limits.safeParse({ script_stack_kb: 5376 }).success).toBe(false);
    expect(Limits.safeParse({ script_stack_kb: 4096 }).success).toBe(true);
    let code = "";
    try {
      new ScriptPool({ workers: 1, memoryMb: 64, stackKb: 8192 });
    } catch (e) {
      code = (e as { code?: string }).code ?? "thrown";
    }
    expect(code).toBe("config_invalid");
  });

  test("the largest allowed runs scripts, and deep recursion ends script_stack_overflow", async () => {
    await using pool = new ScriptPool({ workers: 1, memoryMb: 64, stackKb: 4096 });
    expect(await pool.run("return 1", LIMITS, none)).toEqual({ ok: true, value: 1, logs: [], calls: 0 });
    const deep = await pool.run("function f(n) { return n === 0 ? 0 : 1 + f(n - 1); } return f(1e6);", LIMITS, none);
    expect(deep.ok ? "ok" : deep.error.code).toBe("script_stack_overflow");
    const trap = await pool.run("const p = new Proxy({}, { get(t, k, r) { return r[k]; } }); return p.x;", LIMITS, none);
    expect(trap.ok ? "ok" : trap.error.code).toBe("script_stack_overflow");
    expect(await pool.run("return [1, 2].map((x) => x * 2)", LIMITS, none)).toEqual({ ok: true, value: [2, 4], logs: [], calls: 0 });
  });
});
