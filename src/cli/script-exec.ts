/**
 * @module cli/script-exec
 * The hidden `airlock __script-exec` command: runs scripts from stdin on a script pool with a small
 * built-in set of test tools and prints each ScriptResult as one JSON line on stdout. It exists to
 * exercise the embedded script worker of the compiled binary (test/e2e/script-binary.test.ts).
 */
import { parseArgs } from "node:util";
import { Limits } from "../config/schema.ts";
import { GateContext } from "../gate/context.ts";
import type { ToolOutcome } from "../tool/tool.ts";
import { ScriptPool, type RunOptions, type ScriptResult } from "../script/pool.ts";
import { AirlockError, EXIT } from "../errors.ts";
import { reportError, writeAll } from "./output.ts";

const USAGE = `usage: airlock __script-exec [--many] [--sequential] [--workers N] [--memory-mb N] [--stack-kb N]
                                [--cpu-ms N] [--wall-ms N] [--max-calls N] [--max-log-bytes N] [--max-result-bytes N]
stdin: the script (or with --many, a JSON array of scripts). stdout: one ScriptResult JSON line per script.
tools: echo(args) fail({code?,message?}) park({ms}) count() hold({until}) release() whoami() — any other name is unknown_tool.`;

/** The built-in test tools, sharing state across the scripts of one invocation. */
export function testTools(): (name: string, args: unknown) => Promise<ToolOutcome> {
  let counter = 0;
  let releases = 0;
  const waiting = new Set<() => void>();
  const obj = (a: unknown): Record<string, unknown> => (a && typeof a === "object" && !Array.isArray(a) ? (a as Record<string, unknown>) : {});
  return async function callTestTool(name, args) {
    const a = obj(args);
    switch (name) {
      case "echo":
        return { ok: true, result: args };
      case "fail":
        return { ok: false, error: { code: "tool_failed", message: typeof a.message === "string" ? a.message : "fail: asked to fail", ...(typeof a.code === "string" ? { tool_code: a.code } : {}) } };
      case "park": {
        const ms = typeof a.ms === "number" ? Math.min(Math.max(a.ms, 0), 600_000) : 100;
        await new Promise((r) => setTimeout(r, ms));
        return { ok: true, result: { parked_ms: ms } };
      }
      case "count":
        return { ok: true, result: ++counter };
      case "hold": {
        const until = typeof a.until === "number" ? a.until : 1;
        while (releases < until) await new Promise<void>((r) => waiting.add(r));
        return { ok: true, result: { released: releases } };
      }
      case "release": {
        releases++;
        for (const w of [...waiting]) {
          waiting.delete(w);
          w();
        }
        return { ok: true, result: releases };
      }
      case "whoami": {
        await Promise.resolve();
        return { ok: true, result: GateContext.use() };
      }
      default:
        return { ok: false, error: { code: "unknown_tool", message: `no test tool is named ${JSON.stringify(name)}` } };
    }
  };
}

/**
 * Runs the command. `argv` is the arguments after `__script-exec`.
 * @returns 0 when every script succeeded, 1 when one failed, 2 on a usage error.
 */
export async function scriptExec(argv: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        many: { type: "boolean", default: false },
        sequential: { type: "boolean", default: false },
        workers: { type: "string" },
        "memory-mb": { type: "string" },
        "stack-kb": { type: "string" },
        "cpu-ms": { type: "string" },
        "wall-ms": { type: "string" },
        "max-calls": { type: "string" },
        "max-log-bytes": { type: "string" },
        "max-result-bytes": { type: "string" },
      },
      strict: true,
    }));
  } catch (e) {
    return reportError(new AirlockError("usage", `__script-exec: ${e instanceof Error ? e.message : String(e)}\n${USAGE}`));
  }
  const d = Limits.parse({});
  const num = (v: string | undefined, dflt: number): number => (v === undefined ? dflt : Number(v));
  const opts: RunOptions = {
    cpuTimeoutMs: num(values["cpu-ms"], d.script_timeout_ms),
    wallTimeoutMs: num(values["wall-ms"], d.script_wall_timeout_ms),
    maxToolCalls: num(values["max-calls"], d.script_max_tool_calls),
    maxLogBytes: num(values["max-log-bytes"], d.script_max_log_bytes),
    maxResultBytes: num(values["max-result-bytes"], d.script_max_result_bytes),
  };
  const input = await new Response(Bun.stdin.stream()).text();
  let scripts: string[];
  if (values.many) {
    try {
      const parsed: unknown = JSON.parse(input);
      if (!Array.isArray(parsed) || !parsed.every((s) => typeof s === "string")) throw new Error("expected a JSON array of strings");
      scripts = parsed;
    } catch (e) {
      return reportError(new AirlockError("usage", `__script-exec --many: stdin is not a JSON array of scripts (${e instanceof Error ? e.message : String(e)})`));
    }
  } else scripts = [input];

  let pool: ScriptPool;
  try {
    pool = new ScriptPool({ workers: num(values.workers, 1), memoryMb: num(values["memory-mb"], d.script_memory_mb), stackKb: num(values["stack-kb"], d.script_stack_kb) });
  } catch (e) {
    return reportError(new AirlockError("usage", `__script-exec: ${e instanceof Error ? e.message : String(e)}`));
  }
  const call = testTools();
  const ctx = { sessionId: "ses_sandbox_exec", turnId: "turn_sandbox_exec", callId: "call_sandbox_exec" };
  const runOne = (code: string): Promise<ScriptResult> => GateContext.provide(ctx, () => pool.run(code, opts, call));
  try {
    let results: ScriptResult[];
    if (values.sequential) {
      results = [];
      for (const s of scripts) results.push(await runOne(s));
    } else results = await Promise.all(scripts.map(runOne));
    writeAll(1, results.map((r) => JSON.stringify(r) + "\n").join(""));
    return results.every((r) => r.ok) ? EXIT.ok : EXIT.failed;
  } catch (e) {
    // the pool itself failed (not a script): this test command has always exited 2 then, kept as it is
    writeAll(2, `airlock: __script-exec: ${e instanceof Error ? e.message : String(e)}\n`);
    return EXIT.usage;
  } finally {
    await pool.close();
  }
}
