/**
 * @module test/integration/serve-url-discovery
 * The client commands find the live server of their data dir (SPEC §2): a real `airlock serve --port 0` from
 * source, then `actions list`, `schedule list`, `console`, `attach` and `doctor` as real processes with no `--url`
 * and no `$AIRLOCK_URL` reach it through the data dir's `serve.lock`, while the config's port has nothing on it. A
 * stale lock (its pid gone), a lock others may write, a symbolic link, and a lock without the MAC of what it records
 * under the data dir's approver token (what a hook or tool process, which can write the data dir but not read the
 * token, could plant) are not trusted: the commands then try the config's address (whose server must prove it holds
 * the data dir's API token first: `GET /server-proof`), say where the URL came from, and advise starting a server. While a live server holds the data dir, `server_unreachable` at another URL names the
 * live one, and while it is starting or stopping (a signed lock with no URL: it listens nowhere) no address gets the
 * token: `server_unreachable` says so; neither advises starting another.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { processStart } from "../../src/store/owner.ts";
import { serveLockMac } from "../../src/store/serve-lock.ts";
import { airlockClient, deadPort, MAIN, spawnServe, type ServeProcess } from "../harness-serve.ts";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A data dir (0700) whose config names the scripted provider and `server.port` = `port` (nothing listens there). */
function dataDir(port: number): string {
  const d = mkdtempSync(join(tmpdir(), "airlock-serveurl-"));
  dirs.push(d);
  writeFileSync(join(d, "airlock.yaml"), `provider: { name: scripted, script: turns.yaml }\nserver: { port: ${port} }\n`);
  writeFileSync(join(d, "turns.yaml"), 'turns:\n  - text: "done"\n');
  return d;
}

describe("a live airlock serve on --port 0", () => {
  let d: string;
  let configPort: number;
  let sp: ServeProcess;
  beforeAll(async () => {
    configPort = await deadPort();
    d = dataDir(configPort);
    sp = await spawnServe([process.execPath, MAIN, "serve", "--port", "0", "--data-dir", d]);
  });
  afterAll(async () => {
    sp.proc.kill("SIGKILL");
    await sp.proc.exited;
  });

  test("actions list, schedule list, console and attach without --url reach it (the config's port has nothing on it)", async () => {
    expect(new URL(sp.url).port).not.toBe(String(configPort));
    const actions = await airlockClient(d, ["actions", "list", "--json"]);
    expect(actions).toEqual({ code: 0, stdout: expect.stringContaining('"actions"'), stderr: "" });
    const schedules = await airlockClient(d, ["schedule", "list", "--json"]);
    expect(schedules).toEqual({ code: 0, stdout: expect.stringContaining('"schedules"'), stderr: "" });
    const link = await airlockClient(d, ["console"]);
    expect(link.code).toBe(0);
    expect(link.stdout).toStartWith(`${sp.url}/#t=`);
    expect(link.stderr).toBe(""); // it answered /health there
    // no session has a running turn: attach says so, naming the server it reached
    const attach = await airlockClient(d, ["attach", "--plain"]);
    expect(attach.code).toBe(1);
    expect(attach.stderr).toContain(`airlock: session_not_found: no root session on ${sp.url} has a running turn`);
  }, 60_000);

  test("doctor reports the live server's URL from the lock", async () => {
    const r = await airlockClient(d, ["doctor", "--json", "--timeout", "5"]);
    const check = (JSON.parse(r.stdout) as { checks: { name: string; status: string; message: string }[] }).checks.find((c) => c.name === "server_port");
    expect(check).toMatchObject({ status: "ok", message: expect.stringContaining(`this data dir's airlock serve (pid ${sp.proc.pid}) listens on ${sp.url}`) });
  }, 60_000);

  test("--url elsewhere: server_unreachable names the live server's URL and never advises starting another", async () => {
    const elsewhere = `http://127.0.0.1:${configPort}`;
    const r = await airlockClient(d, ["actions", "list", "--url", elsewhere]);
    expect(r.code).toBe(1);
    expect(r.stderr).toStartWith(`airlock: server_unreachable: cannot reach airlock serve at ${elsewhere}: the connection was refused, so nothing listens on that port.\n  The URL came from --url.\n`);
    expect(r.stderr).toContain(`The airlock serve of the data dir ${d} runs as pid ${sp.proc.pid} and listens on ${sp.url}`);
    expect(r.stderr).toContain(`Talk to it with --url ${sp.url}, or leave out --url`);
    expect(r.stderr).not.toContain("To start one");
    const link = await airlockClient(d, ["console", "--url", elsewhere]);
    expect(link.code).toBe(0);
    expect(link.stderr).toContain(`listens on ${sp.url}`);
    expect(link.stderr).not.toContain("To start one");
  }, 60_000);
});

