/**
 * @module config/load.test
 * loadConfig / parseConfigText / mergeConfig / formatZodIssues against real files in temp dirs.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { AirlockError } from "../errors.ts";
import { formatPath, formatZodIssues, loadConfig, mergeConfig, parseConfigText } from "./load.ts";
import { Config, defaultConfig } from "./schema.ts";

const dirs: string[] = [];
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), "airlock-load-"));
  dirs.push(d);
  return d;
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Runs fn, expecting an AirlockError; returns it. */
function catchAirlock(fn: () => unknown): AirlockError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(AirlockError);
    return e as AirlockError;
  }
  throw new Error("expected an AirlockError, nothing was thrown");
}

const FULL = `
provider:
  name: openai
  model: gpt-4.1-mini
  base_url: http://127.0.0.1:11434/v1
  api_key_env: OPENAI_API_KEY
mode: approve
sandbox: read-only
execution_backend: local
approvals:
  ttl_seconds: 120
hooks:
  PreToolUse:
    - matcher: "developer__shell|Bash"
      hooks: [{ type: command, command: "./hooks/check.sh", timeout: 10 }]
limits:
  max_concurrent_calls: 4
  script_timeout_ms: 5000
mcp_servers:
  fs: { command: npx, args: ["-y", "@modelcontextprotocol/server-filesystem", "."] }
tools:
  developer__shell: { permission: ask }
server: { host: 127.0.0.1, port: 0 }
`;

describe("loadConfig", () => {
  test("a missing default file means the defaults, path null, dir = data dir", () => {
    const dataDir = tempDir();
    const loaded = loadConfig({ dataDir });
    expect(loaded).toEqual({ config: defaultConfig(), path: null, dir: dataDir, text: null });
  });

  test("reads <dataDir>/airlock.yaml when --config is not given", () => {
    const dataDir = tempDir();
    writeFileSync(join(dataDir, "airlock.yaml"), "mode: chat\n");
    const loaded = loadConfig({ dataDir });
    expect(loaded.path).toBe(join(dataDir, "airlock.yaml"));
    expect(loaded.dir).toBe(dataDir);
    expect(loaded.config).toEqual({ ...defaultConfig(), mode: "chat" });
  });

  test("--config wins over the data dir file, and dir is the config file's directory", () => {
    const dataDir = tempDir();
    writeFileSync(join(dataDir, "airlock.yaml"), "mode: chat\n");
    const other = join(tempDir(), "sub");
    mkdirSync(other);
    writeFileSync(join(other, "my.yaml"), "mode: autonomous\n");
    const loaded = loadConfig({ dataDir, configPath: join(other, "my.yaml") });
    expect(loaded.config.mode).toBe("autonomous");
    expect(loaded.dir).toBe(other);
  });

  test("a missing explicit --config file is a config_invalid error naming it", () => {
    const dataDir = tempDir();
    const missing = join(dataDir, "nope.yaml");
    const err = catchAirlock(() => loadConfig({ dataDir, configPath: missing }));
    expect(err.code).toBe("config_invalid");
    expect(err.message).toContain(missing);
    expect(err.message).toContain("--config");
  });

  test("the result is deeply frozen", () => {
    const dataDir = tempDir();
    writeFileSync(join(dataDir, "airlock.yaml"), FULL);
    const { config } = loadConfig({ dataDir });
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.limits)).toBe(true);
    expect(Object.isFrozen(config.hooks.PreToolUse[0]!.hooks[0])).toBe(true);
    expect(Object.isFrozen(config.mcp_servers.fs!.args)).toBe(true);
    expect(() => {
      (config.limits as { max_concurrent_calls: number }).max_concurrent_calls = 99;
    }).toThrow(TypeError);
  });
});

