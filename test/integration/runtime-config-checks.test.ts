/**
 * What a new user meets from a fresh clone, through the real runtime and the real `airlock` CLI:
 * no model configured is said (the runtime's answer + one warning; `airlock run` refuses it, exit 2), a typo under `tools:` and a missing
 * `provider.script` are configuration errors at start (exit 2), and a session whose stored graph
 * is corrupted gets its calls refused instead of judged without its root's run overrides.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { NO_MODEL_CONFIGURED } from "../../src/agent/providers/scripted.ts";
import { Config } from "../../src/config/schema.ts";
import { AirlockError } from "../../src/errors.ts";
import { createRuntime, type Runtime } from "../../src/runtime.ts";

const MAIN = join(import.meta.dir, "../../src/main.ts");
let dir: string;
let rt: Runtime | undefined;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "airlock-rt-checks-"));
  mkdirSync(join(dir, "ws"));
  writeFileSync(join(dir, "ws", "README.md"), "# hello\n");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(async () => {
  await rt?.close();
  rt = undefined;
});

/** A fresh data dir (no airlock.yaml unless `files` has one) under the test dir. */
function dataDir(name: string, files: Record<string, string> = {}): string {
  const d = join(dir, name);
  mkdirSync(d, { recursive: true });
  for (const [f, text] of Object.entries(files)) writeFileSync(join(d, f), text);
  return d;
}

async function runtime(d: string, config: Record<string, unknown>, logs: string[] = []): Promise<Runtime> {
  rt = await createRuntime({ config: Config.parse(config), configDir: d, dataDir: d, workspace: join(dir, "ws"), env: {}, log: (l) => logs.push(l) });
  return rt;
}

async function thrown(fn: () => unknown): Promise<AirlockError> {
  try {
    await fn();
  } catch (e) {
    if (e instanceof AirlockError) return e;
    throw e;
  }
  throw new Error("expected a throw");
}

async function airlock(args: string[], data: string) {
  const p = Bun.spawn([process.execPath, MAIN, ...args, "--data-dir", data], { cwd: join(dir, "ws"), stdin: "ignore", stdout: "pipe", stderr: "pipe", env: { ...process.env, AIRLOCK_HOME: "" } });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { stdout, stderr, code };
}

describe("no model configured", () => {
  test("runtime: one warning line at creation (to the log, not stdout); the answer says no model is configured", async () => {
    const logs: string[] = [];
    const r = await runtime(dataDir("nomodel"), {}, logs);
    expect(logs.filter((l) => l.startsWith("airlock: no model configured"))).toHaveLength(1);
    expect(logs[0]).toContain("docs/quickstart.md §6");
    const s = await r.createSession({});
    const res = await r.runTurn(s.id, "summarise README.md");
    expect(res).toMatchObject({ status: "completed", answer: NO_MODEL_CONFIGURED, error: null });
  });

  test("runtime: a configured script warns nothing and still ends with (script ended)", async () => {
    const logs: string[] = [];
    const d = dataDir("scripted", { "turns.yaml": "turns:\n  - text: hi\n" });
    const r = await runtime(d, { provider: { name: "scripted", script: "turns.yaml" } }, logs);
    expect(logs).toEqual([]);
    const s = await r.createSession({});
    expect((await r.runTurn(s.id, "a")).answer).toBe("hi");
    expect((await r.runTurn(s.id, "b")).answer).toBe("(script ended)");
  });

  test('airlock run "summarise README.md" with the default config: config_invalid (exit 2), nothing on stdout, the file to edit named', async () => {
    const d = dataDir("cli-nomodel");
    const r = await airlock(["run", "summarise README.md"], d);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    const failed = r.stderr.split("\n").filter((l) => l.startsWith("airlock: config_invalid: no model configured"));
    expect(failed).toHaveLength(1);
    expect(r.stderr.match(/no model configured/g)).toHaveLength(1); // said once: as the error, not also as a warning
    // It names the file to edit: here none exists yet, so the data dir's airlock.yaml.
    expect(failed[0]).toContain(`in ${join(d, "airlock.yaml")} (create it; or pass --config FILE)`);
  });
});

