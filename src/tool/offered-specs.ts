/**
 * @module tool/offered-specs
 * The specs of the built-in tools offered to the model for each `tools.offer` when no MCP server is
 * configured, computed as the runtime computes them (its registry's `specs(offeredToolFilter(offer))` over
 * `builtInTools`, in registration order). Recorded at build time into `canned-specs.ts` (`cannedOffered`);
 * loaded at run time only from source, where that table is `null` (it loads zod).
 */
import { builtInTools } from "./host-tools.ts";
import { offeredToolFilter } from "./registry.ts";
import { toolSpec, type ToolSpec } from "./tool.ts";

/** `tools.offer` → the offered built-in tools' specs. The tool factories' ports are not called while the tools are defined, so none is given. */
export function offeredBuiltInSpecs(): Record<"code" | "direct" | "both", ToolSpec[]> {
  const defs = builtInTools(null as never, null as never);
  const of = (offer: "code" | "direct" | "both") => defs.filter(offeredToolFilter(offer)).map((d) => toolSpec(d));
  return { code: of("code"), direct: of("direct"), both: of("both") };
}
