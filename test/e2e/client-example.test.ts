/**
 * examples/client.ts against the compiled binary: `dist/airlock serve` with the scripted provider, the
 * example (the typed client) starts a session, follows it on `events()`, answers the write's card, and
 * the turn completes with the file written.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { compiledBinary, REPO } from "../harness-binary.ts";
import { spawnServe } from "../harness-serve.ts";

const temps: string[] = [];
const procs: Subprocess[] = [];
afterAll(() => {
  for (const p of procs) p.kill("SIGKILL");
  for (const d of temps) rmSync(d, { recursive: true, force: true });
});
function temp(prefix: string, base = tmpdir()): string {
  const d = mkdtempSync(join(base, prefix));
  temps.push(d);
  return d;
}

test("examples/client.ts starts a session, follows it and answers its card against dist/airlock serve", async () => {
  const bin = await compiledBinary();
  const dataDir = temp("airlock-client-data-");
  const home = temp("airlock-client-home-", "/var/tmp");
  const workspace = temp("airlock-client-ws-", "/var/tmp");
  const configDir = temp("airlock-client-config-");
  writeFileSync(join(configDir, "turns.yaml"), `turns:\n  - tool_calls: [{ name: developer__write_file, arguments: { path: "hello.txt", content: "hello from the client" } }]\n  - text: "wrote hello.txt"\n`);
  writeFileSync(join(configDir, "airlock.yaml"), `provider:\n  name: scripted\n  script: turns.yaml\n`);
  const env = { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: home, LANG: "C.UTF-8" };
  const { proc, url } = await spawnServe([bin, "serve", "--port", "0", "--data-dir", dataDir, "--config", join(configDir, "airlock.yaml")], { cwd: home, env });
  procs.push(proc);

  const ex = Bun.spawn([process.execPath, join(REPO, "examples", "client.ts"), "write hello.txt"], {
    cwd: workspace,
    env: { ...env, AIRLOCK_URL: url, AIRLOCK_DATA_DIR: dataDir },
    stdout: "pipe",
    stderr: "pipe",
  });
  procs.push(ex);
  const [code, out, err] = await Promise.all([ex.exited, new Response(ex.stdout).text(), new Response(ex.stderr).text()]);
  expect(err).toBe("");
  expect(code).toBe(0);
  const lines = out.trim().split("\n");
  expect(lines[0]).toMatch(/^session ses_\S+, turn \S+$/);
  expect(lines.slice(1)).toEqual([
    expect.stringMatching(/^card: developer__write_file \{"path":"hello.txt",.*\} \(.+\)$/),
    "answered: allow_once",
    "developer__write_file: ok",
    "turn completed: wrote hello.txt",
  ]);
  expect(readFileSync(join(workspace, "hello.txt"), "utf8")).toBe("hello from the client");
}, 240_000);
