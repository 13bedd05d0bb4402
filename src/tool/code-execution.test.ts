/**
 * @module tool/code-execution.test
 * The code_execution tools over a real ScriptPool: execute returns {value, logs, calls} and sends each
 * inner call through `ctx.invoke`; a failing script throws AirlockError with its code, stack and logs;
 * list_tools returns `ctx.listTools()`; the limits come from config `limits.script_*`.
 */
import { afterAll, expect, test } from "bun:test";
import { Config, defaultConfig } from "../config/schema.ts";
import { AirlockError } from "../errors.ts";
import { ScriptPool } from "../script/pool.ts";
import { createCodeExecutionTools, limitsFromConfig } from "./code-execution.ts";
import type { ToolContext, ToolOutcome } from "./tool.ts";

const pool = new ScriptPool({ workers: 1, memoryMb: 64, stackKb: 512 });
afterAll(() => pool.close());
const [execute, listTools] = createCodeExecutionTools(pool);

function ctx(config = defaultConfig(), invoked: Array<[string, unknown]> = []): ToolContext {
  return {
    session: {} as ToolContext["session"],
    turnId: "turn_1",
    callId: "call_1",
    fromScript: false,
    signal: new AbortController().signal,
    config,
    async invoke(name: string, args: unknown): Promise<ToolOutcome> {
      invoked.push([name, args]);
      return name === "developer__shell" ? { ok: true, result: { stdout: "hi\n" } } : { ok: false, error: { code: "denied", message: "no" } };
    },
    listTools: async () => [{ name: "developer__shell", description: "run", parameters: { type: "object" } }],
    policy: "workspace-write",
  };
}

test("the two tools are named, read-only, permit-free for execute, and not scriptable", () => {
  expect([execute!.name, listTools!.name]).toEqual(["code_execution__execute", "code_execution__list_tools"]);
  expect([execute!.readOnly, execute!.usesPermit, execute!.scriptable]).toEqual([true, false, false]);
  expect([listTools!.readOnly, listTools!.scriptable]).toEqual([true, false]);
  expect(execute!.schema.safeParse({}).success).toBe(false);
});

test("execute returns {value, logs, calls} and sends inner calls through ctx.invoke", async () => {
  const invoked: Array<[string, unknown]> = [];
  const out = await execute!.execute({ code: "console.log('x'); const r = await tools.developer__shell({ command: 'echo hi' }); let d; try { await tools.other__x({}) } catch (e) { d = e.code } return [r.stdout, d];" }, ctx(defaultConfig(), invoked));
  expect(out).toEqual({ value: ["hi\n", "denied"], logs: ["x"], calls: 2 });
  expect(invoked).toEqual([["developer__shell", { command: "echo hi" }], ["other__x", {}]]);
});

test("a failing script throws AirlockError with its code, stack and logs", async () => {
  const err = await execute!.execute({ code: "console.log('before'); null.x;" }, ctx()).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(AirlockError);
  const e = err as AirlockError;
  expect(e.code).toBe("script_error");
  expect(e.details.logs).toEqual(["before"]);
  expect(String(e.details.stack)).toContain("script.js");
});

test("limits come from config limits.script_*", async () => {
  const config = Config.parse({ limits: { script_timeout_ms: 45_000, script_max_tool_calls: 2 } });
  expect(limitsFromConfig(config)).toMatchObject({ cpuTimeoutMs: 45_000, maxToolCalls: 2 });
  const e = (await execute!.execute({ code: "for (let i = 0; i < 5; i++) await tools.developer__shell({ command: 'x' });" }, ctx(config)).catch((x: unknown) => x)) as AirlockError;
  expect(e.code).toBe("script_too_many_calls");
});

test("list_tools returns ctx.listTools()", async () => {
  expect(await listTools!.execute({}, ctx())).toEqual([{ name: "developer__shell", description: "run", parameters: { type: "object" } }]);
});
