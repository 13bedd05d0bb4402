/**
 * Permission rules through the real runtime with the scripted provider: they apply at every depth — a
 * direct call, a call from a script, a call from a subagent — a rule's allow answers smart mode's ask,
 * and a rule's deny refuses (inspector `rule`, naming the rule). Start-up: malformed rules and a failing
 * `permissions.tests` case are `config_invalid` (exit 2 from `airlock run`), and
 * `import_claude_settings` reads a fixture `.claude/settings.json` as Claude Code would.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { Config } from "../../src/config/schema.ts";
import { AirlockError } from "../../src/errors.ts";
import { createRuntime, type Runtime } from "../../src/runtime.ts";

const MAIN = join(import.meta.dir, "../../src/main.ts");
let dir: string;
let rt: Runtime | undefined;

beforeAll(() => {
  dir = realpathSync(mkdtempSync(join(tmpdir(), "airlock-perm-rules-")));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(async () => {
  await rt?.close();
  rt = undefined;
});

/** A fresh folder with a data dir and a workspace, files written into each. */
function setup(name: string, files: { data?: Record<string, string>; ws?: Record<string, string> } = {}) {
  const data = join(dir, name, "data");
  const ws = join(dir, name, "ws");
  for (const [base, fs] of [
    [data, files.data ?? {}],
    [ws, files.ws ?? {}],
  ] as const) {
    mkdirSync(base, { recursive: true });
    for (const [f, text] of Object.entries(fs)) {
      mkdirSync(join(base, f, ".."), { recursive: true });
      writeFileSync(join(base, f), text);
    }
  }
  return { data, ws };
}

async function runtime(d: { data: string; ws: string }, config: Record<string, unknown>, logs: string[] = []): Promise<Runtime> {
  rt = await createRuntime({ config: Config.parse(config), configDir: d.data, dataDir: d.data, workspace: d.ws, env: {}, log: (l) => logs.push(l) });
  return rt;
}

function thrown(fn: () => unknown): AirlockError {
  try {
    fn();
  } catch (e) {
    if (e instanceof AirlockError) return e;
    throw e;
  }
  throw new Error("expected a throw");
}

/** Tool results of a session, in order, parsed. */
async function toolResults(r: Runtime, sessionId: string): Promise<any[]> {
  return (await r.store.listMessages(sessionId))
    .filter((m) => m.role === "tool")
    .map((m) => JSON.parse(m.content));
}

const SCRIPT = `
turns:
  - tool_calls: [{ name: developer__shell, arguments: { command: "env echo ok direct" } }]
  - tool_calls: [{ name: developer__shell, arguments: { command: "env echo other" } }]
  - tool_calls: [{ name: developer__shell, arguments: { command: "env echo ok && rm -f notes.txt" } }]
  - tool_calls:
      - name: code_execution__execute
        arguments:
          code: |
            const out = {};
            try { out.shell = (await tools.developer__shell({ command: "env echo ok script" })).stdout; } catch (e) { out.shell = "refused " + e.code; }
            try { out.read = (await tools.developer__read_file({ path: "secret.txt" })).content; } catch (e) { out.read = "refused " + e.code + " " + e.message; }
            return out;
  - tool_calls: [{ name: subagent__spawn, arguments: { instructions: "work" } }]
  - text: done
subagents:
  - turns:
      - tool_calls: [{ name: developer__shell, arguments: { command: "env echo ok child" } }]
      - tool_calls: [{ name: developer__read_file, arguments: { path: "secret.txt" } }]
      - text: child done
`;

describe("rules apply to every call at every depth", () => {
  test("direct, from a script and from a subagent: allow answers smart mode's ask, deny refuses naming the rule", async () => {
    const d = setup("depth", { data: { "turns.yaml": SCRIPT }, ws: { "secret.txt": "s3cret", "notes.txt": "keep" } });
    const r = await runtime(d, {
      provider: { name: "scripted", script: "turns.yaml" },
      mode: "smart",
      // `env echo` is not a known read-only command (wrappers never are), so only the allow rule lets it run in smart mode
      permissions: { allow: ["Bash(env echo ok:*)"], deny: ["Read(./secret.txt)", "Bash(rm:*)"] },
    });
    const s = await r.createSession({ headless: true });
    const res = await r.runTurn(s.id, "go");
    expect(res.status).toBe("completed");
    const [direct, other, compound, script, spawn] = await toolResults(r, s.id);
    expect(direct.stdout).toContain("ok direct");
    // no rule: smart mode's ask stands, and nobody can answer headless
    expect(other.error.code).toBe("no_human_surface");
    // the allow does not cover `&& rm`, and the deny rule catches it
    expect(compound.error).toMatchObject({ code: "denied", inspector: "rule" });
    expect(compound.error.message).toContain("Bash(rm:*)");
    expect(script.value.shell).toContain("ok script");
    expect(script.value.read).toContain("refused denied");
    expect(script.value.read).toContain("Read(./secret.txt)");
    expect(spawn).toMatchObject({ status: "completed", answer: "child done" });
    const child = (await r.store.listSessions({ parent: s.id }))[0]!;
    const [childShell, childRead] = await toolResults(r, child.id);
    expect(childShell.stdout).toContain("ok child");
    expect(childRead.error).toMatchObject({ code: "denied", inspector: "rule" });
    expect(childRead.error.message).toContain("Read(./secret.txt)");
  });
});

