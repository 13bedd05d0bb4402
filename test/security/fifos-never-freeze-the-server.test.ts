/**
 * @module test/security/fifos-never-freeze-the-server
 * Files `airlock serve` reads on a request are opened without blocking (config/paths.ts `readRegularFile`): a FIFO
 * where a file is expected is refused as "not a regular file", and the server keeps answering. Two such reads
 * opened the path with a blocking `open(2)` on the serving thread, so one request froze every session until a
 * writer came — none ever does:
 * - a workspace's `.claude/settings.json` with `hooks.import_claude_settings` (read at `POST /sessions`, also for an
 *   untrusted workspace, to say its hooks are not run): the model can write that workspace, so a FIFO there is
 *   one `mkfifo` away for any tool call the gate allows;
 * - `POST /schedules` with a `recipe_path` and no `recipe_text`.
 * Each case: the server is a real `airlock serve` process; `GET /health` must answer after the request (60 s guard).
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { serveFixture } from "../harness-serve.ts";

const fx = serveFixture("airlock-fifo-serve-");
writeFileSync(join(fx.dir, "airlock.yaml"), "mode: smart\nhooks: { import_claude_settings: true }\nprovider: { name: scripted, script: turns.yaml }\n");
writeFileSync(join(fx.dir, "turns.yaml"), 'turns:\n  - text: "done"\n');

function fifo(path: string): void {
  expect(spawnSync("mkfifo", ["-m", "644", path]).status).toBe(0);
}

/** `method path` with the API token; aborted (and failed) after 60 s: the request itself must not hang. */
async function call(url: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const token = readFileSync(join(fx.dir, "api-token"), "utf8").trim();
  const res = await fetch(url + path, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(60_000),
  });
  return { status: res.status, json: await res.json() };
}

describe("a FIFO where the server reads a file is refused, and the server keeps answering", () => {
  test("a workspace's .claude/settings.json as a FIFO (an untrusted workspace: hooks only looked at)", async () => {
    const sp = await fx.serve();
    try {
      const ws = join(fx.dir, "ws-untrusted");
      mkdirSync(join(ws, ".claude"), { recursive: true });
      fifo(join(ws, ".claude", "settings.json"));
      const created = await call(sp.url, "POST", "/sessions", { workspace: ws });
      expect(created.status).toBe(201);
      // unreadable project settings of an untrusted workspace: refused as in a trusted one (config_invalid, said as a
      // warning; the session's tool calls are refused), not named as hooks that are not run
      const warnings = JSON.stringify(created.json.warnings ?? []);
      expect(warnings).toContain("settings.json: cannot be read for hooks.import_claude_settings");
      expect(warnings).toContain("is not a regular file");
      expect(warnings).not.toContain("NOT run");
      expect((await call(sp.url, "GET", "/health")).status).toBe(200);
    } finally {
      sp.proc.kill("SIGKILL");
      await sp.proc.exited;
    }
  }, 120_000);

  test("POST /schedules whose recipe_path is a FIFO: 400 recipe_invalid at once", async () => {
    const sp = await fx.serve();
    try {
      const recipe = join(fx.dir, "recipe-fifo.yaml");
      fifo(recipe);
      const r = await call(sp.url, "POST", "/schedules", { cron: "0 3 * * *", recipe_path: recipe });
      expect(r.status).toBe(400);
      expect(r.json.error).toBe("recipe_invalid");
      expect(r.json.message).toContain("not a regular file");
      expect((await call(sp.url, "GET", "/health")).status).toBe(200);
    } finally {
      sp.proc.kill("SIGKILL");
      await sp.proc.exited;
    }
  }, 120_000);
});
