/**
 * @module test/security/file-tools-never-block
 * File tools accept regular files only (folders for `list_dir`) and never block the server. Against a
 * real `airlock serve` over real HTTP (root and nobody): `mkfifo notes.txt`, then
 * `developer__read_file notes.txt` is refused as `not_regular_file` while `/health` and
 * `POST /sessions/:id/cancel` keep answering. Through a real headless `airlock run` (root and nobody):
 * FIFOs for read, write, edit and list, `/dev/zero`, `/dev/stdin`, a unix socket, a huge sparse file
 * (read capped). And the open itself: a link swapped in after the check (last component or a parent)
 * is refused, not followed.
 */
import { Database } from "bun:sqlite";
import { afterEach, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, readFileSync, rmSync, symlinkSync, truncateSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import path from "node:path";
import { stringify } from "yaml";
import { dataDirFor, sharedTempDir, testUsers } from "../as-user.ts";
import { spawnServe } from "../harness-serve.ts";

const MAIN = path.join(import.meta.dir, "../../src/main.ts");
const PATH = "/usr/local/bin:/usr/bin:/bin";

function dirs(prefix: string) {
  const base = sharedTempDir(prefix);
  const data = path.join(base, "data");
  const ws = path.join(base, "ws");
  for (const d of [data, ws]) {
    mkdirSync(d);
    chmodSync(d, 0o777);
  }
  return { base, data, ws };
}

function mkfifo(p: string): void {
  const r = spawnSync("mkfifo", ["-m", "0666", p]);
  if (r.status !== 0) throw new Error(`mkfifo failed: ${r.stderr}`);
}

/** Servers started by a test: killed after it even when it failed midway (a frozen server never exits on its own). */
const started: { kill(sig?: number | NodeJS.Signals): void }[] = [];
afterEach(() => {
  for (const p of started.splice(0)) p.kill("SIGKILL");
});

/** `p`, or a rejection naming `what` after `ms` milliseconds (a frozen server answers nothing). */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let t: ReturnType<typeof setTimeout>;
  return Promise.race([p, new Promise<T>((_, reject) => (t = setTimeout(() => reject(new Error(`no answer within ${ms} ms: ${what}`)), ms)))]).finally(() => clearTimeout(t));
}

/** An SSE response body read as text, up to a pattern at a time. */
class SseText {
  text = "";
  private readonly reader: { read(): Promise<{ value?: string; done: boolean }> };
  constructor(body: ReadableStream<Uint8Array>) {
    this.reader = body.pipeThrough(new TextDecoderStream() as unknown as TransformStream<Uint8Array, string>).getReader();
  }
  /** Reads until `until` matches the text so far, or the stream ends. */
  async until(until: RegExp): Promise<void> {
    while (!until.test(this.text)) {
      const { value, done } = await this.reader.read();
      if (done) return;
      this.text += value;
    }
  }
}

describe("openChecked: the path opened is the path checked", () => {
  test("a link swapped in for the last component, or for a parent, after the check is refused, not followed", async () => {
    const { openChecked } = await import("../../src/tool/files.ts");
    const { base } = dirs("airlock-swap-");
    const secret = path.join(base, "secret.txt");
    writeFileSync(secret, "needle-swap-secret");
    const target = path.join(base, "ws", "notes.txt");
    writeFileSync(target, "plain");
    // checked: ws/notes.txt, a regular file. Then swapped for a link to the secret.
    rmSync(target);
    symlinkSync(secret, target);
    await expect(openChecked(target, "notes.txt", "file")).rejects.toMatchObject({ code: "not_regular_file" });
    // checked: ws/sub/notes.txt; then `sub` becomes a link to another folder holding a notes.txt
    mkdirSync(path.join(base, "ws", "sub"));
    const other = path.join(base, "other");
    mkdirSync(other);
    writeFileSync(path.join(other, "notes.txt"), "needle-swap-secret");
    const checked = path.join(base, "ws", "sub", "notes.txt");
    rmSync(path.join(base, "ws", "sub"), { recursive: true });
    symlinkSync(other, path.join(base, "ws", "sub"));
    await expect(openChecked(checked, "sub/notes.txt", "file")).rejects.toMatchObject({ code: "not_regular_file" });
  });
});

