/**
 * @module tool/host-tools
 * The tools that touch the host — shell, file tools, interpreters — as one list for the registry.
 * Every process among them goes through src/launcher/ (policy → bubblewrap → spawn). Also the whole
 * built-in roster, as the runtime (and `airlock policy explain`) registers it.
 */
import { editFileTool, listDirTool, readFileTool, writeFileTool } from "./files.ts";
import { jsTool, pythonTool } from "./interpreter.ts";
import { shellTool } from "./shell.ts";
import type { ScriptPool } from "../script/pool.ts";
import { createCodeExecutionTools } from "./code-execution.ts";
import { subagentTools, type SubagentPort } from "./subagent.ts";
import type { ToolDef } from "./tool.ts";

/** `developer__shell`, `developer__read_file`, `developer__write_file`, `developer__edit_file`, `developer__list_dir`, `interpreter__python`, `interpreter__js`. */
export function hostTools(): ToolDef[] {
  return [shellTool, readFileTool, writeFileTool, editFileTool, listDirTool, pythonTool, jsTool] as ToolDef[];
}

/** Every built-in tool: `code_execution__*` over `pool`, the host tools, `subagent__*` over `port`. */
export function builtInTools(pool: ScriptPool, port: SubagentPort): ToolDef[] {
  return [...createCodeExecutionTools(pool), ...hostTools(), ...subagentTools(port)];
}
