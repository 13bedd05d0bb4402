import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { AirlockError } from "../errors.ts";
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

  test("specs with sources: false never lists a source; resolve throws a down source's error for a name it never listed", async () => {
    const r = new ToolRegistry();
    r.register(tool("code_execution__execute"));
    let listed = 0;
    const down = new AirlockError("mcp_server_unavailable", 'MCP server "bad" failed to start: it exited with code 1');
    r.registerSource({
      prefix: "bad__",
      list: async () => {
        listed++;
        return [];
      },
      unavailable: () => down,
    });
    expect((await r.specs(isModelRosterTool, { sources: false })).map((s) => s.name)).toEqual(["code_execution__execute"]);
    expect(listed).toBe(0);
    await expect(r.resolve("bad__x")).rejects.toBe(down);
    expect(listed).toBe(1);
    expect(await r.resolve("nobody__x")).toBeUndefined();
  });

  test("checkToolName: static tools and any name under a source pass; typos get the nearest name", () => {
    const r = new ToolRegistry();
    for (const n of ["developer__shell", "developer__read_file", "interpreter__js"]) r.register(tool(n));
    r.registerSource({ prefix: "fs__", list: async () => [] });
    expect(r.checkToolName("developer__shell")).toBeUndefined();
    expect(r.checkToolName("fs__whatever")).toBeUndefined();
    expect(r.checkToolName("developer__shel")).toBe("no such tool; did you mean developer__shell? the developer__ tools are developer__shell, developer__read_file");
    expect(r.checkToolName("interpreter__ruby")).toBe("no such tool; the interpreter__ tools are interpreter__js");
    expect(r.checkToolName("fz__read")).toStartWith('no such tool; did you mean fs__read? "fz" is neither a built-in extension nor a configured MCP server');
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
