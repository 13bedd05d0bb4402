/**
 * @module test/security/data-dir-fifos-never-freeze
 * Files airlock reads from its data dir are opened without blocking, like the tokens and `config-cache.json`
 * (config/paths.ts `readRegularFile`): the data dir is writable by a hook (the config dir is often the data dir;
 * only the tokens, the database and the config cache are masked) and, in the case the token-owner check is for, by
 * another user. Two more reads there opened the path with a blocking `open(2)`, so a FIFO put there froze airlock
 * in `open(2)` for good — no writer ever comes:
 * - `bwrap-probe.json` (launcher/probe.ts, the bubblewrap probe cache): read by every runtime when it warms the
 *   launcher, so `airlock serve` stopped answering right after it said it listened (and `airlock run` hung);
 * - `serve.lock` (store/serve-lock.ts): `airlock serve` read it when it could not link its own, and never started;
 *   `airlock doctor` read it when the configured port was in use, and never finished.
 * Each case runs real processes; a 60 s guard kills (and fails) a hang.
 */
import { describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnServe } from "../harness-serve.ts";

const MAIN = join(import.meta.dir, "..", "..", "src", "main.ts");

function dataDir(extraYaml = ""): string {
  const dir = mkdtempSync(join(tmpdir(), "airlock-data-fifo-"));
  writeFileSync(join(dir, "airlock.yaml"), `mode: smart\nprovider: { name: scripted, script: turns.yaml }\n${extraYaml}`);
  writeFileSync(join(dir, "turns.yaml"), 'turns:\n  - text: "done"\n');
  return dir;
}

function fifo(path: string): void {
  expect(spawnSync("mkfifo", ["-m", "600", path]).status).toBe(0);
}

async function health(url: string, dir: string): Promise<number> {
  const token = readFileSync(join(dir, "api-token"), "utf8").trim();
  const res = await fetch(`${url}/health`, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(60_000) });
  return res.status;
}

/** `airlock serve` on `dir`, SIGKILLed by `timeout` after 60 s so that a hang before listening fails the test. */
function serve(dir: string) {
  return spawnServe(["timeout", "-s", "KILL", "60", process.execPath, MAIN, "serve", "--port", "0", "--data-dir", dir]);
}

/** Starts `airlock serve` on `dir`, runs `body` with its URL, then SIGKILLs it and removes `dir`. */
async function whileServing(dir: string, body: (url: string) => Promise<unknown>): Promise<void> {
  const sp = await serve(dir);
  try {
    await body(sp.url);
  } finally {
    // SIGTERM, which `timeout` passes on to the server (a SIGKILL would end `timeout` alone and leave the server running)
    sp.proc.kill("SIGTERM");
    await sp.proc.exited;
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("a FIFO in the data dir never freezes airlock", () => {
  test("bwrap-probe.json as a FIFO: airlock serve keeps answering", async () => {
    const dir = dataDir();
    fifo(join(dir, "bwrap-probe.json"));
    await whileServing(dir, async (url) => {
      // twice: the launcher is warmed off the path to the first request, so the second finds it done
      expect(await health(url, dir)).toBe(200);
      await Bun.sleep(500);
      expect(await health(url, dir)).toBe(200);
    });
  }, 120_000);

  test("serve.lock as a FIFO: airlock serve starts (an unreadable lock is set aside) and answers", async () => {
    const dir = dataDir();
    fifo(join(dir, "serve.lock"));
    await whileServing(dir, async (url) => expect(await health(url, dir)).toBe(200));
  }, 120_000);

  test("serve.lock as a FIFO while the configured port is in use: airlock doctor finishes and fails server_port", async () => {
    const busy = createServer();
    const port = await new Promise<number>((resolve) => busy.listen({ host: "127.0.0.1", port: 0 }, () => resolve((busy.address() as { port: number }).port)));
    const dir = dataDir(`server: { host: 127.0.0.1, port: ${port} }\n`);
    try {
      fifo(join(dir, "serve.lock"));
      const proc = Bun.spawn(["timeout", "-s", "KILL", "60", process.execPath, MAIN, "doctor", "--json", "--data-dir", dir], { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
      const [out, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
      expect(code).not.toBe(137);
      const check = (JSON.parse(out) as { checks: { name: string; status: string }[] }).checks.find((c) => c.name === "server_port");
      expect(check?.status).toBe("fail");
    } finally {
      await new Promise((r) => busy.close(r));
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

test("airlock.db as a FIFO: airlock serve stops at once with data_dir_unusable, never hangs", async () => {
  const dir = dataDir();
  try {
    fifo(join(dir, "airlock.db"));
    const proc = Bun.spawn(["timeout", "-s", "KILL", "60", process.execPath, MAIN, "serve", "--port", "0", "--data-dir", dir], { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    const [err, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited]);
    expect(code).not.toBe(137);
    expect(code).not.toBe(0);
    expect(err).toContain("data_dir_unusable");
    expect(err).toContain("not a regular file");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 120_000);
