/**
 * @module tool/code-execution
 * `code_execution__execute` (run a script in the QuickJS sandbox; its `tools.*` calls go back through
 * the gate one by one via `ctx.invoke`) and `code_execution__list_tools` (the tools a script can call).
 * The script holds no permit: it mostly waits, and each inner call is judged and permitted on its own.
 */
import { z } from "zod";
import type { Config } from "../config/schema.ts";
import { AirlockError } from "../errors.ts";
import type { RunOptions, ScriptPool } from "../script/pool.ts";
import { defineTool, type ToolDef } from "./tool.ts";
import description from "./code-execution.txt" with { type: "text" };

export const ExecuteArgs = z.strictObject({
  code: z.string().min(1).describe("JavaScript: the body of an async function; `await tools.NAME(args)`, `return` the result"),
});
export type ExecuteArgs = z.infer<typeof ExecuteArgs>;

export const ListToolsArgs = z.strictObject({});

/** The per-script limits from config `limits.script_*` (ms, counts, bytes). */
export function limitsFromConfig(config: Config): Omit<RunOptions, "signal"> {
  const l = config.limits;
  return {
    cpuTimeoutMs: l.script_timeout_ms,
    wallTimeoutMs: l.script_wall_timeout_ms,
    maxToolCalls: l.script_max_tool_calls,
    maxLogBytes: l.script_max_log_bytes,
    maxResultBytes: l.script_max_result_bytes,
  };
}

/**
 * The two `code_execution__*` tools over `pool`.
 * `execute` returns `{value, logs, calls}`; a failed script throws `AirlockError(code, message, {stack?, logs, calls})`
 * with a script_* code (or `cancelled` when the turn's signal aborts).
 */
export function createCodeExecutionTools(pool: ScriptPool): ToolDef[] {
  const execute = defineTool({
    name: "code_execution__execute",
    description,
    schema: ExecuteArgs,
    // The script itself changes nothing: each inner call is judged on its own.
    readOnly: true,
    usesPermit: false,
    scriptable: false,
    async execute(args, ctx) {
      const r = await pool.run(args.code, { ...limitsFromConfig(ctx.config), signal: ctx.signal }, (name, callArgs, signal) => ctx.invoke(name, callArgs, { signal }));
      if (r.ok) return { value: r.value, logs: r.logs, calls: r.calls };
      throw new AirlockError(r.error.code, r.error.message, { ...(r.error.stack ? { stack: r.error.stack } : {}), logs: r.logs, calls: r.calls });
    },
  });
  const listTools = defineTool({
    name: "code_execution__list_tools",
    description: "List the tools a code_execution__execute script can call as `await tools.NAME(args)`, with the JSON Schema of each one's arguments.",
    schema: ListToolsArgs,
    readOnly: true,
    inert: true,
    scriptable: false,
    async execute(_args, ctx) {
      return ctx.listTools();
    },
  });
  return [execute, listTools];
}
