/**
 * @module test/security/repository-metadata-scan-never-blocks.test
 * The repository-metadata scan before and after every workspace-write call (src/launcher/git-meta.ts)
 * never blocks `airlock serve`, and a tree too big to scan fails closed. Against a real `airlock serve`
 * over real HTTP (scripted provider; root and nobody):
 * - a call makes 100,000 folders and three repository-shaped folders nested in each other's
 *   `objects/`; the check after it peels one per pass (each pass walks the 100,000 folders again).
 *   Between the first HEAD quarantined and the last one, `/health` and `POST /cancel` answer: a scan
 *   that held the event loop could not answer between two renames of one synchronous check.
 * - with `sandbox_scan_max_folders: 500`, a call that makes 1,200 folders and plants two `.git`
 *   folders gets an INCOMPLETE warning; the next call is refused (`metadata_scan_limit`); once a person
 *   removed the folders, the next call first runs the owed check and quarantines both plants (none is
 *   taken for metadata "there before").
 */
import { afterEach, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { stringify } from "yaml";
import { dataDirFor, ramTempParent, sharedTempDir, testUsers } from "../as-user.ts";
import { spawnServe } from "../harness-serve.ts";
import { waitFor } from "../processes.ts";

const MAIN = path.join(import.meta.dir, "../../src/main.ts");
const PATH = "/usr/local/bin:/usr/bin:/bin";

/** A data dir and a workspace for `prefix`, on tmpfs where there is one (100,000 folders cost minutes on this disk, see {@link ramTempParent}). */
function dirs(prefix: string) {
  const base = sharedTempDir(prefix, ramTempParent());
  const data = path.join(base, "data");
  const ws = path.join(base, "ws");
  for (const d of [data, ws]) {
    mkdirSync(d);
    chmodSync(d, 0o777);
  }
  return { base, data, ws };
}

/** Servers started by a test: killed after it even when it failed midway. */
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
  async until(until: RegExp): Promise<void> {
    while (!until.test(this.text)) {
      const { value, done } = await this.reader.read();
      if (done) return;
      this.text += value;
    }
  }
}

/** True when `dir` holds a quarantined `HEAD` and no `HEAD` any more. */
function headQuarantined(dir: string): boolean {
  try {
    const names = readdirSync(dir);
    return !names.includes("HEAD") && names.some((n) => n.startsWith("HEAD.airlock-quarantine-"));
  } catch {
    return false;
  }
}

