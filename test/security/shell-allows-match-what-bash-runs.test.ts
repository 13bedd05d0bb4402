/**
 * @module test/security/shell-allows-match-what-bash-runs
 * What removes the mode's ask for a shell call — an allow rule (`Bash(ls:*)`) or a known read-only
 * command in smart mode — must see every command bash will run. Through the real runtime (scripted
 * provider, headless, real bwrap), each input below runs a second command bash sees and the matcher must
 * not miss: a `#` inside a word (bash keeps it as a character; a comment starts only at a word's start),
 * and an array subscript that evaluates, as arithmetic, text assigned by `${x:=…}` (which runs a command
 * substitution without `$(` appearing in the call). Each must fall to the mode's ask (refused headless)
 * and never run; the floor, too, must see the command after `a#`. And bash's spelling of a program:
 * a backslash-newline inside a word joins it (`tr\<newline>uncate` runs truncate, not tr) and `$"rm"`
 * is `rm` — the read-only list and deny rules must read the program bash runs. And a digit word with a
 * blank before a redirection (`rm -f tmp.txt 1 >/dev/null`) is an argument, not the redirection's fd:
 * the exact rule `Bash(rm -f tmp.txt)` must not cover it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { Config } from "../../src/config/schema.ts";
import { createRuntime } from "../../src/runtime.ts";
import { isKnownReadOnlyCommand } from "../../src/tool/read-only-commands.ts";
import { compileRules } from "../../src/gate/rules/index.ts";

let top: string;
beforeAll(() => {
  top = realpathSync(mkdtempSync(join(tmpdir(), "airlock-shell-allows-")));
});
afterAll(() => rmSync(top, { recursive: true, force: true }));

/** Runs one headless turn whose model makes `calls`, one per model turn; returns each call's tool result. */
async function run(name: string, config: Record<string, unknown>, calls: { name: string; arguments: unknown }[]) {
  const data = join(top, name, "data");
  const workspace = join(top, name, "ws");
  mkdirSync(data, { recursive: true });
  mkdirSync(workspace, { recursive: true });
  writeFileSync(join(data, "turns.yaml"), stringify({ turns: [...calls.map((c) => ({ tool_calls: [c] })), { text: "done" }] }));
  await using rt = await createRuntime({ config: Config.parse({ provider: { name: "scripted", script: "turns.yaml" }, ...config }), configDir: data, dataDir: data, workspace, env: {}, log: () => {} });
  const s = await rt.createSession({ headless: true });
  const res = await rt.runTurn(s.id, "go");
  expect(res.status).not.toBe("failed");
  return {
    workspace,
    results: (await rt.store.listMessages(s.id))
      .filter((m) => m.role === "tool")
      .map((m) => JSON.parse(m.content)),
  };
}

const shell = (command: string) => ({ name: "developer__shell", arguments: { command } });

/** `ls ${x:=a[\$\(touch arith.txt\)]} ${y[x]}`: bash runs `touch arith.txt` while expanding ls's words. */
const ARITH = "ls ${x:=a[\\$\\(touch\\ arith.txt\\)]} ${y[x]}";

describe("a # inside a word does not hide the commands after it", () => {
  test("the matchers see the command after `a#;`", () => {
    expect(isKnownReadOnlyCommand("ls a#; touch x")).toBe(false);
    expect(compileRules({ allow: ["Bash(ls:*)"], ask: [], deny: [] }).judge({ name: "developer__shell" }, { command: "ls a#; touch x" }, "/tmp")).toBeNull();
    // a comment still starts at a word's start
    expect(isKnownReadOnlyCommand("ls # ; touch x")).toBe(true);
  });

  test("smart mode and an allow rule: `ls a#; touch …` asks (refused headless) and touch never runs", async () => {
    const smart = await run("hash-smart", { mode: "smart" }, [shell("ls a#; touch smart.txt"), shell("ls a# b#")]);
    expect(smart.results[0].error).toMatchObject({ code: "no_human_surface", inspector: "mode" });
    expect(existsSync(join(smart.workspace, "smart.txt"))).toBe(false);
    // still a read-only command: runs (and fails to find the files) without asking
    expect(smart.results[1].error?.code).not.toBe("no_human_surface");

    const rule = await run("hash-rule", { mode: "approve", permissions: { allow: ["Bash(ls:*)"] } }, [shell("ls a#; touch rule.txt")]);
    expect(rule.results[0].error).toMatchObject({ code: "no_human_surface", inspector: "mode" });
    expect(existsSync(join(rule.workspace, "rule.txt"))).toBe(false);
  });

  test("the floor sees a credential read after `a#;` (allow Bash does not answer it)", async () => {
    const key = join(process.env.HOME || homedir(), ".ssh", "id_rsa");
    const { results } = await run("hash-floor", { mode: "smart", permissions: { allow: ["Bash"] } }, [shell(`echo a#; cat ${key}`)]);
    expect(results[0].error).toMatchObject({ code: "no_human_surface", inspector: "sensitive_ops" });
  });
});