describe("tools: keys are checked at runtime creation", () => {
  test("a typo under a built-in extension is config_invalid with a suggestion", async () => {
    const e = await thrown(() => runtime(dataDir("typo"), { tools: { developer__shel: { permission: "deny" } } }));
    expect(e.code).toBe("config_invalid");
    expect(e.message).toStartWith("tools.developer__shel: no such tool; did you mean developer__shell?");
  });

  test("an unknown extension, a Claude Code name and a near-miss MCP prefix are refused; real tools and any server__x are accepted", async () => {
    const mcp = { fs: { command: "node", args: ["-e", "process.exit(1)"] } };
    const e = await thrown(() =>
      runtime(dataDir("typo2"), {
        mcp_servers: mcp,
        tools: { fss__read_file: { permission: "deny" }, Bash: { permission: "ask" }, interpreter__ruby: { permission: "deny" }, nope__x: { permission: "deny" } },
      }),
    );
    expect(e.code).toBe("config_invalid");
    const lines = e.message.split("\n");
    expect(lines[0]).toStartWith('tools.fss__read_file: no such tool; did you mean fs__read_file? "fss" is neither a built-in extension nor a configured MCP server');
    expect(lines[1]).toStartWith("tools.Bash: not an airlock tool name (extension__tool); did you mean developer__shell?");
    expect(lines[2]).toStartWith("tools.interpreter__ruby: no such tool; the interpreter__ tools are interpreter__python, interpreter__js");
    expect(lines[3]).toContain("MCP servers under mcp_servers: fs");
    const logs: string[] = [];
    const ok = await runtime(
      dataDir("typo-ok"),
      { mcp_servers: mcp, tools: { developer__shell: { permission: "deny" }, fs__anything: { permission: "ask" }, subagent__spawn: { permission: "ask" } } },
      logs,
    );
    expect(ok.registry.get("developer__shell")).toBeDefined();
    expect(logs.some((l) => l.includes("[mcp:fs]"))).toBe(false);
  });

  test("airlock run with the typo exits 2 with the message, the key's line and column, on stderr and nothing on stdout", async () => {
    const d = dataDir("cli-typo", { "airlock.yaml": "tools:\n  developer__shel: { permission: deny }\n" });
    const r = await airlock(["run", "hi"], d);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("tools.developer__shel (line 2, column 3): no such tool; did you mean developer__shell?");
  });
});

describe("start-up warnings of a valid config", () => {
  test("a provider key the chosen provider ignores, and a hook script path that does not exist, are each one warning naming them", async () => {
    const d = dataDir("warn");
    const logs: string[] = [];
    rt = await createRuntime({
      config: Config.parse({
        provider: { name: "openai", base_url: "http://127.0.0.1:9/v1", model: "m", script: "turns.yaml" },
        hooks: {
          PreToolUse: [{ hooks: [{ type: "command", command: '"$AIRLOCK_CONFIG_DIR/hooks/missing.sh"' }, { type: "command", command: "/bin/true" }] }],
          Stop: [{ hooks: [{ type: "command", command: "/nonexistent/stop.sh --x" }] }],
        },
      }),
      configDir: d,
      dataDir: d,
      workspace: join(dir, "ws"),
      env: {},
      log: (l) => logs.push(l),
    });
    const warnings = logs.filter((l) => l.startsWith("airlock: WARNING:"));
    expect(warnings).toHaveLength(3);
    expect(warnings[0]).toContain("provider.script is ignored by the openai provider (only scripted reads it)");
    expect(warnings[1]).toContain(`hooks.PreToolUse[0].hooks[0].command: ${join(d, "hooks/missing.sh")} does not exist`);
    expect(warnings[2]).toContain("hooks.Stop[0].hooks[0].command: /nonexistent/stop.sh does not exist");
  });
});

