/**
 * @module tool/host-tools
 * The tools that touch the host — shell, file tools, interpreters — as one list for the registry.
 * Every process among them goes through src/launcher/ (policy → bubblewrap → spawn).
 */
import { editFileTool, listDirTool, readFileTool, writeFileTool } from "./files.ts";
import { jsTool, pythonTool } from "./interpreter.ts";
import { shellTool } from "./shell.ts";
import type { ToolDef } from "./tool.ts";

/** `developer__shell`, `developer__read_file`, `developer__write_file`, `developer__edit_file`, `developer__list_dir`, `interpreter__python`, `interpreter__js`. */
export function hostTools(): ToolDef[] {
  return [shellTool, readFileTool, writeFileTool, editFileTool, listDirTool, pythonTool, jsTool] as ToolDef[];
}
