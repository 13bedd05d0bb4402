/**
 * @module test/security/deny-rules-see-through-paths-and-wrapper-options
 * A deny (or ask) shell rule names a program (`Bash(rm:*)`); it must hit that program however the
 * command spells it: by a path (`/bin/rm`, `sudo /usr/bin/rm`), after a wrapper whose options take a
 * value (`sudo -u root rm`, `timeout -s KILL 5 rm`, `env -u X rm`, `exec -a name rm`), and as the script
 * of `bash -c -- '…'`. Judged by the rule set, and through the real runtime in autonomous mode with an
 * allow-everything rule, where the deny rule is the only thing between the model and the command.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { Config } from "../../src/config/schema.ts";
import { createRuntime } from "../../src/runtime.ts";
import { compileRules } from "../../src/gate/rules/index.ts";

let top: string;
beforeAll(() => {
  top = realpathSync(mkdtempSync(join(tmpdir(), "airlock-deny-spellings-")));
});
afterAll(() => rmSync(top, { recursive: true, force: true }));

const SHELL = { name: "developer__shell" };
const RULES = compileRules({ allow: ["Bash"], ask: ["Bash(git push:*)"], deny: ["Bash(rm:*)", "Bash(touch:*)"] });
const judge = (command: string) => RULES.judge(SHELL, { command }, "/tmp");

describe("a deny rule hits its program however the command names it", () => {
  test.each([
    ["/bin/rm -rf x", "Bash(rm:*)"],
    ["ls && /usr/bin/rm x", "Bash(rm:*)"],
    ["sudo /bin/rm x", "Bash(rm:*)"],
    ["sudo -u root rm x", "Bash(rm:*)"],
    ["timeout -s KILL 5 rm x", "Bash(rm:*)"],
    ["env -u HOME rm x", "Bash(rm:*)"],
    ["exec -a other rm x", "Bash(rm:*)"],
    ["sudo -u root nice -n 5 env A=1 /bin/rm x", "Bash(rm:*)"],
    ["bash -c -- 'rm x'", "Bash(rm:*)"],
  ])("%s → denied by %s", (command, rule) => {
    expect(judge(command)).toEqual({ list: "deny", rule });
  });

  test("an ask rule too: `/usr/bin/git push` asks; a program's name as an argument is not the program", () => {
    expect(judge("/usr/bin/git push origin main")).toEqual({ list: "ask", rule: "Bash(git push:*)" });
    for (const c of ["echo rm x", "git rm x", "ls -la", "sudo ls rm"]) expect(judge(c)).toEqual({ list: "allow", rule: "Bash" });
  });

  test("through the runtime (autonomous, allow Bash): `/usr/bin/touch` and `timeout -s KILL 5 touch` are denied and never run", async () => {
    const data = join(top, "data");
    const workspace = join(top, "ws");
    mkdirSync(data, { recursive: true });
    mkdirSync(workspace, { recursive: true });
    const calls = ["/usr/bin/touch path.txt", "timeout -s KILL 5 touch valued.txt", "echo fine"];
    writeFileSync(join(data, "turns.yaml"), stringify({ turns: [...calls.map((command) => ({ tool_calls: [{ name: "developer__shell", arguments: { command } }] })), { text: "done" }] }));
    const config = Config.parse({ provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous", permissions: { allow: ["Bash"], deny: ["Bash(touch:*)"] } });
    await using rt = await createRuntime({ config, configDir: data, dataDir: data, workspace, env: {}, log: () => {} });
    const s = await rt.createSession({ headless: true });
    await rt.runTurn(s.id, "go");
    const results = (await rt.store.listMessages(s.id))
      .filter((m) => m.role === "tool")
      .map((m) => JSON.parse(m.content));
    expect(results[0].error).toMatchObject({ code: "denied", inspector: "rule" });
    expect(results[1].error).toMatchObject({ code: "denied", inspector: "rule" });
    expect(results[2].stdout).toContain("fine");
    expect(existsSync(join(workspace, "path.txt"))).toBe(false);
    expect(existsSync(join(workspace, "valued.txt"))).toBe(false);
  });
});
