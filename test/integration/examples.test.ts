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
import { configWarnings } from "../../src/config/warnings.ts";
import { loadRecipe } from "../../src/scheduler/recipe.ts";

const EXAMPLES = join(import.meta.dir, "..", "..", "examples");

describe("examples/", () => {
  test("airlock.yaml is valid and sets every key of the schema", () => {
    const path = join(EXAMPLES, "airlock.yaml");
    expect(() => loadConfig({ configPath: path, dataDir: "/nonexistent" })).not.toThrow();
    const doc = parse(readFileSync(path, "utf8"));
    // `tools` is a record of tool names with named keys beside them (`tools.offer`): read both ways
    const text = readFileSync(path, "utf8");
    // the keys of providers other than the chosen one are shown commented out (`  # script: …`): set, they would be ignored
    const shownCommented = ["script", "thinking_budget_tokens", "prompt_caching"].filter((k) => new RegExp(`^  # ${k}: `, "m").test(text)).map((k) => `provider.${k}`);
    const present = [...valuePaths(doc, new Set(["tools", "mcp_servers"])), ...valuePaths(doc, new Set()), ...shownCommented];
    const missing = leafPaths(Config).filter((p) => !present.some((v) => v === p || v.startsWith(`${p}.`)));
    expect(missing).toEqual([]);
  });

  test("airlock.yaml gives no start-up warning: no key its provider ignores, no hook script that is missing", () => {
    const path = join(EXAMPLES, "airlock.yaml");
    const { config, dir } = loadConfig({ configPath: path, dataDir: "/nonexistent" });
    expect(configWarnings(config, dir, path)).toEqual([]);
    const demo = join(EXAMPLES, "demo", "airlock.yaml");
    const loaded = loadConfig({ configPath: demo, dataDir: "/nonexistent" });
    expect(configWarnings(loaded.config, loaded.dir, demo)).toEqual([]);
  });

  test("the demo config and every recipe parse", () => {
    expect(loadConfig({ configPath: join(EXAMPLES, "demo", "airlock.yaml"), dataDir: "/nonexistent" }).config.provider.name).toBe("scripted");
    for (const name of ["nightly-triage.yaml", "demo-scripted.yaml"]) {
      expect(() => loadRecipe(join(EXAMPLES, "recipes", name))).not.toThrow();
    }
  });
});
