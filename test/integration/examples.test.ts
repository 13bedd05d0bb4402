/**
 * The shipped examples stay true: examples/airlock.yaml is a valid config that names every key of
 * the schema; the demo config and the recipes parse.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { loadConfig } from "../../src/config/load.ts";
import { Config } from "../../src/config/schema.ts";
import { leafPaths, valuePaths } from "../../src/config/schema-paths.ts";
import { loadRecipe } from "../../src/scheduler/recipe.ts";

const EXAMPLES = join(import.meta.dir, "..", "..", "examples");

describe("examples/", () => {
  test("airlock.yaml is valid and sets every key of the schema", () => {
    const path = join(EXAMPLES, "airlock.yaml");
    expect(() => loadConfig({ configPath: path, dataDir: "/nonexistent" })).not.toThrow();
    const doc = parse(readFileSync(path, "utf8"));
    // `tools` is a record of tool names with named keys beside them (`tools.offer`): read both ways
    const present = [...valuePaths(doc, new Set(["tools", "mcp_servers"])), ...valuePaths(doc, new Set())];
    const missing = leafPaths(Config).filter((p) => !present.some((v) => v === p || v.startsWith(`${p}.`)));
    expect(missing).toEqual([]);
  });

  test("the demo config and every recipe parse", () => {
    expect(loadConfig({ configPath: join(EXAMPLES, "demo", "airlock.yaml"), dataDir: "/nonexistent" }).config.provider.name).toBe("scripted");
    for (const name of ["nightly-triage.yaml", "demo-scripted.yaml"]) {
      expect(() => loadRecipe(join(EXAMPLES, "recipes", name))).not.toThrow();
    }
  });
});
