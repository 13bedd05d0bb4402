/**
 * @module test/security/sandbox-hides-data-dir-under-tmp
 * The data dir and the credential folders stay hidden from a confined process also when they live
 * under `/tmp` inside the workspace (`--data-dir /tmp/…` in CI, a container with HOME under `/tmp`,
 * `--workspace` the data dir itself). The launcher skipped hiding folders under `/tmp` ("the private
 * `/tmp` hides them"), but binding a workspace under `/tmp` re-exposed them: `find . -name '*-token'
 * -exec cat {} +` printed both tokens, and `workspace-write` could rewrite the approver token. Through a
 * real `airlock run --headless` in `autonomous` mode under `workspace-write`, as root and as nobody.
 */
import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { chownSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { stringify } from "yaml";
import { sharedTempDir, testUsers } from "../as-user.ts";

const MAIN = path.join(import.meta.dir, "../../src/main.ts");
const TOKEN = "approver-needle-0c4d";
const KEY = "ssh-needle-77aa";

function chownTree(p: string, uid: number): void {
  chownSync(p, uid, uid);
  for (const e of readdirSync(p, { withFileTypes: true })) {
    if (e.isDirectory()) chownTree(path.join(p, e.name), uid);
    else chownSync(path.join(p, e.name), uid, uid);
  }
}

/** Runs one headless shell call with the workspace `wsOf(base, data)`; returns the tool result and the approver token after the run. */
async function run(prefix: string[], uid: number, wsOf: (base: string, data: string) => string, command: string) {
  const base = sharedTempDir("airlock-tmp-hide-"); // under /tmp
  const data = path.join(base, "data");
  const home = path.join(base, "home");
  mkdirSync(data);
  mkdirSync(path.join(home, ".ssh"), { recursive: true });
  writeFileSync(path.join(home, ".ssh", "id_rsa"), `${KEY}\n`);
  writeFileSync(path.join(data, "approver-token"), `${TOKEN}\n`, { mode: 0o600 });
  const call = { name: "developer__shell", arguments: { command } };
  writeFileSync(path.join(data, "airlock.yaml"), stringify({ provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous", sandbox: "workspace-write" }));
  writeFileSync(path.join(data, "turns.yaml"), stringify({ turns: [{ tool_calls: [call] }, { text: "done" }] }));
  if (uid !== (process.getuid?.() ?? -1)) chownTree(base, uid);
  const ws = wsOf(base, data);
  const p = Bun.spawn([...prefix, process.execPath, MAIN, "run", "go", "--headless", "--output-format", "json", "--data-dir", data, "--workspace", ws], {
    cwd: ws,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: process.env.PATH, HOME: home, AIRLOCK_HOME: "" },
  });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  expect({ code, stderr: code === 0 ? "" : stderr }).toEqual({ code: 0, stderr: "" });
  const out = JSON.parse(stdout);
  expect(out.status).toBe("completed");
  expect(JSON.stringify(out.refused_calls)).toBe("[]");
  const db = new Database(path.join(data, "airlock.db"), { readonly: true });
  const tool = db.query<{ content: string }, []>("SELECT content FROM messages WHERE role = 'tool' ORDER BY rowid").all().map((r) => r.content);
  db.close();
  return { text: tool.join("\n"), token: readFileSync(path.join(data, "approver-token"), "utf8") };
}

for (const user of testUsers()) {
  describe(`workspace-write as ${user.name}, data dir and HOME under /tmp`, () => {
    test("a workspace holding the data dir and HOME: neither token nor SSH key is readable", async () => {
      const r = await run(user.prefix, user.uid, (base) => base, "find . -type f \\( -name '*-token' -o -name id_rsa \\) -exec cat {} +; echo searched");
      expect(r.text).toContain("searched");
      expect(r.text).not.toContain(TOKEN);
      expect(r.text).not.toContain(KEY);
    }, 60_000);

    test("the workspace is the data dir itself: the token is neither readable nor writable", async () => {
      const r = await run(user.prefix, user.uid, (_base, data) => data, "find \"$(pwd)\" -maxdepth 1 -name '*-token' -exec cat {} +; echo mine > approver-token; echo done");
      expect(r.text).toContain("done\\n");
      expect(r.text).not.toContain(TOKEN);
      expect(r.token).toBe(`${TOKEN}\n`);
    }, 60_000);
  });
}
