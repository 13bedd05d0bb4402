/**
 * @module test/security/huge-settings-never-stall-the-server
 * A workspace's `.claude/settings.json` is read at `POST /sessions` (also for an untrusted workspace), on the thread
 * that serves every session, and the model writes that workspace: `truncate -s 768M .claude/settings.json` (a sparse
 * file: no disk used) made the server read 768 MiB of zeros and build a string of them — ~25 s frozen and over 1 GiB
 * of memory per request at this machine's load, every session stalled meanwhile (a larger one: minutes). Settings
 * files are read up to 1 MiB (config/claude-settings.ts); a larger one is refused before it is read, as unreadable.
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