for (const user of testUsers()) {
  describe(`as ${user.name}`, () => {
    test("airlock serve: read_file of a FIFO is refused; /health and POST /cancel answer meanwhile", async () => {
      const { data, ws } = dirs("airlock-fifo-serve-");
      dataDirFor(data, user);
      mkfifo(path.join(ws, "notes.txt"));
      writeFileSync(path.join(data, "airlock.yaml"), stringify({ provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous" }));
      writeFileSync(
        path.join(data, "turns.yaml"),
        stringify({ turns: [{ tool_calls: [{ name: "developer__read_file", arguments: { path: "notes.txt" } }] }, { text: "done" }] }),
      );
      const sp = await spawnServe([...user.prefix, process.execPath, MAIN, "serve", "--port", "0", "--data-dir", data], {
        cwd: ws,
        env: { PATH, HOME: data, AIRLOCK_HOME: "" },
      });
      started.push(sp.proc);
      try {
        const token = readFileSync(path.join(data, "api-token"), "utf8").trim();
        const auth = { authorization: `Bearer ${token}`, "content-type": "application/json" };
        const created = (await (await fetch(`${sp.url}/sessions`, { method: "POST", headers: auth, body: JSON.stringify({ workspace: ws }) })).json()) as { id: string };
        const reply = await within(fetch(`${sp.url}/sessions/${created.id}/reply`, { method: "POST", headers: auth, body: JSON.stringify({ message: "go" }) }), 20_000, "POST /reply");
        expect(reply.status).toBe(200);
        const seen = new SseText(reply.body!);
        // the call has started: from here on a blocked event loop would stop answering
        await within(seen.until(/event: tool_request/), 20_000, "the reply stream's tool_request");
        const health = await within(fetch(`${sp.url}/health`), 20_000, "GET /health");
        expect(health.status).toBe(200);
        const cancel = await within(fetch(`${sp.url}/sessions/${created.id}/cancel`, { method: "POST", headers: auth }), 20_000, "POST /cancel");
        expect(cancel.status).toBe(200);
        await within(seen.until(/event: turn_finished/), 20_000, "turn_finished");
        expect(seen.text).toContain("not_regular_file");
      } finally {
        sp.proc.kill("SIGKILL");
        await sp.proc.exited;
      }
    }, 90_000);

    test("airlock run: FIFOs, devices, sockets are refused for every file tool; a huge file is capped", async () => {
      const { data, ws } = dirs("airlock-fifo-run-");
      dataDirFor(data, user);
      mkfifo(path.join(ws, "fifo-read"));
      mkfifo(path.join(ws, "fifo-write"));
      mkfifo(path.join(ws, "fifo-edit"));
      mkfifo(path.join(ws, "fifo-list"));
      writeFileSync(path.join(ws, "huge.bin"), "");
      truncateSync(path.join(ws, "huge.bin"), 8 * 1024 * 1024 * 1024); // 8 GiB, sparse
      chmodSync(path.join(ws, "huge.bin"), 0o666);
      const sock = createServer(() => {});
      await new Promise<void>((r) => sock.listen(path.join(ws, "app.sock"), r));
      chmodSync(path.join(ws, "app.sock"), 0o777);
      const calls = [
        { name: "developer__read_file", arguments: { path: "fifo-read" } },
        { name: "developer__write_file", arguments: { path: "fifo-write", content: "x" } },
        { name: "developer__edit_file", arguments: { path: "fifo-edit", old_string: "a", new_string: "b" } },
        { name: "developer__list_dir", arguments: { path: "fifo-list" } },
        { name: "developer__read_file", arguments: { path: "/dev/zero" } },
        { name: "developer__read_file", arguments: { path: "/dev/stdin" } },
        { name: "developer__read_file", arguments: { path: "app.sock" } },
        { name: "developer__read_file", arguments: { path: "huge.bin" } },
      ];
      writeFileSync(
        path.join(data, "airlock.yaml"),
        stringify({ provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous", sandbox: "danger-full-access", limits: { max_output_bytes: 4096 } }),
      );
      writeFileSync(path.join(data, "turns.yaml"), stringify({ turns: [{ tool_calls: calls }, { text: "done" }] }));
      const p = Bun.spawn([...user.prefix, process.execPath, MAIN, "run", "go", "--headless", "--output-format", "json", "--data-dir", data], {
        cwd: ws,
        stdin: "pipe", // /dev/stdin: a pipe nobody writes to
        stdout: "pipe",
        stderr: "pipe",
        env: { PATH, HOME: data, AIRLOCK_HOME: "" },
      });
      let killed = false;
      const wall = setTimeout(() => {
        killed = true;
        p.kill("SIGKILL");
      }, 40_000);
      const [stdout, code] = await Promise.all([new Response(p.stdout).text(), p.exited]);
      clearTimeout(wall);
      sock.close();
      expect({ killed, code }).toEqual({ killed: false, code: 0 });
      expect(JSON.parse(stdout).status).toBe("completed");
      const db = new Database(path.join(data, "airlock.db"), { readonly: true });
      const msgs = db.query<{ content: string }, []>("SELECT content FROM messages WHERE role = 'tool' ORDER BY rowid").all().map((r) => JSON.parse(r.content));
      db.close();
      expect(msgs.length).toBe(calls.length);
      const codeOf = (m: any) => m?.error?.code ?? m?.code ?? (m?.ok === false ? m.error : undefined);
      const codes = msgs.slice(0, 7).map((m) => codeOf(m) ?? JSON.stringify(m).slice(0, 200));
      // /dev/stdin leads to /proc/self/fd/0, a pipe with no path: refused as missing, never read
      expect(codes).toEqual(["not_regular_file", "not_regular_file", "not_regular_file", "not_regular_file", "not_regular_file", codes[5] === "file_not_found" ? "file_not_found" : "not_regular_file", "not_regular_file"]);
      const huge = JSON.stringify(msgs[7]);
      expect(huge).toContain("truncated");
      expect(huge.length).toBeLessThan(64 * 1024);
    }, 60_000);
  });
}