/** A server for `data`/`ws` as `prefix`'s user, with the scripted `turns`. */
async function serve(prefix: string[], data: string, ws: string, config: Record<string, unknown>, turns: unknown[]) {
  writeFileSync(path.join(data, "airlock.yaml"), stringify({ provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous", ...config }));
  writeFileSync(path.join(data, "turns.yaml"), stringify({ turns }));
  const sp = await spawnServe([...prefix, process.execPath, MAIN, "serve", "--port", "0", "--data-dir", data], { cwd: ws, env: { PATH, HOME: data, AIRLOCK_HOME: "" } });
  started.push(sp.proc);
  const token = readFileSync(path.join(data, "api-token"), "utf8").trim();
  const auth = { authorization: `Bearer ${token}`, "content-type": "application/json" };
  const created = (await (await fetch(`${sp.url}/sessions`, { method: "POST", headers: auth, body: JSON.stringify({ workspace: ws }) })).json()) as { id: string };
  const reply = async (message: string) => {
    const r = await within(fetch(`${sp.url}/sessions/${created.id}/reply`, { method: "POST", headers: auth, body: JSON.stringify({ message }) }), 60_000, "POST /reply");
    expect(r.status).toBe(200);
    return new SseText(r.body!);
  };
  return { sp, auth, id: created.id, reply };
}

const shell = (command: string) => ({ tool_calls: [{ name: "developer__shell", arguments: { command, timeout_s: 600 } }] });

for (const user of testUsers()) {
  describe(`the repository-metadata scan never blocks the server (airlock as ${user.name})`, () => {
    test("while the check after a call walks 100,000 folders the call made, /health and POST /cancel answer", async () => {
      const { data, ws } = dirs("airlock-scan-huge-");
      dataDirFor(data, user);
      writeFileSync(
        path.join(ws, "plant.py"),
        [
          "import os",
          "for i in range(100):",
          "    for j in range(1000):",
          "        os.makedirs(f'big/{i}/{j}')",
          "d = 'b1'",
          "for _ in range(3):",
          "    os.makedirs(d + '/refs')",
          "    os.makedirs(d + '/objects')",
          "    open(d + '/HE' + 'AD', 'w').write('ref: refs/heads/main\\n')",
          "    d = d + '/objects/b'",
          "",
        ].join("\n"),
      );
      const s = await serve(user.prefix, data, ws, {}, [shell("python3 plant.py"), { text: "done" }]);
      try {
        const seen = await s.reply("go");
        await within(seen.until(/event: tool_request/), 60_000, "the reply stream's tool_request");
        const b1 = path.join(ws, "b1");
        const b3 = path.join(b1, "objects", "b", "objects", "b");
        // The check after the call has quarantined b1's HEAD; b3's comes two passes (200,000 folders) later.
        await waitFor(() => headQuarantined(b1), "the first HEAD quarantined", 120_000, 5);
        const health = await within(fetch(`${s.sp.url}/health`), 60_000, "GET /health");
        expect(health.status).toBe(200);
        const cancel = await within(fetch(`${s.sp.url}/sessions/${s.id}/cancel`, { method: "POST", headers: s.auth }), 60_000, "POST /cancel");
        expect(cancel.status).toBe(200);
        // Both answered while the same check was still running: b3's HEAD is not quarantined yet.
        expect(readdirSync(b3)).toContain("HEAD");
        await within(seen.until(/event: turn_finished/), 120_000, "turn_finished");
        // The cancel did not cut the check short: the innermost repository is quarantined too.
        await waitFor(() => headQuarantined(b3), "the last HEAD quarantined", 120_000, 5);
        expect(headQuarantined(path.join(b1, "objects", "b"))).toBe(true);
      } finally {
        s.sp.proc.kill("SIGKILL");
        await s.sp.proc.exited;
        rmSync(path.join(ws, "big"), { recursive: true, force: true });
      }
    }, 300_000);

    test("a tree over sandbox_scan_max_folders: the call's check is INCOMPLETE, later calls are refused, and the owed check quarantines what was planted", async () => {
      const { data, ws } = dirs("airlock-scan-limit-");
      dataDirFor(data, user);
      writeFileSync(
        path.join(ws, "plant.py"),
        ["import os", "for b in ('big1', 'big2'):", "    for i in range(600):", "        os.makedirs(f'{b}/d{i}')", "    os.makedirs(b + '/x/.g' + 'it/hooks')", ""].join("\n"),
      );
      const s = await serve(user.prefix, data, ws, { sandbox_scan_max_folders: 500 }, [
        shell("python3 plant.py"),
        { text: "planted" },
        shell("echo next"),
        { text: "refused" },
        shell("echo again"),
        { text: "done" },
      ]);
      try {
        const first = await s.reply("go");
        await within(first.until(/event: turn_finished/), 120_000, "turn_finished (plant)");
        expect(first.text).toContain("INCOMPLETE");
        // Whichever of big1/ and big2/ the scan walked first used up its 500 folders: the other's .git was not checked.
        expect([existsSync(path.join(ws, "big1", "x", ".git")), existsSync(path.join(ws, "big2", "x", ".git"))]).toContain(true);

        const second = await s.reply("next");
        await within(second.until(/event: turn_finished/), 120_000, "turn_finished (refused)");
        expect(second.text).toContain("metadata_scan_limit");
        expect(second.text).not.toContain('next\\n"');

        // A person removes the folders; the planted .git folders stay.
        for (const b of ["big1", "big2"]) for (let i = 0; i < 600; i++) rmSync(path.join(ws, b, `d${i}`), { recursive: true });
        const third = await s.reply("again");
        await within(third.until(/event: turn_finished/), 120_000, "turn_finished (again)");
        expect(third.text).toContain("after an earlier call whose check was incomplete");
        expect(third.text).toContain("again");
        expect(existsSync(path.join(ws, "big1", "x", ".git"))).toBe(false);
        expect(existsSync(path.join(ws, "big2", "x", ".git"))).toBe(false);
      } finally {
        s.sp.proc.kill("SIGKILL");
        await s.sp.proc.exited;
      }
    }, 300_000);
  });
}
