/**
 * Attack on the pool's poll of a script's port after a reply (src/script/pool.ts `POLL_MS`): a worker floods the port
 * with single calls while the host answers; the host takes some off the port by polling and the rest by the port's
 * event. Each call must be served exactly once, in the order sent, and the host's timers must keep turning.
 */
import { expect, test } from "bun:test";
import { ScriptPool } from "../../src/script/pool.ts";

const LIMITS = { cpuTimeoutMs: 5000, wallTimeoutMs: 4000, maxToolCalls: 100_000, maxLogBytes: 1 << 16, maxResultBytes: 1 << 20 };

test("a flood of calls on the port: each served once, in order; timers still turn", async () => {
  await using pool = new ScriptPool({ workers: 1, memoryMb: 64, stackKb: 512, workerUrl: new URL("../fixtures/hostile-script-worker.ts", import.meta.url).href });
  const seen: number[] = [];
  let last = performance.now();
  let worstGap = 0;
  let late = 0;
  const ticker = setInterval(() => {
    const now = performance.now();
    if (seen.length > 0 && seen.length < 3000) {
      worstGap = Math.max(worstGap, now - last);
      if (now - last > 20) late++;
    }
    last = now;
  }, 1);
  try {
    const r = await pool.run("flood", { ...LIMITS, wallTimeoutMs: 1500 }, async (_name, args) => {
      seen.push((args as { i: number }).i);
      return { ok: true, result: null };
    });
    expect(r.ok ? "ok" : r.error.code).toBe("script_timeout");
  } finally {
    clearInterval(ticker);
  }
  console.log("served", seen.length, "worst timer gap ms", worstGap.toFixed(2), "gaps over 20 ms", late);
  expect(seen).toEqual(Array.from({ length: 3000 }, (_, i) => i + 1));
  expect(worstGap).toBeLessThan(500); // loose: the machine is shared; a starved loop would show seconds
});

test("a flood of calls on the port cancelled at its first call: no later call is served, polled or not; the run ends cancelled", async () => {
  await using pool = new ScriptPool({ workers: 1, memoryMb: 64, stackKb: 512, workerUrl: new URL("../fixtures/hostile-script-worker.ts", import.meta.url).href });
  const ac = new AbortController();
  const seen: number[] = [];
  const r = await pool.run("flood", { ...LIMITS, signal: ac.signal }, async (_name, args) => {
    seen.push((args as { i: number }).i);
    ac.abort();
    return { ok: true, result: null };
  });
  expect(r.ok ? "ok" : r.error.code).toBe("cancelled");
  await new Promise((res) => setTimeout(res, 100));
  expect(seen).toEqual([1]);
});
