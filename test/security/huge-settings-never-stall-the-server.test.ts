/**
 * @module test/security/huge-settings-never-stall-the-server
 * A workspace's `.claude/settings.json` is read at `POST /sessions` (also for an untrusted workspace), on the thread
 * that serves every session, and the model writes that workspace: `truncate -s 768M .claude/settings.json` (a sparse
 * file: no disk used) made the server read 768 MiB of zeros and build a string of them — ~25 s frozen and over 1 GiB
 * of memory per request at this machine's load, every session stalled meanwhile (a larger one: minutes). Settings
 * files are read up to 1 MiB (config/claude-settings.ts); a larger one is refused before it is read, as unreadable.
 * The same for `POST /schedules` with a `recipe_path` (any caller with the API token, a tool process included, names
 * it): up to 4 MiB, else 400 `recipe_invalid` before the read.
 */
import { expect, test } from "bun:test";
import { mkdirSync, readFileSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { serveFixture } from "../harness-serve.ts";

const fx = serveFixture("airlock-huge-settings-");
writeFileSync(join(fx.dir, "airlock.yaml"), "mode: smart\nhooks: { import_claude_settings: true }\nprovider: { name: scripted, script: turns.yaml }\n");
writeFileSync(join(fx.dir, "turns.yaml"), 'turns:\n  - text: "done"\n');

test("a sparse 768 MiB .claude/settings.json of a trusted workspace is refused unread: POST /sessions says why, the session's tool calls are refused", async () => {
  const ws = join(fx.dir, "ws-huge");
  mkdirSync(join(ws, ".claude"), { recursive: true });
  const trust = Bun.spawnSync([process.execPath, fx.main, "trust", ws, "--data-dir", fx.dir], { stdin: "ignore" });
  expect(trust.exitCode).toBe(0);
  const sp = await fx.serve();
  try {
    const file = join(ws, ".claude", "settings.json");
    writeFileSync(file, "");
    truncateSync(file, 768 * 1024 * 1024);
    const token = readFileSync(join(fx.dir, "api-token"), "utf8").trim();
    const res = await fetch(`${sp.url}/sessions`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ workspace: ws }),
      signal: AbortSignal.timeout(110_000),
    });
    expect(res.status).toBe(201);
    const warnings = JSON.stringify(((await res.json()) as { warnings?: unknown }).warnings ?? []);
    // without the cap: read whole (tens of seconds, the server frozen), then "not JSON"
    expect(warnings).toContain("settings.json: cannot be read for hooks.import_claude_settings");
    expect(warnings).toContain("larger than 1048576 bytes");
    expect(warnings).toContain("every tool call of this session is refused");
  } finally {
    sp.proc.kill("SIGKILL");
    await sp.proc.exited;
  }
}, 120_000);

test("POST /schedules naming a sparse 768 MiB recipe_path: 400 recipe_invalid, refused unread", async () => {
  const recipe = join(fx.dir, "huge-recipe.yaml");
  writeFileSync(recipe, "");
  truncateSync(recipe, 768 * 1024 * 1024);
  const sp = await fx.serve();
  try {
    const token = readFileSync(join(fx.dir, "api-token"), "utf8").trim();
    const res = await fetch(`${sp.url}/schedules`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ cron: "0 3 * * *", recipe_path: recipe }),
      signal: AbortSignal.timeout(110_000),
    });
    const body = (await res.json()) as { error: string; message: string };
    expect(res.status).toBe(400);
    expect(body.error).toBe("recipe_invalid");
    expect(body.message).toContain("EFBIG: larger than 4194304 bytes");
  } finally {
    sp.proc.kill("SIGKILL");
    await sp.proc.exited;
  }
}, 120_000);
