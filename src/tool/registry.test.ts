import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { isModelRosterTool, isScriptableTool, ToolRegistry } from "./registry.ts";
import { defineTool, type ToolDef } from "./tool.ts";

const tool = (name: string, extra: Partial<ToolDef> = {}): ToolDef =>
  ({ ...defineTool({ name, description: name, schema: z.strictObject({ x: z.number().optional() }), readOnly: true, execute: async () => name }), ...extra }) as ToolDef;

describe("ToolRegistry", () => {
  test("resolves static tools and lists dynamic sources by prefix; a failing source keeps its last listing", async () => {
    const r = new ToolRegistry();
    r.register(tool("developer__shell"));
    let fail = false;
    let listed = 0;
    r.registerSource({
      prefix: "fs__",
      list: async () => {
        listed++;
        if (fail) throw new Error("down");
        return [tool("fs__read"), tool("other__sneaky")];
      },
    });
    expect(r.get("fs__read")).toBeUndefined(); // not listed yet
    expect((await r.resolve("fs__read"))?.name).toBe("fs__read");
    expect(await r.resolve("other__sneaky")).toBeUndefined(); // outside the source's prefix
    expect((await r.list()).map((d) => d.name)).toEqual(["developer__shell", "fs__read"]);
    fail = true;
    expect((await r.list()).map((d) => d.name)).toEqual(["developer__shell", "fs__read"]);
    expect(r.listCached().map((d) => d.name)).toEqual(["developer__shell", "fs__read"]);
    expect(listed).toBe(3); // other__sneaky matched no source prefix, so nothing was listed for it
  });

  test("refuses malformed and duplicate names", () => {
    const r = new ToolRegistry();
    r.register(tool("a__b"));
    expect(() => r.register(tool("a__b"))).toThrow("twice");
    expect(() => r.register(tool("nounderscore"))).toThrow("extension__tool");
  });

  test("specs carry JSON Schema; roster filters pick the model's and the scripts' tools", async () => {
    const r = new ToolRegistry();
    for (const n of ["code_execution__execute", "subagent__spawn", "developer__shell"]) r.register(tool(n));
    r.register(tool("x__hidden", { scriptable: false }));
    expect((await r.specs(isModelRosterTool)).map((s) => s.name)).toEqual(["code_execution__execute", "subagent__spawn"]);
    expect(r.specsCached(isScriptableTool).map((s) => s.name)).toEqual(["subagent__spawn", "developer__shell"]);
    const [spec] = await r.specs((d) => d.name === "developer__shell");
    expect(spec!.parameters).toMatchObject({ type: "object", properties: { x: { type: "number" } } });
  });
});
