import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AirlockError } from "../errors.ts";
import { currentOwner } from "./owner.ts";
import { acquireServeLock, recordedServer, SERVE_LOCK_FILE } from "./serve-lock.ts";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
function dir(): string {
  const d = mkdtempSync(join(tmpdir(), "airlock-lock-"));
  dirs.push(d);
  return d;
}

describe("acquireServeLock", () => {
  test("a live holder is refused with data_dir_in_use naming its pid and URL; release frees the data dir", () => {
    const d = dir();
    const lock = acquireServeLock(d);
    lock.setUrl("http://127.0.0.1:7420");
    let err: unknown;
    try {
      acquireServeLock(d);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(AirlockError);
    expect((err as AirlockError).toJSON()).toMatchObject({ code: "data_dir_in_use", pid: process.pid, url: "http://127.0.0.1:7420" });
    expect((err as AirlockError).message).toContain(`pid ${process.pid}, listening on http://127.0.0.1:7420`);
    // The commands it suggests find the server through the data dir's serve.lock (no --url needed).
    expect((err as AirlockError).message).toContain(`talk to it (airlock actions list --data-dir ${d}, or its web console: airlock console --data-dir ${d}: they find its URL in ${join(d, SERVE_LOCK_FILE)})`);
    lock.release();
    expect(existsSync(join(d, SERVE_LOCK_FILE))).toBe(false);
    acquireServeLock(d).release();
  });

  test("a lock left by a gone process, by a reused pid (another start identity), or unreadable is taken over", () => {
    for (const left of [
      JSON.stringify({ pid: 2 ** 22 + 7, start: "x:1", url: null, started_at: "" }),
      JSON.stringify({ pid: process.pid, start: `${currentOwner().start}-other`, url: null, started_at: "" }),
      "{half a json",
    ]) {
      const d = dir();
      writeFileSync(join(d, SERVE_LOCK_FILE), left);
      const lock = acquireServeLock(d);
      expect(JSON.parse(readFileSync(join(d, SERVE_LOCK_FILE), "utf8"))).toMatchObject({ pid: process.pid, start: currentOwner().start });
      lock.release();
    }
  });
});

describe("recordedServer", () => {
  const KEY = "k".repeat(64);

  test("a signed lock of this process: starting until it records its URL, then listening there; a wildcard bind given as loopback", async () => {
    const d = dir();
    const lock = acquireServeLock(d);
    // this process listens on the port the lock records (recordedServer follows no URL its pid does not listen on)
    const listener = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") });
    const other = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") });
    const gone = other.port!;
    await other.stop(true);
    const P = String(listener.port);
    try {
      // unsigned: not trusted
      expect(recordedServer(d, KEY)).toMatchObject({ state: "none", why: expect.stringContaining("carries no MAC") });
      lock.sign(KEY);
      expect(recordedServer(d, KEY)).toEqual({ state: "starting", pid: process.pid, lockPath: join(d, SERVE_LOCK_FILE) });
      expect(recordedServer(d, "x".repeat(64))).toMatchObject({ state: "none", why: expect.stringContaining("does not match") });
      expect(recordedServer(d, null)).toMatchObject({ state: "none", why: expect.stringContaining("no usable approver token") });
      for (const [recorded, client] of [
        [`http://127.0.0.1:${P}`, `http://127.0.0.1:${P}`],
        [`http://0.0.0.0:${P}`, `http://127.0.0.1:${P}`],
        [`http://[::]:${P}`, `http://[::1]:${P}`],
        [`http://[::1]:${P}`, `http://[::1]:${P}`],
      ]) {
        lock.setUrl(recorded!);
        expect(recordedServer(d, KEY)).toEqual({ state: "listening", pid: process.pid, url: client!, lockPath: join(d, SERVE_LOCK_FILE) });
      }
      // a port this process does not listen on (a listener closed while the process lives on): not followed
      lock.setUrl(`http://127.0.0.1:${gone}`);
      expect(recordedServer(d, KEY)).toMatchObject({ state: "none", why: expect.stringContaining(`holds no listening socket on port ${gone}`) });
      for (const bad of ["https://127.0.0.1:7613", "http://127.0.0.1:7613/x", "http://u:p@127.0.0.1:7613", "http://127.0.0.1", "not a url"]) {
        lock.setUrl(bad);
        expect(recordedServer(d, KEY)).toMatchObject({ state: "none", why: expect.stringContaining("is not an http://HOST:PORT address") });
      }
    } finally {
      lock.release();
      await listener.stop(true);
    }
    expect(recordedServer(d, KEY)).toMatchObject({ state: "none", why: expect.stringContaining("no serve.lock") });
  });
});
