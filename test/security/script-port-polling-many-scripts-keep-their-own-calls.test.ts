/**
 * Attack on the pool's poll of a script's port after a reply (src/script/pool.ts `POLL_MS`, `CHAIN_MS`) with real
 * scripts: several run at once, each a tight loop of sequential calls, so each polls its own port after every reply.
 * Each script's calls reach only its own tool callback, in order; a script cancelled mid-run ends as `cancelled` and
 * no call of it is served after its run returned; the host's timers keep turning while they all run.
 */
import { expect, test } from "bun:test";
import { ScriptPool } from "../../src/script/pool.ts";
import type { ToolOutcome } from "../../src/script/protocol.ts";

const LIMITS = { cpuTimeoutMs: 20_000, wallTimeoutMs: 20_000, maxToolCalls: 100_000_000, maxLogBytes: 1 << 16, maxResultBytes: 1 << 20 };
const LOOP = (tag: string, n: number) =>
  `let i = 0; for (; i < ${n}; i++) { const v = await tools.echo({ tag: ${JSON.stringify(tag)}, i }); if (v.tag !== ${JSON.stringify(tag)} || v.i !== i) throw new Error("reply " + JSON.stringify(v) + " for call " + i); } return i;`;

test("many scripts polling at once: calls stay with their script, in order; a cancelled one serves nothing after it ended; timers turn", async () => {
  await using pool = new ScriptPool({ workers: 3, memoryMb: 64, stackKb: 512 });
  const afterEnd: string[] = [];
  const ended = new Set<string>();
  const tool = (tag: string) => {
    let next = 0;
    return async (name: string, args: unknown): Promise<ToolOutcome> => {
      const a = args as { tag: string; i: number };
      if (ended.has(tag)) afterEnd.push(`${tag}:${a.i}`);
      if (name !== "echo" || a.tag !== tag || a.i !== next) throw new Error(`script ${tag} got ${name} ${JSON.stringify(a)}, expected call ${next}`);
      next++;
      return { ok: true, result: a };
    };
  };
  expect(await pool.run("return 1", LIMITS, tool("warm"))).toMatchObject({ ok: true, value: 1 });
  let last = performance.now();
  let worstGap = 0;
  const ticker = setInterval(() => {
    const now = performance.now();
    worstGap = Math.max(worstGap, now - last);
    last = now;
  }, 2);
  const ac = new AbortController();
  const stop = setTimeout(() => ac.abort(), 200);
  const run = (tag: string, n: number, signal?: AbortSignal) =>
    pool.run(LOOP(tag, n), { ...LIMITS, signal }, tool(tag)).then((r) => {
      ended.add(tag);
      return r;
    });
  try {
    const [a, b, c, d] = await Promise.all([run("a", 4000), run("b", 4000), run("c", 1_000_000, ac.signal), run("d", 4000)]);
    expect(a).toMatchObject({ ok: true, value: 4000 });
    expect(b).toMatchObject({ ok: true, value: 4000 });
    expect(c).toMatchObject({ ok: false, error: { code: "cancelled" } });
    expect(d).toMatchObject({ ok: true, value: 4000 });
  } finally {
    clearInterval(ticker);
    clearTimeout(stop);
  }
  await new Promise((r) => setTimeout(r, 50));
  console.log("worst timer gap ms", worstGap.toFixed(2));
  expect(afterEnd).toEqual([]);
  expect(worstGap).toBeLessThan(500); // loose: the machine is shared; a starved loop would show seconds
});
