/**
 * @module test/security/script-a-thrown-interrupted-error-is-the-scripts-own
 * A script's own value shaped like QuickJS's interrupt (`{ name: "InternalError", message: "interrupted" }`, thrown by its
 * function, by `toJSON` of its return value, or by a setter on `Error.prototype` the bridge runs as it delivers a tool's
 * error) is its own error (src/script/vm.ts `interruptsUnswallowed`, `#interruptsWatched`): it was read as "an interrupt
 * the handler did not ask for", i.e. the host's stack running out, so the script ended `script_stack_overflow` (a false
 * limit, blaming recursion it never did) and its QuickJS instance was dropped, at will. Now QuickJS is interrupted only
 * when the run asked, so such a value is never mistaken for it; a real deadline still ends `script_timeout`, also in a
 * guest that tries to catch it. (QuickJS's interrupt is uncatchable where it is thrown, but not once an `await` passed
 * it on: the host cannot tell the two apart by where the value came from. src/script/vm.test.ts covers the interrupt
 * callback itself failing.)
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { ToolOutcome } from "../../src/tool/tool.ts";
import { ScriptPool, type RunOptions } from "../../src/script/pool.ts";
import { codeOf, echoTool } from "../script-tools.ts";

const LIMITS: RunOptions = { cpuTimeoutMs: 30_000, wallTimeoutMs: 60_000, maxToolCalls: 100, maxLogBytes: 64 * 1024, maxResultBytes: 1024 * 1024 };

let pool: ScriptPool;
beforeAll(() => {
  pool = new ScriptPool({ workers: 1, memoryMb: 64, stackKb: 512 });
});
afterAll(async () => {
  await pool.close();
});

describe("a value shaped like QuickJS's interrupt, made by the script (broke: script_stack_overflow, instance dropped)", () => {
  const THROWN: Record<string, string> = {
    "a plain object": `throw { name: "InternalError", message: "interrupted" };`,
    "an InternalError": `throw new InternalError("interrupted");`,
    "after a tool call": `await tools.echo(1); throw Object.assign(new Error("interrupted"), { name: "InternalError" });`,
  };
  const FORGED = `{ name: "InternalError", message: "interrupted" }`;
  for (const [name, code] of Object.entries(THROWN)) {
    test(`${name}, thrown by the script: script_error naming it`, async () => {
      const r = await pool.run(code, LIMITS, echoTool);
      expect(codeOf(r)).toBe("script_error");
      expect(r.ok ? "" : r.error.message).toBe("InternalError: interrupted");
    });
  }

  test("thrown by toJSON of the return value: script_result_invalid", async () => {
    const r = await pool.run(`return { toJSON() { throw new InternalError("interrupted"); } };`, LIMITS, echoTool);
    expect(codeOf(r)).toBe("script_result_invalid");
    expect(r.ok ? "" : r.error.message).toContain("InternalError: interrupted");
  });

  test("thrown by a setter on Error.prototype as the bridge delivers a tool's error: script_error naming it", async () => {
    const refuse = async (): Promise<ToolOutcome> => ({ ok: false, error: { code: "bad_request", message: "no" } });
    const code = `Object.defineProperty(Error.prototype, "code", { set(v) { throw ${FORGED}; } }); try { await tools.x(); } catch (e) { return "caught"; }`;
    const r = await pool.run(code, LIMITS, refuse);
    expect(codeOf(r)).toBe("script_error");
    expect(r.ok ? "" : r.error.message).toBe("InternalError: interrupted");
  });

  test("a real deadline is still script_timeout, also in a guest that catches around its loop", async () => {
    const r = await pool.run(`try { for (;;) {} } catch (e) { return String(e); }`, { ...LIMITS, cpuTimeoutMs: 300 }, echoTool);
    expect(codeOf(r)).toBe("script_timeout");
    expect(await pool.run("return 1 + 1", LIMITS, echoTool)).toEqual({ ok: true, value: 2, logs: [], calls: 0 });
  });
});
