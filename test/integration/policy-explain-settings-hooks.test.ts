/**
 * @module test/integration/policy-explain-settings-hooks
 * `airlock policy explain` judges what `airlock run` judges when `hooks.import_claude_settings` is on: the workspace's
 * own `.claude/settings.json` hooks count in a trusted folder (`airlock trust`), and in an untrusted one explain says
 * they are not run and how to trust the folder; the config's own hooks are still shown; a settings file that cannot be
 * read is `config_invalid`, as in run. `bun src/main.ts` as real subprocesses, HOME a temp folder, real hooks.
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { airlockWith, settingsHooksBase, type Ran } from "../settings-hooks-cli.ts";


const { base, home, dataDir: settingsDataDir } = settingsHooksBase("airlock-explain-settings-");

/** The config's own hook: answers nothing (exit 0, no output), so only the workspace's hook can deny. */
const CONFIG_HOOK = "cat >/dev/null; exit 0 # config-hook";

let n = 0;
/** A data dir whose airlock.yaml imports the settings hooks (plus `extra` YAML lines), and a scripted run that calls `ls`. */
const dataDir = (extra = ""): string => settingsDataDir(`data-${n++}`, "ls", extra);

/** A workspace whose `.claude/settings.json` has a `Bash` PreToolUse hook that denies: "ws hook says no". */
function workspace(name: string): string {
  const ws = join(base, name);
  mkdirSync(join(ws, ".claude"), { recursive: true });
  writeFileSync(
    join(ws, ".claude", "settings.json"),
    JSON.stringify({ hooks: { PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: 'cat >/dev/null; echo "ws hook says no" >&2; exit 2' }] }] } }),
  );
  return ws;
}

const airlock = (data: string, args: string[], cwd = base, homeDir = home): Promise<Ran> => airlockWith(homeDir, data, args, cwd);

interface Step {
  step: string;
  status: string;
  verdicts: { kind: string; inspector: string; reason?: string }[];
  hooks?: { command: string; timeout: number; source: string }[];
  note?: string;
  untrusted?: string[];
}

async function explainJson(data: string, ws: string, extra: string[] = []): Promise<{ code: number; decision: string; reason: string; hooks: Step; stderr: string }> {
  const r = await airlock(data, ["policy", "explain", "--tool", "developer__shell", "--args", '{"command":"ls"}', "--workspace", ws, "--json", ...extra]);
  let e: { decision: string; reason: string; steps: Step[] };
  try {
    e = JSON.parse(r.stdout);
  } catch {
    throw new Error(`not JSON on stdout (exit ${r.code}): ${r.stdout}\nstderr: ${r.stderr}`);
  }
  return { code: r.code, decision: e.decision, reason: e.reason, hooks: e.steps.find((s) => s.step === "hooks")!, stderr: r.stderr };
}

