/**
 * @module test/security/settings-file-errors-never-quote-the-file
 * airlock reads a trusted workspace's `.claude/settings.json` itself, as airlock, when a session tree first
 * needs its config (`hooks.import_claude_settings`). The model writes that workspace, so the file can be a
 * symlink to a secret the model's sandbox never shows — airlock's own approver token, say. A file that is
 * not JSON was reported with the JSON parser's message, which quotes the text it stopped at
 * (`Unexpected identifier "ab3f…"`: a whole hex token that starts with a letter), and that report went
 * wherever the session's errors go: the `POST /sessions` reply's `warnings`, the turn's error, `airlock run`'s
 * output and result object, and a scheduled run's `run_blocked` / `run_finished` notification (a webhook,
 * possibly a public ntfy topic). The report names the file and says it is not JSON, never its content. Real
 * runtime, as root and as nobody.
 */
import { afterAll, expect, test } from "bun:test";
import { chownSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { testUsers } from "../as-user.ts";
import { ownedDir, probeEnv, removeTempDirs, tempBase } from "./probe.ts";
import { startGateHarness } from "../integration/gate-helpers.ts";

afterAll(removeTempDirs);

const RUN = join(import.meta.dir, "fixtures", "settings-hook-run.ts");
// the shape of airlock's tokens (64 hex digits), one that starts with a letter
const SECRET = "ab3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5cab3f9a8b7c6d5e4f3a2b1c0d9e8f7a";

test("as a served session: neither the POST /sessions reply nor the turn's error quotes it", async () => {
  const h = await startGateHarness({
    config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous", hooks: { import_claude_settings: true } },
    files: { "turns.yaml": `turns:\n  - tool_calls: [{ name: developer__shell, arguments: { command: "true" } }]\n  - text: "done"\n`, "secret.txt": `${SECRET}\n` },
  });
  try {
    mkdirSync(join(h.workspace, ".claude"));
    symlinkSync(join(h.dataDir, "secret.txt"), join(h.workspace, ".claude", "settings.json")); // the model's `ln -s`
    h.rt.trust.add(h.workspace);
    const res = await h.api("/sessions", { method: "POST", json: { workspace: h.workspace, mode: "autonomous" } });
    const created = await res.text();
    expect(created).not.toContain(SECRET.slice(0, 16));
    const s = JSON.parse(created) as { id: string };
    // the turn cannot start (its config cannot be read): the error names the file, not its content
    let failed: unknown = null;
    try {
      await h.rt.runTurn(s.id, "go");
    } catch (e) {
      failed = e;
    }
    expect(failed).toMatchObject({ code: "config_invalid", message: expect.stringContaining("settings.json") });
    expect(String((failed as Error).message)).not.toContain(SECRET.slice(0, 16));
  } finally {
    await h.close();
  }
}, 60_000);

test("as airlock run, for every user: its output never quotes the linked file", async () => {
  for (const user of testUsers()) {
    const base = tempBase("airlock-settings-link-");
    const home = ownedDir(user, base, "home");
    const data = ownedDir(user, base, "data");
    const secret = join(data, "secret.txt");
    writeFileSync(secret, `${SECRET}\n`, { mode: 0o600 });
    chownSync(secret, user.uid, user.uid);
    const ws = ownedDir(user, base, "ws");
    mkdirSync(join(ws, ".claude"));
    chownSync(join(ws, ".claude"), user.uid, user.uid);
    symlinkSync(secret, join(ws, ".claude", "settings.json"));
    const proc = Bun.spawn([...user.prefix, process.execPath, RUN], { stdin: "pipe", stdout: "pipe", stderr: "pipe", env: probeEnv(home), cwd: "/" });
    proc.stdin.write(JSON.stringify({ dataDir: data, workspace: ws, trust: true, sandbox: "workspace-write" }));
    await proc.stdin.end();
    const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    expect({ user: user.name, named: (out + err).includes("settings.json") }).toEqual({ user: user.name, named: true });
    expect({ user: user.name, leaked: (out + err).includes(SECRET.slice(0, 16)) }).toEqual({ user: user.name, leaked: false });
  }
}, 120_000);