describe("a hook's explicit allow answers the mode's ask, never a rule's ask", () => {
  test("smart mode, headless, a hook that allows: the mode's ask is answered; an ask rule still asks", async () => {
    const turns = stringify({
      turns: [
        { tool_calls: [{ name: "developer__shell", arguments: { command: "env echo hooked" } }] }, // not a known read-only command: smart mode asks
        { tool_calls: [{ name: "developer__shell", arguments: { command: "git push origin main" } }] },
        { text: "done" },
      ],
    });
    const d = setup("hook-allow", { data: { "turns.yaml": turns } });
    const r = await runtime(d, {
      provider: { name: "scripted", script: "turns.yaml" },
      mode: "smart",
      hooks: { PreToolUse: [{ matcher: "*", hooks: [{ type: "command", command: join(import.meta.dir, "..", "fixtures", "hooks", "allow.sh"), timeout: 10 }] }] },
      permissions: { ask: ["Bash(git push:*)"] },
    });
    const s = await r.createSession({ headless: true });
    expect((await r.runTurn(s.id, "go")).status).not.toBe("failed");
    const [hooked, push] = await toolResults(r, s.id);
    expect(hooked.stdout).toContain("hooked");
    expect(push.error).toMatchObject({ code: "no_human_surface", inspector: "rule" });
    expect(push.error.message).toContain("Bash(git push:*)");
  });
});

describe("rules are checked at start", () => {
  test("a misspelt tool name is config_invalid naming the rule, with a suggestion", () => {
    const d = setup("typo");
    const e = thrown(() => runtime(d, { permissions: { deny: ["Raed(./.env)"] } }));
    expect(e.code).toBe("config_invalid");
    expect(e.message).toContain('permissions.deny: "Raed(./.env)"');
    expect(e.message).toContain("did you mean Read?");
  });

  test("an airlock tool name that does not exist gets the registry's suggestion", () => {
    const d = setup("typo2");
    const e = thrown(() => runtime(d, { permissions: { allow: ["developer__shel(git status)"] } }));
    expect(e.code).toBe("config_invalid");
    expect(e.message).toContain('permissions.allow: "developer__shel(git status)"');
    expect(e.message).toContain("did you mean developer__shell?");
  });

  test("an MCP rule naming no configured server is config_invalid", () => {
    const d = setup("mcp");
    const e = thrown(() => runtime(d, { permissions: { allow: ["mcp__github"] } }));
    expect(e.code).toBe("config_invalid");
    expect(e.message).toContain('no MCP server named "github"');
  });

  test("permissions.tests: passing cases start; failing cases are listed, each, in one config_invalid", () => {
    const tests = [
      { call: { tool: "developer__shell", args: { command: "npm test" } }, expect: "allow" },
      { call: { tool: "developer__shell", args: { command: "npm test && curl x | sh" } }, expect: "ask" },
      { call: { tool: "developer__read_file", args: { path: ".env" } }, expect: "deny" },
      { call: { tool: "developer__list_dir", args: { path: "." } }, expect: "allow" },
    ];
    const permissions = { allow: ["Bash(npm test)"], deny: ["Read(.env)"] };
    runtime(setup("tests-ok"), { mode: "smart", permissions: { ...permissions, tests } });
    void rt?.close();
    rt = undefined;
    const failing = [...tests, { call: { tool: "developer__shell", args: { command: "npm test" } }, expect: "deny" }, { call: { tool: "developer__shell", args: { command: "make" } }, expect: "allow" }];
    const e = thrown(() => runtime(setup("tests-bad"), { mode: "smart", permissions: { ...permissions, tests: failing } }));
    expect(e.code).toBe("config_invalid");
    expect(e.message).toContain("2 permissions test case(s) failed");
    expect(e.message).toContain('permissions.tests[4]: developer__shell {"command":"npm test"}: expected deny, got allow');
    expect(e.message).toContain('permissions.tests[5]: developer__shell {"command":"make"}: expected allow, got ask ([mode]');
  });

  test("a failing permissions.tests case stops `airlock run` with exit 2", async () => {
    const d = setup("cli");
    const yaml = stringify({
      provider: { name: "scripted", script: "turns.yaml" },
      permissions: { allow: ["Bash(npm test)"], tests: [{ call: { tool: "developer__shell", args: { command: "npm test && rm -rf x" } }, expect: "allow" }] },
    });
    writeFileSync(join(d.data, "airlock.yaml"), yaml);
    writeFileSync(join(d.data, "turns.yaml"), "turns:\n  - text: hi\n");
    const p = Bun.spawn([process.execPath, MAIN, "run", "hello", "--config", join(d.data, "airlock.yaml"), "--data-dir", d.data], {
      cwd: d.ws,
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
      env: { ...process.env, AIRLOCK_HOME: "" },
    });
    const [stderr, code] = await Promise.all([new Response(p.stderr).text(), p.exited]);
    expect(code).toBe(2);
    expect(stderr).toContain("config_invalid");
    expect(stderr).toContain("permissions.tests[0]");
  });
});

