/**
 * @module test/security/file-tools-edit-huge-file
 * `developer__edit_file` read its whole file into airlock's memory (`readFile`, no cap), so a model in
 * `autonomous` mode could `truncate -s 1900M big.txt` (sparse: no disk used) and edit it, making the server
 * allocate the whole size: a crash or a stall of `airlock serve` for every session. Files over 16 MiB are
 * refused `payload_too_large` now, before anything is read; a small file still edits. Through a real
 * `airlock run --headless` (the sparse file here is 64 MiB, to keep the machine responsive), as root and nobody.
 */
import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { chownSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { stringify } from "yaml";
import { sharedTempDir, testUsers } from "../as-user.ts";

const MAIN = path.join(import.meta.dir, "../../src/main.ts");

function chownTree(p: string, uid: number): void {
  chownSync(p, uid, uid);
  for (const e of readdirSync(p, { withFileTypes: true })) {
    if (e.isDirectory()) chownTree(path.join(p, e.name), uid);
    else chownSync(path.join(p, e.name), uid, uid);
  }
}

for (const user of testUsers()) {
  describe(`developer__edit_file as ${user.name}`, () => {
    test("a sparse 64 MiB file is refused payload_too_large without being read; a small file edits", async () => {
      const base = sharedTempDir("airlock-edit-huge-");
      const home = path.join(base, "home");
      const data = path.join(base, "data");
      const ws = path.join(base, "ws");
      for (const d of [home, data, ws]) mkdirSync(d);
      writeFileSync(path.join(ws, "small.txt"), "hello world\n");
      const calls = [
        { name: "developer__shell", arguments: { command: "truncate -s 64M big.txt" } },
        { name: "developer__edit_file", arguments: { path: "big.txt", old_string: "x", new_string: "y" } },
        { name: "developer__edit_file", arguments: { path: "small.txt", old_string: "world", new_string: "there" } },
      ];
      writeFileSync(path.join(data, "airlock.yaml"), stringify({ provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous", sandbox: "workspace-write" }));
      writeFileSync(path.join(data, "turns.yaml"), stringify({ turns: [...calls.map((c) => ({ tool_calls: [c] })), { text: "done" }] }));
      if (user.uid !== (process.getuid?.() ?? -1)) chownTree(base, user.uid);
      const p = Bun.spawn([...user.prefix, process.execPath, MAIN, "run", "go", "--headless", "--output-format", "json", "--data-dir", data], {
        cwd: ws,
        stdin: "ignore",
        stdout: "pipe",
        stderr: "pipe",
        env: { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: home, AIRLOCK_HOME: "" },
      });
      const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
      expect({ code, stderr: code === 0 ? "" : stderr }).toEqual({ code: 0, stderr: "" });
      expect(JSON.parse(stdout).status).toBe("completed");
      const db = new Database(path.join(data, "airlock.db"), { readonly: true });
      const tool = db.query<{ content: string }, []>("SELECT content FROM messages WHERE role = 'tool' ORDER BY rowid").all().map((r) => JSON.parse(r.content));
      db.close();
      expect(tool.map((t) => t.error?.code ?? "ok")).toEqual(["ok", "payload_too_large", "ok"]);
      expect(readFileSync(path.join(ws, "small.txt"), "utf8")).toBe("hello there\n");
    }, 60_000);
  });
}
