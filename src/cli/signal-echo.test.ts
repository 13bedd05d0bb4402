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

describe("airlock serve: the same signal twice", () => {
  test("SIGTERM, SIGTERM 2 ms later: the shutdown completes (exit 0, WAL emptied, lock released)", async () => {
    const data = join(base, "data");
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
    await Bun.sleep(300); // Bun arms a process.on(signal) handler on a later tick: a signal at once would meet the default action
    p.kill("SIGTERM");
    await Bun.sleep(2);
    p.kill("SIGTERM");
    const drain = (async () => {
      let rest = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return rest;
        rest += new TextDecoder().decode(value);
      }
    })();
    const [rest, code] = await Promise.all([drain, p.exited]);
    expect({ code, signal: p.signalCode }).toEqual({ code: 0, signal: null });
    expect(rest).toContain("SIGTERM: stopping");
    expect(rest).not.toContain("SIGTERM again");
    expect(existsSync(join(data, "airlock.db"))).toBe(true);
    expect(existsSync(join(data, "airlock.db-wal"))).toBe(false);
    expect(existsSync(join(data, "serve.lock"))).toBe(false);
  }, 60_000);
});