describe("import_claude_settings", () => {
  test("reads the permissions of ~/.claude/settings.json and the workspace's .claude/settings(.local).json — a project file's allow rules never — and lists the rest once", async () => {
    const settings = {
      permissions: {
        allow: ["Bash(npm run test:*)", "Read(/docs/**)", "WebFetch(domain:example.com)", "Bash(echo imported:*)"],
        deny: ["Read(./.env)"],
        defaultMode: "acceptEdits",
      },
      env: { FOO: "1" },
      hooks: {},
    };
    const d = setup("import", {
      data: {
        "turns.yaml": stringify({
          turns: [
            { tool_calls: [{ name: "developer__read_file", arguments: { path: ".env" } }] },
            { tool_calls: [{ name: "developer__shell", arguments: { command: "env echo imported" } }] },
            { tool_calls: [{ name: "developer__shell", arguments: { command: "npm run test:unit" } }] },
            { text: "done" },
          ],
        }),
      },
      ws: {
        ".claude/settings.json": JSON.stringify(settings),
        ".claude/settings.local.json": JSON.stringify({ permissions: { ask: ["Bash(git push:*)"] } }),
        ".env": "X=1",
        "docs/a.md": "# a",
      },
    });
    // the user's own settings: a fixture home (HOME is read when the runtime starts)
    const home = join(dir, "import", "home");
    mkdirSync(join(home, ".claude"), { recursive: true });
    writeFileSync(
      join(home, ".claude", "settings.json"),
      JSON.stringify({ permissions: { allow: ["Bash(env echo imported:*)"], deny: ["Read(~/.aws/**)", "Edit(/agents/**)"] }, model: "x" }),
    );
    const logs: string[] = [];
    const saved = process.env.HOME;
    process.env.HOME = home;
    let r: Runtime;
    try {
      r = await runtime(d, { provider: { name: "scripted", script: "turns.yaml" }, mode: "smart", permissions: { import_claude_settings: true, allow: ["Bash(echo hi)"] } }, logs);
    } finally {
      process.env.HOME = saved;
    }
    const lines = logs.filter((l) => l.includes("permission rule"));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain("imported 5 permission rule(s)");
    // a project file's allow rules are listed as not imported: the model can write the workspace
    expect(lines[0]).toContain(`${join(d.ws, ".claude", "settings.json")}: permissions.allow "Bash(npm run test:*)" (a project file's allow rules are not imported`);
    expect(lines[0]).toContain(`${join(home, ".claude", "settings.json")}: model (not read)`);
    expect(lines[0]).toContain(`${join(d.ws, ".claude", "settings.json")}: env (not read)`);
    expect(lines[0]).toContain("permissions.defaultMode (not read)");
    expect(lines[0]).toContain("WebFetch(domain:example.com)");
    // `/docs/**` in a project settings file is relative to the project (the workspace)
    expect(r.config.permissions).toMatchObject({
      allow: ["Bash(echo hi)", "Bash(env echo imported:*)"],
      // user settings first (Claude Code's order); `/agents/**` there is relative to ~/.claude
      deny: ["Read(~/.aws/**)", `Edit(/${home}/.claude/agents/**)`, "Read(./.env)"],
      ask: ["Bash(git push:*)"],
    });
    // the imported rules judge calls: the project's deny refuses .env, the user's allow answers smart mode's
    // ask, the project's allow does not (smart mode still asks, and nobody can answer headless)
    const s = await r.createSession({ headless: true });
    expect((await r.runTurn(s.id, "go")).status).toBe("completed");
    const [env, shell, npm] = await toolResults(r, s.id);
    expect(env.error).toMatchObject({ code: "denied", inspector: "rule" });
    expect(env.error.message).toContain("Read(./.env)");
    expect(shell.stdout).toContain("imported");
    expect(npm.error).toMatchObject({ code: "no_human_surface", inspector: "mode" });
  });

  test("off by default: the settings file is not read", async () => {
    const d = setup("import-off", { ws: { ".claude/settings.json": JSON.stringify({ permissions: { deny: ["Bash"] } }) } });
    const r = await runtime(d, {});
    expect(r.config.permissions.deny).toEqual([]);
  });

  test("a settings file that is not JSON is config_invalid naming it", () => {
    const d = setup("import-bad", { ws: { ".claude/settings.json": "{ nope" } });
    const e = thrown(() => runtime(d, { permissions: { import_claude_settings: true } }));
    expect(e.code).toBe("config_invalid");
    expect(e.message).toContain(join(d.ws, ".claude", "settings.json"));
  });
});
