import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { recordOfferedSpecs, recordToolParameters } from "../../build/tool-specs.ts";
import { offeredToolFilter, ToolRegistry } from "./registry.ts";
import { builtInTools } from "./host-tools.ts";
import { defineTool, toolSpec, toolSpecWith } from "./tool.ts";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cannedSpecsModule } from "./canned-specs.ts";

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

  test("the binary's module text gives back the recorded table and offered specs as JSON texts parsed on demand", async () => {
    const table = recordToolParameters();
    const offered = recordOfferedSpecs();
    const text = cannedSpecsModule(table, offered);
    // no object literal of the specs: the texts are string literals, parsed when asked for
    expect(text).not.toContain(`= ${JSON.stringify(table)}`);
    const dir = mkdtempSync(join(tmpdir(), "airlock-canned-specs-"));
    try {
      writeFileSync(join(dir, "canned.js"), text);
      const m = (await import(join(dir, "canned.js"))) as typeof import("./canned-specs.ts");
      expect(JSON.stringify(m.cannedParameters())).toBe(JSON.stringify(table));
      expect(m.cannedParameters()).toBe(m.cannedParameters());
      for (const offer of ["code", "direct", "both"] as const) {
        expect(JSON.stringify(m.cannedOffered(offer))).toBe(JSON.stringify(offered[offer]));
        // a fresh copy each call: the caller may change it
        expect(m.cannedOffered(offer)).not.toBe(m.cannedOffered(offer));
      }
      expect(m.cannedOffered("toString" as never)).toBeNull();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