describe("parseConfigText", () => {
  test("an empty file and a comment-only file mean the defaults", () => {
    expect(parseConfigText("", "airlock.yaml")).toEqual(defaultConfig());
    expect(parseConfigText("# nothing here\n", "airlock.yaml")).toEqual(defaultConfig());
  });

  test("a valid config round-trips: parse → YAML stringify → parse gives the same value", () => {
    const first = parseConfigText(FULL, "airlock.yaml");
    const second = parseConfigText(stringify(first), "again.yaml");
    expect(second).toEqual(first);
    expect(first.limits.max_concurrent_calls).toBe(4);
    expect(first.limits.shell_timeout_s).toBe(120); // default filled in
  });

  test("every failing key path is listed, with what was expected and what was found", () => {
    const text = [
      "provider:",
      "  name: gemini",
      "  base_url: not-a-url",
      "limits:",
      "  max_concurrent_calls: eight",
      "  script_memory_mb: 1",
      "hooks:",
      "  PreToolUse:",
      "    - matcher: Bash",
      "      hooks: [{ type: command }]",
      "mode: yolo",
    ].join("\n");
    const err = catchAirlock(() => parseConfigText(text, "airlock.yaml"));
    expect(err.code).toBe("config_invalid");
    expect(err.details.issues).toEqual([
      'airlock.yaml: provider.name: expected one of "openai" | "openai-responses" | "anthropic" | "scripted", got "gemini" (line 2, column 9)',
      "airlock.yaml: provider.base_url: expected a URL (e.g. http://127.0.0.1:11434/v1), got \"not-a-url\" (line 3, column 13)",
      'airlock.yaml: limits.max_concurrent_calls: expected number, got "eight" (line 5, column 25)',
      "airlock.yaml: limits.script_memory_mb: expected a number >= 8, got 1 (line 6, column 21)",
      "airlock.yaml: hooks.PreToolUse[0].hooks[0].command: required key is missing (expected string) (line 10, column 15)",
      'airlock.yaml: mode: expected one of "autonomous" | "smart" | "approve" | "chat", got "yolo" (line 11, column 7)',
    ]);
    for (const line of err.details.issues as string[]) expect(err.message).toContain(line);
    expect(err.message).toContain("6 problems");
  });

  test("unknown keys are refused, at any depth, with the place and a suggestion", () => {
    const err = catchAirlock(() => parseConfigText("foo: 1\nprovider:\n  modle: x\nlimits:\n  zzz: 3\n", "airlock.yaml"));
    expect(err.code).toBe("config_invalid");
    const issues = err.details.issues as string[];
    expect(issues).toHaveLength(3);
    expect(issues).toContain('airlock.yaml: unknown key "modle" at provider (did you mean "model"?) (line 3, column 3)');
    expect(issues.find((l) => l.includes('unknown key "foo" at the top level'))).toContain("(line 1, column 1)");
    expect(issues.find((l) => l.includes('unknown key "zzz" at limits'))).toContain("allowed keys: max_concurrent_calls");
  });

  test("a YAML syntax error gives line and column", () => {
    const err = catchAirlock(() => parseConfigText("mode: smart\nlimits:\n  max_concurrent_calls: [1, 2\nsandbox: read-only\n", "airlock.yaml"));
    expect(err.code).toBe("config_invalid");
    expect(err.message).toMatch(/^airlock\.yaml:\d+:\d+: YAML syntax error: /);
    const dup = catchAirlock(() => parseConfigText("mode: smart\nmode: chat\n", "airlock.yaml"));
    expect(dup.message).toStartWith("airlock.yaml:2:1: YAML syntax error: Map keys must be unique");
  });

  test("a top level that is not a mapping is refused", () => {
    const err = catchAirlock(() => parseConfigText("- a\n- b\n", "airlock.yaml"));
    expect(err.message).toBe("airlock.yaml: expected a mapping of keys at the top level, got a list of 2 items; see docs/configuration.md");
  });
});

describe("mergeConfig", () => {
  const base = parseConfigText(FULL, "airlock.yaml");

  test("mode and sandbox replace; same provider merges keys; hooks are appended", () => {
    const merged = mergeConfig(base, {
      mode: "autonomous",
      sandbox: "workspace-write",
      provider: { model: "gpt-5" },
      hooks: { PreToolUse: [{ matcher: "Write", hooks: [{ type: "command", command: "./w.sh" }] }] },
    });
    expect(merged.mode).toBe("autonomous");
    expect(merged.sandbox).toBe("workspace-write");
    expect(merged.provider).toEqual({ ...base.provider, model: "gpt-5" });
    expect(merged.hooks.PreToolUse.map((h) => h.matcher)).toEqual(["developer__shell|Bash", "Write"]);
    expect(merged.hooks.PreToolUse[1]!.hooks[0]!.timeout).toBe(60);
    expect(Object.isFrozen(merged.provider)).toBe(true);
    expect(base.mode).toBe("approve"); // base untouched
  });

  test("a different provider replaces the whole block (no base_url leaks across providers)", () => {
    const merged = mergeConfig(base, { provider: { name: "anthropic", model: "claude-x" } });
    expect(merged.provider).toEqual({ name: "anthropic", model: "claude-x", max_retries: 3, timeout_s: 600 });
  });

  test("invalid overrides are refused with every key path, named after the source", () => {
    const err = catchAirlock(() => mergeConfig(base, { mode: "yolo", limits: {} } as never, "recipe r.yaml"));
    expect(err.code).toBe("config_invalid");
    expect(err.details.issues).toEqual([
      'recipe r.yaml: mode: expected one of "autonomous" | "smart" | "approve" | "chat", got "yolo"',
      'recipe r.yaml: unknown key "limits" at the top level; allowed keys: mode, sandbox, provider, hooks',
    ]);
  });
});

