/**
 * The shipped examples stay true: examples/airlock.yaml is a valid config that names every key of
 * the schema; the demo config and the recipes parse.
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "yaml";
import { loadConfig, parseConfigText } from "../../src/config/load.ts";
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
    // `storage:` is shown commented out too: set, it would switch the example to a PostgreSQL server
    const topCommented = /^# storage: postgres:\/\//m.test(text) ? ["storage"] : [];
    const present = [...valuePaths(doc, new Set(["tools", "mcp_servers"])), ...valuePaths(doc, new Set()), ...shownCommented, ...topCommented];
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

  test("docs/spec.md §3's example config: valid, no key its provider ignores, hooks beside the config named through $AIRLOCK_CONFIG_DIR, no npx MCP server", () => {
    const spec = readFileSync(join(EXAMPLES, "..", "docs", "spec.md"), "utf8");
    const section = spec.slice(spec.indexOf("## 3."));
    const yaml = /```yaml\n([\s\S]*?)```/.exec(section)![1]!;
    const config = parseConfigText(yaml, "docs/spec.md §3");
    const dir = mkdtempSync(join(tmpdir(), "airlock-spec3-"));
    try {
      mkdirSync(join(dir, "hooks"));
      writeFileSync(join(dir, "hooks", "check.sh"), "#!/bin/sh\n", { mode: 0o755 });
      expect(configWarnings(config, dir)).toEqual([]); // with the hook script beside the config, nothing to warn of
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    for (const groups of Object.values(config.hooks)) {
      if (!Array.isArray(groups)) continue;
      for (const g of groups) for (const h of g.hooks) expect(h.command).not.toMatch(/^["']?\.\//); // ./x resolves against the workspace, not the config
    }
    for (const server of Object.values(config.mcp_servers)) expect(server.command).not.toBe("npx"); // npx cannot start in the sandbox
  });

  test("the demo config and every recipe parse", () => {
    expect(loadConfig({ configPath: join(EXAMPLES, "demo", "airlock.yaml"), dataDir: "/nonexistent" }).config.provider.name).toBe("scripted");
    for (const name of ["nightly-triage.yaml", "demo-scripted.yaml"]) {
      expect(() => loadRecipe(join(EXAMPLES, "recipes", name))).not.toThrow();
    }
  });
});
