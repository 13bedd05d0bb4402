import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { recordOfferedSpecs, recordToolParameters } from "../../build/tool-specs.ts";
import { offeredToolFilter, ToolRegistry } from "./registry.ts";
import { builtInTools } from "./host-tools.ts";
import { defineTool, toolSpec, toolSpecWith } from "./tool.ts";

describe("recorded tool specs (tool/canned-specs.ts)", () => {
  test("the recorded table gives every built-in tool the spec converted from zod, key order included", () => {
    const table = recordToolParameters();
    const defs = builtInTools(null as never, null as never);
    expect(Object.keys(table).sort()).toEqual(defs.map((d) => d.name).sort());
    for (const def of defs) {
      const converted = toolSpecWith(def, null);
      const recorded = toolSpecWith(def, JSON.parse(JSON.stringify(table)));
      expect(JSON.stringify(recorded)).toBe(JSON.stringify(converted));
      expect(converted).toEqual(toolSpec(def)); // from source the table is null: toolSpec converts
    }
  });

  test("a tool given by its JSON Schema keeps it, and a tool the table does not name is converted", () => {
    const table = { some__tool: { type: "object", properties: { recorded: { type: "string" } } } };
    const mcp = { ...defineTool({ name: "some__tool", description: "d", readOnly: true, schema: z.object({}), async execute() {} }), jsonSchema: { type: "object", properties: { own: { type: "number" } } } };
    expect(toolSpecWith(mcp, table).parameters).toEqual({ type: "object", properties: { own: { type: "number" } } });
    const zodOnly = defineTool({ name: "other__tool", description: "d", readOnly: true, schema: z.strictObject({ n: z.number() }), async execute() {} });
    expect(toolSpecWith(zodOnly, table).parameters).toEqual(toolSpecWith(zodOnly, null).parameters);
    expect(toolSpecWith(zodOnly, table).parameters).toMatchObject({ properties: { n: { type: "number" } } });
    const named = defineTool({ name: "some__tool", description: "d", readOnly: true, schema: z.strictObject({}), async execute() {} });
    expect(toolSpecWith(named, table).parameters).toEqual(table.some__tool);
  });

  test("the recorded offered specs are what the runtime's registry offers for each tools.offer (no MCP server), in its order", async () => {
    const offered = recordOfferedSpecs();
    const registry = new ToolRegistry();
    for (const t of builtInTools(null as never, null as never)) registry.register(t);
    for (const offer of ["code", "direct", "both"] as const) {
      const specs = await registry.specs(offeredToolFilter(offer), { sources: offer !== "code" });
      expect(JSON.stringify(JSON.parse(JSON.stringify(offered[offer])))).toBe(JSON.stringify(specs));
      expect(specs.length).toBe(offer === "code" ? 4 : offer === "direct" ? 9 : 11);
    }
  });
});
