/**
 * @module test/security/allow-rules-never-loosen
 * A permission rule's allow answers only the mode's ask. Through the real runtime (scripted provider,
 * headless, real bwrap): an allow rule covering every shell command and every read does not answer the
 * security floor's ask for a credential read, nor a hook's deny; and what an allow rule does not fully
 * cover — a substitution, a write redirection, a second command after `&&`, a symlink out of the allowed
 * folder — falls to the mode's ask (refused headless) and never runs.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { Config } from "../../src/config/schema.ts";
import { createRuntime } from "../../src/runtime.ts";

const HOOKS = join(import.meta.dir, "..", "fixtures", "hooks");
let top: string;
beforeAll(() => {
  top = realpathSync(mkdtempSync(join(tmpdir(), "airlock-allow-rules-")));
});
afterAll(() => rmSync(top, { recursive: true, force: true }));

/** Runs one headless turn whose model makes `calls`, one per model turn; returns each call's tool result. */
async function run(name: string, config: Record<string, unknown>, calls: { name: string; arguments: unknown }[], ws: Record<string, string> = {}, links: [string, string][] = []) {
  const data = join(top, name, "data");
  const workspace = join(top, name, "ws");
  mkdirSync(data, { recursive: true });
  mkdirSync(workspace, { recursive: true });
  for (const [f, text] of Object.entries(ws)) {
    mkdirSync(join(workspace, f, ".."), { recursive: true });
    writeFileSync(join(workspace, f), text);
  }
  for (const [target, link] of links) symlinkSync(target, join(workspace, link));
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

describe("an allow rule never answers the floor or a hook's deny", () => {
  test("allow Bash and Read: a credential read still needs a person (floor), refused headless", async () => {
    const key = join(process.env.HOME || homedir(), ".ssh", "id_rsa");
    const { results } = await run("floor", { mode: "smart", permissions: { allow: ["Bash", "Read"] } }, [
      { name: "developer__read_file", arguments: { path: key } },
      { name: "developer__shell", arguments: { command: `cat ${key}` } },
      { name: "developer__shell", arguments: { command: "echo allowed" } },
    ]);
    expect(results[0].error).toMatchObject({ code: "no_human_surface", inspector: "sensitive_ops" });
    expect(results[1].error).toMatchObject({ code: "no_human_surface", inspector: "sensitive_ops" });
    expect(results[2].stdout).toContain("allowed");
  });

  test("allow Bash: a hook's deny still refuses", async () => {
    const { results } = await run(
      "hook",
      { mode: "smart", permissions: { allow: ["Bash"] }, hooks: { PreToolUse: [{ matcher: "*", hooks: [{ type: "command", command: join(HOOKS, "bash-only-deny.sh"), timeout: 10 }] }] } },
      [{ name: "developer__shell", arguments: { command: "echo hi" } }],
    );
    expect(results[0].error).toMatchObject({ code: "denied", inspector: "hook" });
  });
});

describe("what an allow rule does not fully cover falls to the mode's ask", () => {
  test("substitution, write redirection, `&&` and a symlink out of the allowed folder never run", async () => {
    const { results, workspace } = await run(
      "evasions",
      { mode: "approve", permissions: { allow: ["Bash(echo:*)", "Read(./pub/**)"] } },
      [
        { name: "developer__shell", arguments: { command: "echo $(touch subst.txt)" } },
        { name: "developer__shell", arguments: { command: "echo x > redirect.txt" } },
        { name: "developer__shell", arguments: { command: "echo x && touch and.txt" } },
        { name: "developer__shell", arguments: { command: "echo `touch tick.txt`" } },
        { name: "developer__read_file", arguments: { path: "pub/link" } },
        { name: "developer__read_file", arguments: { path: "pub/../secret.txt" } },
        { name: "developer__read_file", arguments: { path: "pub/ok.txt" } },
        { name: "developer__shell", arguments: { command: "echo covered 2>&1" } },
      ],
      { "secret.txt": "s3cret", "pub/ok.txt": "fine" },
      [["../secret.txt", "pub/link"]],
    );
    for (const r of results.slice(0, 6)) expect(r.error).toMatchObject({ code: "no_human_surface", inspector: "mode" });
    for (const f of ["subst.txt", "redirect.txt", "and.txt", "tick.txt"]) expect(existsSync(join(workspace, f))).toBe(false);
    expect(results[6].content).toBe("fine");
    expect(results[7].stdout).toContain("covered");
  });
});