describe("airlock policy explain: the workspace's Claude Code settings hooks, as airlock run imports them", () => {
  test("a trusted folder: run refuses ls with the workspace's hook, and explain --run-hooks says deny (exit 1)", async () => {
    const data = dataDir();
    const ws = workspace("trusted");
    expect((await airlock(data, ["trust", ws])).code).toBe(0);

    // what run judges
    const run = await airlock(data, ["run", "go", "--headless", "--workspace", ws]);
    expect(run.stderr).toContain("developer__shell ls — denied: ws hook says no");

    // explain in the same workspace, named by --workspace …
    const j = await explainJson(data, ws, ["--run-hooks"]);
    expect(j.code).toBe(1);
    expect(j.decision).toBe("deny");
    expect(j.reason).toBe("ws hook says no");
    expect(j.hooks).toMatchObject({ status: "judged", verdicts: [{ kind: "deny", inspector: "hook" }] });
    expect(j.hooks.untrusted).toBeUndefined();
    // … and by the cwd, as run's default
    const t = await airlock(data, ["policy", "explain", "--tool", "developer__shell", "--args", '{"command":"ls"}', "--run-hooks"], ws);
    expect(t.code).toBe(1);
    expect(t.stdout).toMatch(/^3\. hooks: deny — ws hook says no \[hook .*\]$/m);
    expect(t.stdout).toMatch(/^decision: deny \[hook\] — ws hook says no$/m);

    // without --run-hooks it is listed (from the workspace's settings), not run, and left out of the decision
    const listed = await airlock(data, ["policy", "explain", "--tool", "developer__shell", "--args", '{"command":"ls"}', "--workspace", ws]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain("3. hooks: not run — pass --run-hooks to run them");
    expect(listed.stdout).toContain("would run: cat >/dev/null; echo \"ws hook says no\" >&2; exit 2 (timeout 60 s, from the workspace's .claude settings, confined to the sandbox policy)");
  });

  test("an untrusted folder: explain says its hooks are not run and how to trust it; decision as run's (allow, exit 0)", async () => {
    const data = dataDir();
    const ws = workspace("untrusted");
    const file = join(ws, ".claude", "settings.json");

    const run = await airlock(data, ["run", "go", "--headless", "--workspace", ws]);
    expect(run.code).toBe(0);
    expect(run.stderr).not.toContain("ws hook says no");

    for (const extra of [[], ["--run-hooks"]]) {
      const r = await explainJson(data, ws, extra);
      expect(r.code).toBe(0);
      expect(r.decision).toBe("allow");
      expect(r.hooks).toMatchObject({ status: "not_run", verdicts: [], hooks: [], untrusted: [file] });
      expect(r.hooks.note).toBe(`the hooks of ${file} are not run: ${ws} is not a trusted folder (to run them: airlock trust ${ws})`);
    }
    const text = await airlock(data, ["policy", "explain", "--tool", "developer__shell", "--args", '{"command":"ls"}', "--workspace", ws, "--run-hooks"]);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(`3. hooks: not run — the hooks of ${file} are not run: ${ws} is not a trusted folder (to run them: airlock trust ${ws})`);
    expect(text.stdout).not.toContain("no PreToolUse hook matches");
  });

  test("the config's own hooks are still shown, with the workspace's (trusted) or the untrusted note (untrusted)", async () => {
    const data = dataDir(`  PreToolUse: [{ matcher: Bash, hooks: [{ type: command, command: "${CONFIG_HOOK}" }] }]\n`);
    const untrustedWs = workspace("config-and-untrusted");
    const untrusted = await explainJson(data, untrustedWs);
    expect(untrusted.code).toBe(0);
    expect(untrusted.hooks.status).toBe("not_run");
    expect(untrusted.hooks.hooks).toEqual([{ command: CONFIG_HOOK, timeout: 60, source: "config" }]);
    expect(untrusted.hooks.note).toContain(`pass --run-hooks to run them; the hooks of ${join(untrustedWs, ".claude", "settings.json")} are not run`);
    expect(untrusted.hooks.note).toContain(`airlock trust ${untrustedWs}`);

    const trustedWs = workspace("config-and-trusted");
    expect((await airlock(data, ["trust", trustedWs])).code).toBe(0);
    const trusted = await explainJson(data, trustedWs, ["--run-hooks"]);
    expect(trusted.code).toBe(1);
    expect(trusted.hooks.hooks?.map((h) => h.source)).toEqual(["config", "project-settings"]);
    expect(trusted.hooks.verdicts.map((v) => v.kind).sort()).toEqual(["allow", "deny"]);
  });

  test("the user's ~/.claude/settings.json hooks count in any folder, trusted or not, as in run", async () => {
    const data = dataDir();
    const ws = workspace("user-hooks");
    const userHome = join(base, "home-with-hooks");
    mkdirSync(join(userHome, ".claude"), { recursive: true });
    const userHook = 'cat >/dev/null; echo "user hook says no" >&2; exit 2';
    writeFileSync(join(userHome, ".claude", "settings.json"), JSON.stringify({ hooks: { PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: userHook }] }] } }));
    const run = await airlock(data, ["run", "go", "--headless", "--workspace", ws], base, userHome);
    expect(run.stderr).toContain("developer__shell ls — denied: user hook says no");
    const r = await airlock(data, ["policy", "explain", "--tool", "developer__shell", "--args", '{"command":"ls"}', "--workspace", ws, "--run-hooks", "--json"], base, userHome);
    expect(r.code).toBe(1);
    const e = JSON.parse(r.stdout) as { reason: string; steps: Step[] };
    expect(e.reason).toBe("user hook says no");
    const hooks = e.steps.find((s) => s.step === "hooks")!;
    expect(hooks.hooks).toEqual([{ command: userHook, timeout: 60, source: "user-settings" }]);
    expect(hooks.untrusted).toEqual([join(ws, ".claude", "settings.json")]);
  });

  test("a workspace settings file that cannot be read is config_invalid (exit 2, nothing on stdout), trusted or not, as in run", async () => {
    const data = dataDir();
    const ws = join(base, "unreadable");
    // a folder where the settings file should be: not a regular file
    mkdirSync(join(ws, ".claude", "settings.json"), { recursive: true });
    for (const trusted of [false, true]) {
      if (trusted) expect((await airlock(data, ["trust", ws])).code).toBe(0);
      const r = await airlock(data, ["policy", "explain", "--tool", "developer__shell", "--args", '{"command":"ls"}', "--workspace", ws]);
      expect({ trusted, code: r.code, stdout: r.stdout }).toEqual({ trusted, code: 2, stdout: "" });
      expect(r.stderr).toStartWith("airlock: config_invalid: ");
      expect(r.stderr).toContain(join(ws, ".claude", "settings.json"));
      const run = await airlock(data, ["run", "go", "--headless", "--workspace", ws]);
      expect(run.stderr).toContain(join(ws, ".claude", "settings.json"));
      expect(run.stderr).toContain("config_invalid");
    }
  });
});
