/**
 * @module test/security/file-tools-data-dir-hard-links
 * airlock's data dir is refused to the file tools outright (docs/security-model.md §3.1) — also through a
 * hard link. A link in the workspace (`ln data/approver-token notes.txt`, left by an earlier
 * `danger-full-access` session or a backup script) has an innocent name and real path, so the path checks
 * pass; but it is the token itself: `read_file` returned it and `write_file` would replace it with a value
 * the model knows. The tools compare the opened file's inode with the data dir's files. Through a real
 * `airlock run --headless` process in `autonomous` mode, as root and as nobody.
 */
import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { chownSync, linkSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { stringify } from "yaml";
import { sharedTempDir, testUsers } from "../as-user.ts";

const MAIN = path.join(import.meta.dir, "../../src/main.ts");
const TOKEN = "approver-needle-91b2";

function chownTree(p: string, uid: number): void {
  chownSync(p, uid, uid);
  for (const e of readdirSync(p, { withFileTypes: true })) {
    if (e.isDirectory()) chownTree(path.join(p, e.name), uid);
    else chownSync(path.join(p, e.name), uid, uid);
  }
}

for (const user of testUsers()) {
  describe(`file tools as ${user.name}`, () => {
    test("a hard link in the workspace to the approver token is refused data_dir_refused for read, edit and write; the token is unchanged", async () => {
      const base = sharedTempDir("airlock-dd-link-");
      const home = path.join(base, "home");
      const data = path.join(base, "data");
      const ws = path.join(base, "ws");
      for (const d of [home, data, ws]) mkdirSync(d);
      writeFileSync(path.join(data, "approver-token"), `${TOKEN}\n`, { mode: 0o600 });
      linkSync(path.join(data, "approver-token"), path.join(ws, "notes.txt"));
      writeFileSync(path.join(ws, "plain.txt"), "plain text\n");
      linkSync(path.join(ws, "plain.txt"), path.join(ws, "plain-link.txt")); // a hard link to an ordinary file is fine
      const calls = [
        { name: "developer__read_file", arguments: { path: "notes.txt" } },
        { name: "developer__edit_file", arguments: { path: "notes.txt", old_string: TOKEN, new_string: "mine" } },
        { name: "developer__write_file", arguments: { path: "notes.txt", content: "mine\n" } },
        { name: "developer__read_file", arguments: { path: "plain-link.txt" } },
      ];
      writeFileSync(path.join(data, "airlock.yaml"), stringify({ provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous", sandbox: "workspace-write" }));
      writeFileSync(path.join(data, "turns.yaml"), stringify({ turns: [{ tool_calls: calls }, { text: "done" }] }));
      if (user.uid !== (process.getuid?.() ?? -1)) chownTree(base, user.uid);

      const p = Bun.spawn([...user.prefix, process.execPath, MAIN, "run", "go", "--headless", "--output-format", "json", "--data-dir", data], {
        cwd: ws,
        stdin: "ignore",
        stdout: "pipe",
        stderr: "pipe",
        env: { PATH: process.env.PATH, HOME: home, AIRLOCK_HOME: "" },
      });
      const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
      expect({ code, stderr: code === 0 ? "" : stderr }).toEqual({ code: 0, stderr: "" });
      expect(JSON.parse(stdout).status).toBe("completed");
      const db = new Database(path.join(data, "airlock.db"), { readonly: true });
      const tool = db.query<{ content: string }, []>("SELECT content FROM messages WHERE role = 'tool' ORDER BY rowid").all().map((r) => JSON.parse(r.content));
      db.close();
      expect(tool.map((t) => t.error?.code ?? "ok")).toEqual(["data_dir_refused", "data_dir_refused", "data_dir_refused", "ok"]);
      expect(JSON.stringify(tool)).not.toContain(TOKEN);
      expect(tool[3].content).toBe("plain text\n");
      expect(readFileSync(path.join(data, "approver-token"), "utf8")).toBe(`${TOKEN}\n`);
    }, 60_000);
  });
}
