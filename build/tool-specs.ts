/**
 * @module build/tool-specs
 * Records the built-in tools' argument JSON Schemas for the binary (src/tool/canned-specs.ts): the roster
 * the runtime registers (`builtInTools`), each converted by `toolSpec` as the runtime would. The ports the
 * tool factories take are not called while the tools are defined, so none is given.
 */
import { builtInTools } from "../src/tool/host-tools.ts";
import { offeredBuiltInSpecs } from "../src/tool/offered-specs.ts";
import { toolSpecWith, type ToolSpec } from "../src/tool/tool.ts";

/** Tool name → its `parameters` (JSON Schema, no `$schema`), for every built-in tool. */
export function recordToolParameters(): Record<string, Record<string, unknown>> {
  const out: Record<string, Record<string, unknown>> = {};
  for (const def of builtInTools(null as never, null as never)) out[def.name] = toolSpecWith(def, null).parameters;
  return out;
}

/** `tools.offer` → the built-in tools' specs offered to the model (tool/offered-specs.ts), for the early request. */
export function recordOfferedSpecs(): Record<"code" | "direct" | "both", ToolSpec[]> {
  return offeredBuiltInSpecs();
}
