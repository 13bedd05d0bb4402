/**
 * @module scripts/bench/bridge-thread
 * The worker's share of a sequential raw tool call, in one thread (prints JSON): a `ScriptRun` whose calls are
 * answered synchronously after each slice (no worker, no channel, no port), so what is measured is the guest's work
 * plus the host code around it in the worker (`vm.ts`, `direct.ts`, the bridge). With `--channel` each reply goes
 * the way it goes between the threads, in this one thread: the slice's calls as the worker's JSON batch, parsed as the
 * pool does, each answered (`{ok: true, result: args}`) through the script's channel (`HostChannel.send`, then
 * `WorkerChannel.wait`, which finds it at once): every byte of the bridge's work on both sides except the crossings
 * themselves and the pool's promise chain. Thread CPU per call (`CLOCK_THREAD_CPUTIME_ID`) over `--calls` calls,
 * `--rounds` rounds, this checkout and `AIRLOCK_BENCH_BASE` (optional) interleaved; the minimum and median of the rounds.
 * Usage: `[AIRLOCK_BENCH_BASE=/other/checkout] bun scripts/bench/bridge-thread.ts [--calls 10000] [--rounds 7] [--channel]`.
 */
import { resolve } from "node:path";
import { arg } from "./args.ts";
import { threadCpuNs } from "./thread-cpu.ts";

const CALLS = arg("--calls", 10_000);
const ROUNDS = arg("--rounds", 7);
const LIMITS = { cpuTimeoutMs: 60_000, wallTimeoutMs: 600_000, maxToolCalls: 10_000_000, maxLogBytes: 1 << 16, maxResultBytes: 1 << 20 };
const MEMORY = 64 * 2 ** 20;
const STACK = 512 * 1024;
const CHANNEL = process.argv.includes("--channel");

async function side(root: string): Promise<() => Promise<number>> {
  const { Instances } = (await import(resolve(root, "src/script/instances.ts"))) as typeof import("../../src/script/instances.ts");
  const { ScriptRun } = (await import(resolve(root, "src/script/vm.ts"))) as typeof import("../../src/script/vm.ts");
  const { HostChannel, WorkerChannel, newChannelBuffer } = (await import(resolve(root, "src/script/channel.ts"))) as typeof import("../../src/script/channel.ts");
  // the up message as that checkout encodes it: batch records (bridge.ts `batchRecord`), or a JSON array of messages before them
  const { batchRecord, parseBatch } = (await import(resolve(root, "src/script/bridge.ts"))) as Partial<typeof import("../../src/script/bridge.ts")>;
  type Call = { id: number; name: string; args: string };
  const up = batchRecord && parseBatch
    ? { encode: (calls: Call[]): string => "y" + calls.map((c) => batchRecord(c.id, JSON.stringify(c.name), c.args)).join(""), decode: (text: string): Call[] => parseBatch(text, 1) ?? [] }
    : {
        encode: (calls: Call[]): string => JSON.stringify([...calls.map((c) => ({ t: "call", ...c })), { t: "yield" }]),
        decode: (text: string): Call[] => (JSON.parse(text) as Array<Call & { t: string }>).filter((m) => m.t === "call" && typeof m.id === "number" && typeof m.name === "string" && typeof m.args === "string"),
      };
  const inst = await (await Instances.create(64)).take();
  const meter = new Float64Array(8);
  return async () => {
    const pending: Array<{ id: number; name: string; args: string }> = [];
    const run = new ScriptRun(inst.module, {
      code: `for (let i = 0; i < ${CALLS}; i++) await tools.echo({ i }); return 1;`,
      limits: LIMITS,
      memoryBytes: MEMORY,
      stackBytes: STACK,
      meter,
      memoryExhausted: () => false,
      post: (m) => pending.push({ id: m.id, name: m.name, args: m.args }),
    });
    const t0 = threadCpuNs();
    run.start();
    if (CHANNEL) {
      const buf = newChannelBuffer();
      const host = new HostChannel(buf);
      const worker = new WorkerChannel(buf);
      while (!run.finished && pending.length > 0) {
        // the worker's batch (worker.ts `flush`) and the pool's reading of it (pool.ts), then the reply (`serveCall`)
        const batch = up.encode(pending);
        pending.length = 0;
        for (const m of up.decode(batch)) host.send({ t: "reply", id: m.id, payload: JSON.stringify({ ok: true, result: JSON.parse(m.args) }) });
        const got = worker.wait(1000);
        if (got.t !== "messages") throw new Error(`the channel gave ${got.t}`);
        for (const m of got.msgs) if (m.t === "reply") run.reply(m.id, m.payload as never);
      }
      host.close();
    }
    while (!run.finished && pending.length > 0) {
      const c = pending.shift()!;
      run.reply(c.id, `{"ok":true,"result":${c.args}}`);
    }
    const ns = threadCpuNs() - t0;
    const o = await run.done;
    if (!o.ok) throw new Error(`bench script failed: ${JSON.stringify(o)}`);
    return ns / CALLS / 1000;
  };
}

const sides: Record<string, () => Promise<number>> = { this: await side(resolve(import.meta.dir, "../..")) };
if (process.env.AIRLOCK_BENCH_BASE) sides.base = await side(process.env.AIRLOCK_BENCH_BASE);
for (const f of Object.values(sides)) await f(); // warm
const us: Record<string, number[]> = Object.fromEntries(Object.keys(sides).map((k) => [k, []]));
for (let r = 0; r < ROUNDS; r++) for (const [k, f] of Object.entries(sides)) us[k]!.push(await f());
const r2 = (x: number): number => Math.round(x * 100) / 100;
const summary = Object.fromEntries(
  Object.entries(us).map(([k, v]) => {
    const s = [...v].sort((a, b) => a - b);
    return [k, { min_us: r2(s[0]!), median_us: r2(s[Math.floor(s.length / 2)]!), rounds: v.map(r2) }];
  }),
);
console.log(JSON.stringify({ calls: CALLS, channel: CHANNEL, load: Number((await Bun.file("/proc/loadavg").text()).split(" ")[0]), us_per_call: summary }));
