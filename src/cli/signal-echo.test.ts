/**
 * One Ctrl-C through `npm start` reaches `airlock serve` twice (the terminal's process group, then
 * scripts/start.ts forwarding it): the repeat must not count as "again: exit at once". Unit test of the
 * filter, then `bun src/main.ts serve` sent SIGTERM twice 2 ms apart: before the fix the second signal
 * killed it mid-shutdown, leaving airlock.db-wal and -shm behind (4 trials out of 4).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ECHO_WINDOW_MS, signalEchoFilter } from "./signal-echo.ts";

const MAIN = join(import.meta.dir, "..", "main.ts");
const base = mkdtempSync(join(tmpdir(), "airlock-signal-echo-"));
afterAll(() => rmSync(base, { recursive: true, force: true }));

describe("signalEchoFilter", () => {
  test("the first signal is not an echo; a repeat within the window is; a later one is not", () => {
    let t = 1000;
    const isEcho = signalEchoFilter(ECHO_WINDOW_MS, () => t);
    expect(isEcho()).toBe(false);
    t += 3;
    expect(isEcho()).toBe(true);
    t += ECHO_WINDOW_MS;
    expect(isEcho()).toBe(false);
  });
});

/** Starts `serve` on a fresh data dir, waits for its banner, then sends `signals` (ms to wait before each). */
async function stopServe(name: string, signals: { after: number; sig: "SIGTERM" | "SIGINT" }[]) {
  const data = join(base, name);
  const p = Bun.spawn([process.execPath, MAIN, "serve", "--port", "0", "--data-dir", data], {
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, AIRLOCK_HOME: "" },
  });
  const reader = p.stderr.getReader();
  let err = "";
  while (!err.includes("walkthrough:")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`serve ended before listening: ${err}`);
    err += new TextDecoder().decode(value);
  }
  for (const s of signals) {
    if (s.after > 0) await Bun.sleep(s.after);
    p.kill(s.sig);
  }
  const drain = (async () => {
    let rest = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return rest;
      rest += new TextDecoder().decode(value);
    }
  })();
  const [rest, code] = await Promise.all([drain, p.exited]);
  return { code, signal: p.signalCode, rest, data };
}

describe("airlock serve: stopping cleanly", () => {
  test("SIGTERM, SIGTERM 2 ms later: the shutdown completes (exit 0, WAL emptied, lock released)", async () => {
    const r = await stopServe("twice", [
      { after: 300, sig: "SIGTERM" },
      { after: 2, sig: "SIGTERM" },
    ]);
    expect({ code: r.code, signal: r.signal }).toEqual({ code: 0, signal: null });
    expect(r.rest).toContain("SIGTERM: stopping");
    expect(r.rest).not.toContain("SIGTERM again");
    expect(existsSync(join(r.data, "airlock.db"))).toBe(true);
    expect(existsSync(join(r.data, "airlock.db-wal"))).toBe(false);
    expect(existsSync(join(r.data, "serve.lock"))).toBe(false);
  }, 60_000);

  test("SIGINT the moment the banner is out (a supervisor stopping it at once): still a clean stop", async () => {
    for (let i = 0; i < 3; i++) {
      const r = await stopServe(`at-once-${i}`, [{ after: 0, sig: "SIGINT" }]);
      expect({ code: r.code, signal: r.signal }).toEqual({ code: 0, signal: null });
      expect(existsSync(join(r.data, "airlock.db-wal"))).toBe(false);
      expect(existsSync(join(r.data, "serve.lock"))).toBe(false);
    }
  }, 60_000);
});
