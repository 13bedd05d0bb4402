/**
 * @module test/security/transcript-fifo-never-freezes
 * A session's transcript (`<dataDir>/transcripts/<id>.jsonl`) is handed to hooks (`transcript_path`), and a hook
 * can write the data dir: it can put a FIFO where the transcript was. Reading it was made non-blocking, but the
 * append opened the path `O_WRONLY` without `O_NONBLOCK`, and when the transcript was still empty (created for a
 * hook before the session's first message) a FIFO has the same size (0), so the next message's append opened the
 * FIFO and blocked in open(2) for good — on the thread that serves every session. Now the append's open never
 * blocks: no reader is `ENXIO`, a reader finds it no regular file; the failure is logged and the next use rebuilds
 * the file. The Transcripts run in a child process killed after 60 s, so a hang fails the test.
 */
import { expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const SRC = join(import.meta.dir, "..", "..", "src");

test("a FIFO put at an empty transcript's place never blocks the next append; the file is rebuilt", async () => {
  const dir = mkdtempSync(join(tmpdir(), "airlock-transcript-fifo-"));
  try {
    const script = join(dir, "child.ts");
    writeFileSync(
      script,
      `
import { readFileSync, statSync, unlinkSync } from "node:fs";
import { Store } from ${JSON.stringify(join(SRC, "store", "store.ts"))};
import { Transcripts } from ${JSON.stringify(join(SRC, "store", "transcript.ts"))};
const dataDir = ${JSON.stringify(join(dir, "data"))};
require("node:fs").mkdirSync(dataDir, { mode: 0o700 });
const store = await Store.open(dataDir + "/airlock.db");
const logs: string[] = [];
const t = new Transcripts({ dataDir, store, log: (l) => logs.push(l) });
t.ensureDir();
store.onMessagesAppended((m) => t.appended(m));
const s = await store.createSession({ workspace: "/w", mode: "smart", sandbox: "read-only", privacy: "public", headless: false, provider: "scripted" });
const file = await t.path(s.id); // what a hook is handed before the first message: an empty file
if (statSync(file).size !== 0) throw new Error("expected an empty transcript");
// what the hook does with it
unlinkSync(file);
if (Bun.spawnSync(["mkfifo", "-m", "600", file]).exitCode !== 0) throw new Error("mkfifo");
await store.appendMessage({ session_id: s.id, turn_id: null, role: "user", content: "hello" });
await t.settled();
const again = await t.path(s.id);
if (!statSync(again).isFile()) throw new Error("not rebuilt as a file");
process.stdout.write(JSON.stringify({ text: JSON.parse(readFileSync(again, "utf8")).message.content[0].text, logs }));
store.close?.();
process.exit(0);
`,
    );
    const proc = Bun.spawn(["timeout", "-s", "KILL", "60", process.execPath, script], { stdout: "pipe", stderr: "pipe", stdin: "ignore" });
    const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    expect(code, err).toBe(0);
    const r = JSON.parse(out) as { text: string; logs: string[] };
    expect(r.text).toBe("hello");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 120_000);