describe("a serve.lock not to be trusted: the commands use the config's address", () => {
  // what a trusted lock would lead to: a server answering every request with an empty list
  let decoy: ReturnType<typeof Bun.serve>;
  beforeAll(() => {
    decoy = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => Response.json({ actions: [], schedules: [] }) });
  });
  afterAll(async () => {
    await decoy.stop(true);
  });

  const APPROVER = "b".repeat(64);

  /** A data dir with both tokens (0600), the config naming `port`. */
  function tokenDir(port: number): string {
    const d = dataDir(port);
    writeFileSync(join(d, "api-token"), `${"a".repeat(64)}\n`, { mode: 0o600 });
    writeFileSync(join(d, "approver-token"), `${APPROVER}\n`, { mode: 0o600 });
    return d;
  }

  /** A lock naming the decoy, with the MAC under `key` (default: the data dir's approver token; null: none). */
  function lockText(d: string, pid: number, start: string | null, key: string | null = APPROVER, url: string | null = `http://127.0.0.1:${decoy.port}`): string {
    const mac = key === null ? undefined : serveLockMac(key, realpathSync(d), pid, start, url);
    return JSON.stringify({ pid, start, url, started_at: new Date().toISOString(), schema: 14, mac });
  }

  function writeLock(d: string, pid: number, start: string | null, mode = 0o600, key: string | null = APPROVER): void {
    writeFileSync(join(d, "serve.lock"), lockText(d, pid, start, key), { mode });
    chmodSync(join(d, "serve.lock"), mode);
  }

  test("control: a lock of this user's, 0600, naming a live process is followed", async () => {
    const d = tokenDir(await deadPort());
    writeLock(d, process.pid, processStart(process.pid));
    expect(await airlockClient(d, ["actions", "list"])).toEqual({ code: 0, stdout: "no pending cards\n", stderr: "" });
  }, 60_000);

  test("a stale lock (its pid gone) is ignored", async () => {
    const port = await deadPort();
    const d = tokenDir(port);
    const gone = Bun.spawn(["true"]);
    await gone.exited;
    writeLock(d, gone.pid, "no-boot:1");
    const r = await airlockClient(d, ["actions", "list"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toStartWith(
      `airlock: server_unreachable: cannot reach airlock serve at http://127.0.0.1:${port}: the connection was refused, so nothing listens on that port.\n` +
        `  The URL came from server.host/server.port of the config ${join(d, "airlock.yaml")}, as the server ${join(d, "serve.lock")} records (pid ${gone.pid}) no longer runs: a stale lock.\n`,
    );
    expect(r.stderr).toContain(`To start one, run in another terminal: airlock serve --data-dir ${d}`);
  }, 60_000);

  test("a lock others may write is ignored", async () => {
    const port = await deadPort();
    const d = tokenDir(port);
    writeLock(d, process.pid, processStart(process.pid), 0o666);
    const r = await airlockClient(d, ["actions", "list"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`The URL came from server.host/server.port of the config ${join(d, "airlock.yaml")}, as ${join(d, "serve.lock")} is writable by other users (mode 0666), so it is not trusted.\n`);
    // the console link carries the token: printed only for a server that proved it is the data dir's (none answers)
    const link = await airlockClient(d, ["console"]);
    expect(link).toMatchObject({ code: 1, stdout: "" });
    expect(link.stderr).toStartWith(`airlock: server_unreachable: cannot reach airlock serve at http://127.0.0.1:${port}: the connection was refused, so nothing listens on that port.\n`);
  }, 60_000);

  test("a serve.lock that is a symbolic link is ignored", async () => {
    const d = tokenDir(await deadPort());
    const elsewhere = join(d, "lock-elsewhere");
    writeFileSync(elsewhere, lockText(d, process.pid, processStart(process.pid)), { mode: 0o600 });
    symlinkSync(elsewhere, join(d, "serve.lock"));
    const s = await airlockClient(d, ["schedule", "list"]);
    expect(s.code).toBe(1);
    expect(s.stderr).toContain(`The URL came from server.host/server.port of the config ${join(d, "airlock.yaml")}, as ${join(d, "serve.lock")} is a symbolic link, so it is not trusted.\n`);
  }, 60_000);

  test("a lock without the MAC under the data dir's approver token is ignored (a hook or tool process can write the data dir, not read the token)", async () => {
    const port = await deadPort();
    const d = tokenDir(port);
    for (const [key, why] of [
      ["c".repeat(64), "does not match the data dir's approver token"],
      [null, "carries no MAC"],
    ] as const) {
      writeLock(d, process.pid, processStart(process.pid), 0o600, key);
      const r = await airlockClient(d, ["actions", "list"]);
      expect(r.code).toBe(1);
      expect(r.stderr).toStartWith(`airlock: server_unreachable: cannot reach airlock serve at http://127.0.0.1:${port}: the connection was refused, so nothing listens on that port.\n  The URL came from server.host/server.port of the config ${join(d, "airlock.yaml")}, as `);
      expect(r.stderr).toContain(why);
      const link = await airlockClient(d, ["console"]);
      expect(link).toMatchObject({ code: 1, stdout: "" });
      expect(link.stderr).toContain(why);
    }
  }, 60_000);

  test("a signed lock of a server starting or stopping (no URL): no address gets the token, and no advice to start another", async () => {
    const port = await deadPort();
    const d = tokenDir(port);
    writeFileSync(join(d, "serve.lock"), lockText(d, process.pid, processStart(process.pid), APPROVER, null), { mode: 0o600 });
    // something answers at the config's address: it is not the server of the data dir, which listens nowhere now
    const seen: string[] = [];
    const other = Bun.serve({ hostname: "127.0.0.1", port, fetch: (req) => (seen.push(req.headers.get("authorization") ?? "-"), Response.json({ actions: [] })) });
    try {
      const r = await airlockClient(d, ["actions", "list"]);
      expect(r.code).toBe(1);
      expect(r.stderr).toStartWith(`airlock: server_unreachable: no URL to send the API token to: the airlock serve (pid ${process.pid}) holding the data dir ${d} has recorded none`);
      expect(r.stderr).not.toContain("Start it in another terminal");
      expect(r.stderr).not.toContain("To start one");
      expect((await airlockClient(d, ["console"])).stdout).toBe("");
      expect(seen).toEqual([]);
    } finally {
      await other.stop(true);
    }
  }, 60_000);
});