describe("a missing provider.script is a configuration error at start", () => {
  test("rt.checkProvider() throws config_invalid naming the file and the folder it was relative to", async () => {
    const d = dataDir("missing-rt");
    const r = await runtime(d, { provider: { name: "scripted", script: "gone.yaml" } });
    const e = await thrown(() => r.checkProvider());
    expect(e.code).toBe("config_invalid");
    expect(e.message).toContain(`cannot read ${join(d, "gone.yaml")} (ENOENT)`);
    expect(e.message).toContain(`the config file's folder (${d})`);
    expect((await thrown(() => r.checkProvider({ scriptOrigin: "recipe nightly.yaml" }))).message).toContain("the folder of recipe nightly.yaml");
  });

  test("checkProvider builds the provider once: the turn uses it even after the file is gone", async () => {
    const d = dataDir("once", { "turns.yaml": "turns:\n  - text: loaded at start\n" });
    const r = await runtime(d, { provider: { name: "scripted", script: "turns.yaml" } });
    r.checkProvider();
    rmSync(join(d, "turns.yaml"));
    expect((await r.runTurn((await r.createSession({})).id, "go")).answer).toBe("loaded at start");
  });

  test("airlock run: config file's script missing → exit 2 (not a failed turn), stdout only the invalid result", async () => {
    const d = dataDir("cli-missing", { "airlock.yaml": "provider: { name: scripted, script: nowhere.yaml }\n" });
    const r = await airlock(["run", "go", "--output-format", "json"], d);
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: "invalid", session_id: null, error: { code: "config_invalid" } });
    expect(r.stderr).toContain(`provider.script: cannot read ${join(d, "nowhere.yaml")} (ENOENT)`);
    expect(r.stderr).toContain(`the config file's folder (${d})`);
  });

  test("airlock run --recipe: the recipe's script missing → exit 2 naming the recipe", async () => {
    const d = dataDir("cli-recipe");
    const recipeDir = join(dir, "recipes");
    mkdirSync(recipeDir, { recursive: true });
    const recipe = join(recipeDir, "r.yaml");
    writeFileSync(recipe, stringify({ name: "r", instructions: "go", provider: { name: "scripted", script: "r.turns.yaml" } }));
    const r = await airlock(["run", "--recipe", recipe], d);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain(`cannot read ${join(recipeDir, "r.turns.yaml")} (ENOENT)`);
    expect(r.stderr).toContain(`the folder of recipe ${recipe}`);
  });

  test("airlock serve: exits 2 at startup instead of listening", async () => {
    const d = dataDir("serve-missing", { "airlock.yaml": "provider: { name: scripted, script: nowhere.yaml }\n" });
    const p = Bun.spawn([process.execPath, MAIN, "serve", "--port", "0", "--data-dir", d], { stdin: "ignore", stdout: "pipe", stderr: "pipe", env: { ...process.env, AIRLOCK_HOME: "" } });
    // wait for either the exit or the "listening" line (then stop it: the check did not happen)
    let stderr = "";
    const reader = p.stderr.pipeThrough(new TextDecoderStream()).getReader();
    const listening = (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return false;
        stderr += value;
        if (stderr.includes("listening on")) return true;
      }
    })();
    const first = await Promise.race([p.exited.then(() => "exited"), listening.then((l) => (l ? "listening" : "eof"))]);
    if (first === "listening") p.kill("SIGTERM");
    const code = await p.exited;
    await listening;
    expect(first).not.toBe("listening");
    expect(code).toBe(2);
    expect(stderr).toContain("provider.script: cannot read");
  });
});

describe("configFor with a corrupted session graph", () => {
  const TURNS = {
    turns: [{ tool_calls: [{ name: "subagent__spawn", arguments: { instructions: "touch the marker" } }] }, { text: "root done" }],
    subagents: [{ turns: [{ tool_calls: [{ name: "developer__shell", arguments: { command: "touch marker" } }] }, { text: "child done" }] }],
  };
  /** The root's run overrides add a hook denying Bash; the child's shell call is judged with them. */
  async function setup(name: string) {
    const d = dataDir(name, { "turns.yaml": stringify(TURNS) });
    const ws = join(d, "ws");
    mkdirSync(ws);
    const r = await runtime(d, { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous", sandbox: "danger-full-access" });
    const root = await r.createSession({ workspace: ws, headless: true });
    r.setRunOverrides(root.id, { hooks: { PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: "echo 'recipe guard' >&2; exit 2" }] }] } });
    const results: any[] = [];
    r.bus.subscribeAll((e) => {
      if (e.type === "tool_result" && e.data.tool === "developer__shell") results.push(e.data);
    });
    return { r, root, ws, results };
  }

  test("control: the root's run overrides (a recipe's hook) deny the child's call", async () => {
    const { r, root, ws, results } = await setup("graph-ok");
    await r.runTurn(root.id, "go");
    expect(results).toHaveLength(1);
    expect(results[0].ok).toBe(false);
    expect(results[0].error.message).toContain("recipe guard");
    expect(existsSync(join(ws, "marker"))).toBe(false);
  });

  test("a cycle in the sessions table: the call is refused with session_graph_invalid, not run without the overrides", async () => {
    const { r, root, ws, results } = await setup("graph-cycle");
    // corrupt the table the moment the child's shell call reaches the gate (before it is judged)
    r.bus.subscribeAll((e) => {
      if (e.type === "tool_request" && e.data.tool === "developer__shell") {
        void r.store.sql.run("UPDATE sessions SET parent_session_id = ? WHERE id = ?", [e.session_id, root.id]);
      }
    });
    await r.runTurn(root.id, "go");
    expect(results).toHaveLength(1);
    expect(results[0].ok).toBe(false);
    // the process holds the parent links it read (they never change once stored), so a row corrupted under it
    // is not seen: the call is judged with the root's overrides it already knew, and refused by them; a process
    // that reads the corrupted chain refuses session_graph_invalid (src/store/store.test.ts, session/graph.ts)
    expect(["session_graph_invalid", "denied"]).toContain(results[0].error.code);
    expect(existsSync(join(ws, "marker"))).toBe(false);
  });
});