describe("an allow rule never covers a ${…} or $[…] expansion", () => {
  test("the rule does not match an arithmetic-subscript injection", () => {
    expect(compileRules({ allow: ["Bash(ls:*)"], ask: [], deny: [] }).judge({ name: "developer__shell" }, { command: ARITH }, "/tmp")).toBeNull();
    expect(compileRules({ allow: ["Bash(ls:*)"], ask: [], deny: [] }).judge({ name: "developer__shell" }, { command: "ls $[a[1]]" }, "/tmp")).toBeNull();
  });

  test("Bash(ls:*): the injection asks (refused headless) and its command never runs", async () => {
    const { results, workspace } = await run("arith", { mode: "approve", permissions: { allow: ["Bash(ls:*)"] } }, [shell(ARITH), shell("ls -a")]);
    expect(results[0].error).toMatchObject({ code: "no_human_surface", inspector: "mode" });
    expect(existsSync(join(workspace, "arith.txt"))).toBe(false);
    expect(results[1].stdout).toContain("..");
  });
});

describe("the program is read as bash spells it: backslash-newline joins a word, $\"…\" is a string", () => {
  test("`tr\\<newline>uncate -s 0 f` is truncate: not read-only; `r\\<newline>m` and `$\"rm\"` hit Bash(rm:*)", () => {
    expect(isKnownReadOnlyCommand("tr\\\nuncate -s 0 f.txt")).toBe(false);
    expect(isKnownReadOnlyCommand("ls \\\n-la")).toBe(true);
    const rules = compileRules({ allow: ["Bash"], ask: [], deny: ["Bash(rm:*)"] });
    for (const command of ["r\\\nm x", '$"rm" x']) expect(rules.judge({ name: "developer__shell" }, { command }, "/tmp")).toEqual({ list: "deny", rule: "Bash(rm:*)" });
  });

  test("smart mode: `tr\\<newline>uncate -s 0 f.txt` asks (refused headless) and the file keeps its bytes", async () => {
    const data = join(top, "join", "data");
    const workspace = join(top, "join", "ws");
    mkdirSync(data, { recursive: true });
    mkdirSync(workspace, { recursive: true });
    writeFileSync(join(workspace, "f.txt"), "keep me\n");
    writeFileSync(join(data, "turns.yaml"), stringify({ turns: [{ tool_calls: [shell("tr\\\nuncate -s 0 f.txt")] }, { text: "done" }] }));
    await using rt = await createRuntime({ config: Config.parse({ provider: { name: "scripted", script: "turns.yaml" }, mode: "smart" }), configDir: data, dataDir: data, workspace, env: {}, log: () => {} });
    const s = await rt.createSession({ headless: true });
    await rt.runTurn(s.id, "go");
    const results = (await rt.store.listMessages(s.id))
      .filter((m) => m.role === "tool")
      .map((m) => JSON.parse(m.content));
    expect(results[0].error).toMatchObject({ code: "no_human_surface", inspector: "mode" });
    expect(readFileSync(join(workspace, "f.txt"), "utf8")).toBe("keep me\n");
  });
});

describe("a digit word before a redirection is an argument unless it touches the operator", () => {
  test("Bash(rm -f tmp.txt) covers `rm -f tmp.txt 2>/dev/null` but not `rm -f tmp.txt 1 >/dev/null`; the file 1 survives", async () => {
    const rules = compileRules({ allow: ["Bash(rm -f tmp.txt)"], ask: [], deny: [] });
    expect(rules.judge({ name: "developer__shell" }, { command: "rm -f tmp.txt 1 >/dev/null" }, "/tmp")).toBeNull();
    expect(rules.judge({ name: "developer__shell" }, { command: "rm -f tmp.txt 2>/dev/null" }, "/tmp")).toEqual({ list: "allow", rule: "Bash(rm -f tmp.txt)" });

    const data = join(top, "fd", "data");
    const workspace = join(top, "fd", "ws");
    mkdirSync(data, { recursive: true });
    mkdirSync(workspace, { recursive: true });
    writeFileSync(join(workspace, "1"), "keep\n");
    writeFileSync(join(workspace, "tmp.txt"), "x\n");
    writeFileSync(join(data, "turns.yaml"), stringify({ turns: [{ tool_calls: [shell("rm -f tmp.txt 1 >/dev/null")] }, { text: "done" }] }));
    const config = Config.parse({ provider: { name: "scripted", script: "turns.yaml" }, mode: "approve", permissions: { allow: ["Bash(rm -f tmp.txt)"] } });
    await using rt = await createRuntime({ config, configDir: data, dataDir: data, workspace, env: {}, log: () => {} });
    const s = await rt.createSession({ headless: true });
    await rt.runTurn(s.id, "go");
    const results = (await rt.store.listMessages(s.id))
      .filter((m) => m.role === "tool")
      .map((m) => JSON.parse(m.content));
    expect(results[0].error).toMatchObject({ code: "no_human_surface", inspector: "mode" });
    expect(existsSync(join(workspace, "1"))).toBe(true);
  });
});