describe("formatZodIssues", () => {
  test("formats issues from any schema with the source name", () => {
    const r = Config.safeParse({ approvals: { ttl_seconds: -1 }, tools: { x: { permission: "maybe" } } }, { reportInput: true });
    expect(r.success).toBe(false);
    expect(formatZodIssues(r.error!.issues, "POST /sessions")).toEqual([
      "POST /sessions: approvals.ttl_seconds: expected a number > 0, got -1",
      'POST /sessions: tools.x.permission: expected one of "allow" | "ask" | "deny", got "maybe"',
    ]);
  });

  test("formatPath writes indexes and quotes odd keys", () => {
    expect(formatPath(["hooks", "PreToolUse", 0, "matcher"])).toBe("hooks.PreToolUse[0].matcher");
    expect(formatPath(["tools", "a.b", "permission"])).toBe('tools["a.b"].permission');
    expect(formatPath([])).toBe("(top level)");
  });
});

import { leafPaths } from "./schema-paths.ts";

describe("docs/configuration.md", () => {
  test("documents every key of the schema", async () => {
    const doc = await Bun.file(join(import.meta.dir, "..", "..", "docs", "configuration.md")).text();
    const paths = leafPaths(Config);
    expect(paths.length).toBeGreaterThan(30);
    const undocumented = paths.filter((p) => {
      const pattern = p.replace(/[.[\]|]/g, (c) => `\\${c}`).replace(/\*/g, "<[^>]+>");
      return !new RegExp("`" + pattern + "`").test(doc);
    });
    expect(undocumented).toEqual([]);
  });

  test("its examples name real built-in tools (an MCP server's only as SERVER__TOOL, under mcp_servers)", async () => {
    const doc = await Bun.file(join(import.meta.dir, "..", "..", "docs", "configuration.md")).text();
    const { builtInTools } = await import("../tool/host-tools.ts");
    const builtIn = new Set(builtInTools(null as never, null as never).map((t) => t.name));
    // the scripted provider's section: a turn's tool calls must name tools every setup has
    const scripted = doc.slice(doc.indexOf("### The scripted provider"), doc.indexOf("\n### ", doc.indexOf("### The scripted provider") + 1));
    const named = [...scripted.matchAll(/\b([a-z][a-z0-9_-]*__[a-z0-9_]+)\b/g)].map((m) => m[1]!);
    expect(named.length).toBeGreaterThan(3);
    expect(named.filter((n) => !builtIn.has(n))).toEqual([]);
    // everywhere else: a name under a built-in extension is a real tool (but the typo shown as one)
    const extensions = /\b((?:developer|interpreter|code_execution|subagent)__[a-z0-9_]+)\b/g;
    const wrong = [...doc.matchAll(extensions)].map((m) => m[1]!).filter((n) => !builtIn.has(n) && n !== "developer__shel");
    expect(wrong).toEqual([]);
  });
});

describe("a config or recipe that is not a regular file", () => {
  // In a child process with a kill timer: a blocking read of a FIFO would block this process's event loop, and
  // with it the test's own timeout.
  test("a FIFO as airlock.yaml, --config or --recipe is refused at once (config_invalid / recipe_invalid), never read", () => {
    const dir = mkdtempSync(join(tmpdir(), "airlock-config-fifo-"));
    try {
      const fifo = join(dir, "airlock.yaml");
      expect(Bun.spawnSync(["mkfifo", fifo]).exitCode).toBe(0);
      const child = `
        const { loadConfig } = await import(${JSON.stringify(join(import.meta.dir, "load.ts"))});
        const { loadRecipe } = await import(${JSON.stringify(join(import.meta.dir, "..", "scheduler", "recipe.ts"))});
        const out = [];
        for (const f of [() => loadConfig({ dataDir: ${JSON.stringify(dir)} }), () => loadConfig({ dataDir: "/nonexistent", configPath: ${JSON.stringify(fifo)} }), () => loadRecipe(${JSON.stringify(fifo)})]) {
          try { f(); out.push("read"); } catch (e) { out.push(e.code + ": " + e.message); }
        }
        console.log(JSON.stringify(out));`;
      const r = Bun.spawnSync([process.execPath, "-e", child], { timeout: 30_000, stdout: "pipe", stderr: "pipe" });
      expect({ exit: r.exitCode, err: r.stderr.toString() }).toEqual({ exit: 0, err: "" });
      const out = JSON.parse(r.stdout.toString()) as string[];
      expect(out).toEqual([
        expect.stringMatching(/^config_invalid: config file .*airlock\.yaml is not a regular file/),
        expect.stringMatching(/^config_invalid: config file .*airlock\.yaml is not a regular file/),
        expect.stringMatching(/^recipe_invalid: recipe .*: cannot read the file \(ENOTREG: not a regular file\)/),
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
