/**
 * @module scripts/bench/floors
 * Each figure as a ratio to its floor, both measured in this run, alternating (prints JSON):
 * - cold start: `airlock --version`, `--help`, an argument error, and `airlock run` up to its first
 *   model request (a local fake OpenAI-compatible server), each against a trivial `bun build --compile`
 *   binary of `console.log(1)` built here (spawn → exit; for `run`, spawn → request received);
 * - the first confined call of a fresh process against a later call of the same process
 *   (`launch()` of `true` under `workspace-write`), with the probe cache warm and without it, in wall time
 *   and in airlock's own CPU time (`cpu_ratio`);
 * - a confined call (`launch()`) against bare `bwrap` run with the very argv and fds the launcher planned;
 * - a gated tool call from a script against the raw bridge (the same script, answered at once);
 * - the raw bridge against bare round trips between two Bun threads with its crossings (Atomics down, postMessage up) and with postMessage both ways;
 * - park → the root's SSE client against a bare `bus.publish` → the same SSE client: back to back (`park`), and each
 *   after a pause of the writes (`park-idle`: 150 ms before each sample, as a card comes after a model's reply, with
 *   the WAL past the checkpoint thread's start size); `park-proc` and `park-idle-proc` the same with the SSE client in
 *   its own process (`sse-proc-client.ts`), as a user's console or `attach` is.
 * Pairs are interleaved (which side goes first alternates), the ratio is taken per pair, and the
 * headline is the median of the ratios; absolute medians are given beside them, with the machine
 * (CPU model, cores, load average before and after).
 * Usage: `bun scripts/bench/floors.ts [--pairs 21] [--binary PATH] [--only startup,first,confined,gate,bridge,park]`
 * (`AIRLOCK_BENCH_ROOT=/other/checkout` measures that checkout's script pool in the `bridge` step, and its store, cards,
 * gate and pool in the `gate` step)
 */
import { spawn } from "node:child_process";
import { closeSync, copyFileSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { createParser } from "eventsource-parser";
import { build, OUTFILE } from "../../build/build.ts";
import { Bus } from "../../src/bus/bus.ts";
import { Cards } from "../../src/card/pending.ts";
import { Config } from "../../src/config/schema.ts";
import { AirlockError } from "../../src/errors.ts";
import { GateContext } from "../../src/gate/context.ts";
import { Gate } from "../../src/gate/gate.ts";
import { Permits } from "../../src/gate/permits.ts";
import { newId } from "../../src/ids.ts";
import { sanitizedEnv } from "../../src/launcher/env.ts";
import { TOOL_PROCESS } from "../../src/launcher/plan.ts";
import { openSeccompFilter } from "../../src/launcher/probe.ts";
import { releaseRoot } from "../../src/launcher/roots.ts";
import { closeSeccomp, confinementFor, setUpSandbox } from "../../src/launcher/setup.ts";
import { launch } from "../../src/launcher/spawn.ts";
import { createRuntime } from "../../src/runtime.ts";
import { ScriptPool, type RunOptions } from "../../src/script/pool.ts";
import { startServer } from "../../src/server/serve.ts";
import { Inflight } from "../../src/session/inflight.ts";
import { Store } from "../../src/store/store.ts";
import { defineTool, type ToolDef, type ToolOutcome } from "../../src/tool/tool.ts";
import { startFakeOpenAI, textChunks } from "../../test/fixtures/fake-openai.ts";
import { FLOORS_USAGE, parseFloorsArgs, type FloorsArgs } from "./floors-args.ts";
import { monoMs } from "./mono-clock.ts";

const CHILD = process.argv[2] === "--first-call-child";
let parsed: FloorsArgs;
try {
  parsed = CHILD ? { help: false, pairs: 21, binary: undefined, only: undefined } : parseFloorsArgs(process.argv.slice(2));
} catch (e) {
  process.stderr.write(`floors: ${(e as Error).message}\n${FLOORS_USAGE}`);
  process.exit(2);
}
if (parsed.help) {
  process.stdout.write(FLOORS_USAGE);
  process.exit(0);
}
const PAIRS = parsed.pairs;
const ONLY = parsed.only;
const BINARY = parsed.binary;
const want = (s: string) => !ONLY || ONLY.includes(s);
const r3 = (x: number) => Math.round(x * 1000) / 1000;
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
};

/** One figure against its floor: the median of per-pair ratios, and each side's median (ms). */
interface Ratio {
  ratio: number;
  ratio_p10_p90: [number, number];
  value_ms: number;
  floor_ms: number;
  pairs: number;
}

/**
 * Runs `n` pairs of (figure, floor), alternating which goes first, after `warm` unmeasured pairs.
 * Each side returns its own time in ms. The ratio is per pair; the result is their median.
 */
async function pairs(n: number, value: () => Promise<number>, floor: () => Promise<number>, warm = 2): Promise<Ratio> {
  for (let i = 0; i < warm; i++) {
    await value();
    await floor();
  }
  const v: number[] = [];
  const f: number[] = [];
  const ratios: number[] = [];
  for (let i = 0; i < n; i++) {
    let a: number;
    let b: number;
    if (i % 2 === 0) {
      a = await value();
      b = await floor();
    } else {
      b = await floor();
      a = await value();
    }
    v.push(a);
    f.push(b);
    ratios.push(a / b);
  }
  return { ratio: r3(median(ratios)), ratio_p10_p90: [r3(pct(ratios, 0.1)), r3(pct(ratios, 0.9))], value_ms: r3(median(v)), floor_ms: r3(median(f)), pairs: n };
}

/** Wall time of `argv` from spawn to exit, stdio piped and drained, ms. Throws when the exit code is not `code`. */
async function timeProcess(argv: string[], code: number, env: Record<string, string> = { PATH: "/usr/bin:/bin", HOME: tmpdir() }): Promise<number> {
  const t0 = performance.now();
  const p = Bun.spawn(argv, { stdin: "ignore", stdout: "pipe", stderr: "pipe", env });
  const [exit, , err] = await Promise.all([p.exited, new Response(p.stdout).arrayBuffer(), new Response(p.stderr).text()]);
  const ms = performance.now() - t0;
  if (exit !== code) throw new Error(`${argv.join(" ")} exited ${exit} (expected ${code}): ${err.slice(0, 300)}`);
  return ms;
}

/** Cold start of the binary against a trivial compiled Bun binary built here. */
async function startup(): Promise<Record<string, Ratio>> {
  const dir = mkdtempSync(join(tmpdir(), "airlock-bench-floors-"));
  try {
    writeFileSync(join(dir, "floor.ts"), "console.log(1);\n");
    const floorBin = join(dir, "floor");
    const fb = await Bun.build({ entrypoints: [join(dir, "floor.ts")], compile: { outfile: floorBin }, target: "bun" });
    if (!fb.success) throw new Error(`floor build failed: ${fb.logs.join("\n")}`);
    let source = BINARY;
    if (!source) {
      await build();
      source = OUTFILE;
    }
    mkdirSync(join(dir, "bin"));
    const bin = join(dir, "bin", "airlock");
    copyFileSync(source, bin);
    const floor = () => timeProcess([floorBin], 0);
    const out: Record<string, Ratio> = {
      version: await pairs(PAIRS, () => timeProcess([bin, "--version"], 0), floor),
      help: await pairs(PAIRS, () => timeProcess([bin, "--help"], 0), floor),
      argument_error: await pairs(PAIRS, () => timeProcess([bin, "run", "--mode", "nope", "x"], 2), floor),
    };
    // `airlock run` up to its first model request
    const data = join(dir, "data");
    const ws = join(dir, "ws");
    mkdirSync(data);
    mkdirSync(ws);
    let arrived: (() => void) | undefined;
    const fake = startFakeOpenAI(() => {
      arrived?.();
      return textChunks("ok");
    });
    writeFileSync(join(data, "airlock.yaml"), `provider:\n  name: openai\n  model: bench\n  base_url: ${fake.url}\n  api_key_env: BENCH_KEY\n`);
    const firstRequest = async (): Promise<number> => {
      const got = new Promise<number>((r) => (arrived = () => r(performance.now())));
      const t0 = performance.now();
      const p = Bun.spawn([bin, "run", "hi", "--headless", "--data-dir", data, "--workspace", ws], {
        cwd: ws,
        stdin: "ignore",
        stdout: "pipe",
        stderr: "pipe",
        env: { PATH: "/usr/bin:/bin", HOME: dir, BENCH_KEY: "bench" },
      });
      const done = Promise.all([p.exited, new Response(p.stdout).text(), new Response(p.stderr).text()]);
      const at = await Promise.race([got, done.then(([c, , e]) => Promise.reject(new Error(`run exited ${c} before its model request: ${e.slice(0, 300)}`)))]);
      const [code, , err] = await done;
      if (code !== 0) throw new Error(`run exited ${code}: ${err.slice(0, 300)}`);
      return at - t0;
    };
    try {
      out.run_first_request = await pairs(Math.max(5, Math.round(PAIRS / 2)), firstRequest, floor);
    } finally {
      await fake.close();
    }
    return out;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Child mode: in this fresh process, time 6 confined calls; print `{first, later, first_cpu, later_cpu}` (ms of
 * wall time, and of this process's CPU time per call; later = median of calls 2–6). `mode`: `nocache` (the probe runs in the first call, as before the cache), `cache` (the probe
 * cache in `dataDir` is warm), `warm` (cache, and the runtime's warm-up — spawn.ts `warmLaunch`, or setup.ts
 * `warmLauncher` in checkouts without it — then 100 ms, a model's first answer).
 */
async function firstCallChild(dataDir: string, ws: string, mode: string): Promise<void> {
  const probe: { useProbeCache?: (d: string) => void } = await import("../../src/launcher/probe.ts");
  const setup: { warmLauncher?: () => void } = await import("../../src/launcher/setup.ts");
  // the runtime's warm-up: spawn.ts warmLaunch where this checkout has it (older ones: setup.ts warmLauncher)
  const spawned: { warmLaunch?: (config: Config, dataDirs?: string[]) => Promise<void> } = await import("../../src/launcher/spawn.ts");
  if (mode !== "nocache") probe.useProbeCache?.(dataDir);
  const config = Config.parse({});
  if (mode === "warm") {
    // as the runtime calls it: with the data dir every call hides
    if (spawned.warmLaunch) void spawned.warmLaunch(config, [dataDir]);
    else setup.warmLauncher?.();
    await Bun.sleep(100);
  }
  const times: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < 6; i++) {
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    const r = await launch({ policy: "workspace-write", argv: ["true"], cwd: ws, workspace: ws, timeoutMs: 60_000, maxOutputBytes: 1 << 16, config, hiddenPaths: [dataDir] });
    const c = process.cpuUsage(c0);
    times.push(performance.now() - t0);
    cpu.push((c.user + c.system) / 1000);
    if (r.exit_code !== 0) throw new Error(`true exited ${r.exit_code}: ${r.stderr}`);
  }
  console.log(JSON.stringify({ first: times[0], later: median(times.slice(1)), first_cpu: cpu[0], later_cpu: median(cpu.slice(1)) }));
}

/** The first confined call of a fresh process against a later one, over `n` processes. */
async function firstCall(n: number): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), "airlock-bench-first-"));
  const ws = join(dir, "ws");
  mkdirSync(ws);
  const child = async (mode: string) => {
    const p = Bun.spawn([process.execPath, import.meta.path, "--first-call-child", dir, ws, mode], { stdout: "pipe", stderr: "pipe" });
    const [code, out, err] = await Promise.all([p.exited, new Response(p.stdout).text(), new Response(p.stderr).text()]);
    if (code !== 0) throw new Error(`first-call child exited ${code}: ${err}`);
    return JSON.parse(out) as { first: number; later: number; first_cpu: number; later_cpu: number };
  };
  try {
    await child("cache"); // fills the cache
    const modes = ["nocache", "cache", "warm"];
    const sides: Record<string, { first: number; later: number; first_cpu: number; later_cpu: number }[]> = { cache: [], nocache: [], warm: [] };
    for (let i = 0; i < n; i++) {
      for (const m of i % 2 ? [...modes].reverse() : modes) sides[m]!.push(await child(m));
    }
    // cpu_*: airlock's own CPU time (process.cpuUsage, all its threads, not bubblewrap's) per call: less moved by load than wall time
    const summary = (xs: { first: number; later: number; first_cpu: number; later_cpu: number }[]) => ({
      ratio: r3(median(xs.map((x) => x.first / x.later))),
      first_ms: r3(median(xs.map((x) => x.first))),
      later_ms: r3(median(xs.map((x) => x.later))),
      cpu_ratio: r3(median(xs.map((x) => x.first_cpu / x.later_cpu))),
      first_cpu_ms: r3(median(xs.map((x) => x.first_cpu))),
      later_cpu_ms: r3(median(xs.map((x) => x.later_cpu))),
      processes: xs.length,
    });
    return { probe_not_cached: summary(sides.nocache!), probe_cached: summary(sides.cache!), probe_cached_and_warmed: summary(sides.warm!) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A confined `launch()` of `true` against bare bwrap run with the argv and fds the launcher planned for it. */
async function confined(): Promise<Ratio> {
  const dir = mkdtempSync(join(tmpdir(), "airlock-bench-confined-"));
  const ws = join(dir, "ws");
  mkdirSync(ws);
  const config = Config.parse({});
  try {
    const c = await confinementFor("workspace-write", undefined, process.env.PATH, false, TOOL_PROCESS);
    if (c.kind !== "bwrap") throw new Error("bubblewrap cannot run here");
    const setup = await setUpSandbox(c, {
      policy: "workspace-write",
      options: TOOL_PROCESS,
      argv: ["/usr/bin/true"],
      cwd: ws,
      writableRoots: [ws],
      homes: [process.env.HOME],
      dataDirs: [],
      unixSockets: [],
      maxFolders: 10_000,
      refuse: (why) => new AirlockError("sandbox_unavailable", why),
    });
    const argv = setup.argv;
    const fds = setup.fds;
    closeSeccomp(setup);
    await releaseRoot(setup.prepared);
    const bare = () =>
      new Promise<number>((resolve, reject) => {
        const t0 = performance.now();
        // the fds bwrap expects, in the slots the launcher planned (launcher/setup.ts extraStdio): the info pipe, a
        // seccomp filter, the lifeline pipe, and for the reaper's mark (which bwrap and its init only hold) /dev/null
        const seccompFd = fds.seccomp !== undefined ? openSeccompFilter() : undefined;
        const markFd = openSync("/dev/null", "r");
        const extra: ("pipe" | number)[] = [];
        if (fds.info !== undefined) extra[fds.info - 3] = "pipe";
        if (seccompFd !== undefined) extra[fds.seccomp! - 3] = seccompFd;
        extra[fds.lifeline - 3] = "pipe";
        extra[fds.reaper - 3] = markFd;
        const child = spawn(argv[0]!, argv.slice(1), { cwd: ws, env: sanitizedEnv(), detached: true, stdio: ["ignore", "pipe", "pipe", ...extra] as never });
        if (seccompFd !== undefined) closeSync(seccompFd);
        closeSync(markFd);
        child.on("error", reject);
        child.on("close", (code) => (code === 0 ? resolve(performance.now() - t0) : reject(new Error(`bare bwrap exited ${code}`))));
      });
    const viaLauncher = async () => {
      const t0 = performance.now();
      const r = await launch({ policy: "workspace-write", argv: ["true"], cwd: ws, workspace: ws, timeoutMs: 60_000, maxOutputBytes: 1 << 16, config });
      if (r.exit_code !== 0) throw new Error(`true exited ${r.exit_code}: ${r.stderr}`);
      return performance.now() - t0;
    };
    return await pairs(Math.max(PAIRS, 41), viaLauncher, bare, 5);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const LIMITS: RunOptions = { cpuTimeoutMs: 30_000, wallTimeoutMs: 60_000, maxToolCalls: 1_000_000, maxLogBytes: 1 << 20, maxResultBytes: 1 << 20 };

/**
 * The modules the `gate` step runs: this checkout's, or with `AIRLOCK_BENCH_ROOT` set, that checkout's (each loaded from
 * its `src/`; the harness and the echo tool's zod schema stay this checkout's).
 */
async function benchModules(): Promise<{
  Store: typeof Store; Bus: typeof Bus; Inflight: typeof Inflight; Cards: typeof Cards; Config: typeof Config; Gate: typeof Gate;
  GateContext: typeof GateContext; Permits: typeof Permits; defineTool: typeof defineTool; ScriptPool: typeof ScriptPool;
}> {
  const root = process.env.AIRLOCK_BENCH_ROOT;
  if (!root) return { Store, Bus, Inflight, Cards, Config, Gate, GateContext, Permits, defineTool, ScriptPool };
  const from = <T>(path: string): Promise<T> => import(join(root, "src", path)) as Promise<T>;
  return {
    Store: (await from<{ Store: typeof Store }>("store/store.ts")).Store,
    Bus: (await from<{ Bus: typeof Bus }>("bus/bus.ts")).Bus,
    Inflight: (await from<{ Inflight: typeof Inflight }>("session/inflight.ts")).Inflight,
    Cards: (await from<{ Cards: typeof Cards }>("card/pending.ts")).Cards,
    Config: (await from<{ Config: typeof Config }>("config/schema.ts")).Config,
    Gate: (await from<{ Gate: typeof Gate }>("gate/gate.ts")).Gate,
    GateContext: (await from<{ GateContext: typeof GateContext }>("gate/context.ts")).GateContext,
    Permits: (await from<{ Permits: typeof Permits }>("gate/permits.ts")).Permits,
    defineTool: (await from<{ defineTool: typeof defineTool }>("tool/tool.ts")).defineTool,
    ScriptPool: (await from<{ ScriptPool: typeof ScriptPool }>("script/pool.ts")).ScriptPool,
  };
}

/** A script's sequential tool calls through the real gate (autonomous, a read-only echo tool) against the raw bridge. */
async function gated(): Promise<Ratio & { calls_per_script: number; gated_calls_per_s: number; raw_calls_per_s: number }> {
  const CALLS = 2000;
  // AIRLOCK_BENCH_ROOT=/path/to/other/checkout: that checkout's store, bus, cards, gate and script pool (a before/after)
  const { Store, Bus, Inflight, Cards, Config, Gate, GateContext, Permits, defineTool, ScriptPool } = await benchModules();
  const store = await Store.open(":memory:");
  const bus = new Bus();
  const inflight = new Inflight();
  const cards = new Cards({ store, bus, inflight, approverToken: "bench-approver-token-0123456789" });
  const echo: ToolDef = defineTool({ name: "bench__echo", description: "echo", schema: z.unknown(), readOnly: true, async execute(a) { return a; } });
  const registry = { resolve: async (n: string) => (n === echo.name ? echo : undefined), list: async () => [echo], listCached: () => [echo] };
  const config = Config.parse({ mode: "autonomous" });
  const gate = new Gate({ store, bus, inflight, registry, cards, permits: new Permits(64), configFor: () => config });
  const s = await store.createSession({ parent_session_id: null, workspace: process.cwd(), mode: "autonomous", sandbox: "workspace-write", privacy: "public", headless: false, provider: "scripted" });
  const turnId = newId("turn");
  inflight.register(s.id, turnId);
  const parentCallId = newId("call");
  const pool = new ScriptPool({ workers: 1, memoryMb: 64, stackKb: 512 });
  const rawEcho = async (_n: string, args: unknown): Promise<ToolOutcome> => ({ ok: true, result: args });
  const script = (name: string) => `for (let i = 0; i < ${CALLS}; i++) await tools.${name}({ i }); return ${CALLS};`;
  try {
    const viaGate = async () => {
      const t0 = performance.now();
      const r = await GateContext.provide({ sessionId: s.id, turnId, callId: parentCallId }, () =>
        pool.run(script("bench__echo"), LIMITS, (name, args) => gate.call({ name, args, callId: newId("call"), fromScript: true, parentCallId })),
      );
      if (!r.ok) throw new Error(`gated script failed: ${JSON.stringify(r.error)}`);
      return performance.now() - t0;
    };
    const raw = async () => {
      const t0 = performance.now();
      const r = await pool.run(script("echo"), LIMITS, rawEcho);
      if (!r.ok) throw new Error(`raw script failed: ${JSON.stringify(r.error)}`);
      return performance.now() - t0;
    };
    const out = await pairs(PAIRS, viaGate, raw, 3);
    return { ...out, calls_per_script: CALLS, gated_calls_per_s: Math.round((CALLS / out.value_ms) * 1000), raw_calls_per_s: Math.round((CALLS / out.floor_ms) * 1000) };
  } finally {
    inflight.unregister(s.id, turnId);
    cards.close();
    await pool.close();
    store.close();
  }
}

/** Guest → host → guest round trips per floor sample. */
const TRIPS = 2000;
const FLOOR_SAB_WORKER = `
self.onmessage = (e) => {
  const a = new Int32Array(e.data);
  self.postMessage(0);
  for (let seen = 0; ; ) { // word 0: the request count the main thread bumped; word 1: stop
    Atomics.wait(a, 0, seen);
    if (Atomics.load(a, 1) === 1) return;
    seen = Atomics.load(a, 0);
    self.postMessage(seen);
  }
};`;
const FLOOR_PORT_WORKER = "self.onmessage = (e) => self.postMessage(e.data);";

/**
 * The raw sandbox bridge (a script's sequential tool calls answered at once, 2,000) against its floors: the same
 * number of bare round trips between the main thread and a Bun worker with the bridge's crossings and nothing else
 * (the worker blocked in `Atomics.wait` on a SharedArrayBuffer and woken by `Atomics.notify`, answering with
 * `postMessage`), and over `postMessage` both ways (the bridge before its channel).
 */
async function bridge(): Promise<{ vs_crossings: Ratio; vs_message_port: Ratio; raw_calls_per_s: number; crossings_round_trips_per_s: number; message_port_round_trips_per_s: number }> {
  const blobUrl = (src: string) => URL.createObjectURL(new Blob([src], { type: "text/javascript" }));
  const sabWorker = new Worker(blobUrl(FLOOR_SAB_WORKER));
  const portWorker = new Worker(blobUrl(FLOOR_PORT_WORKER));
  const words = new Int32Array(new SharedArrayBuffer(8));
  await new Promise<void>((r) => {
    sabWorker.onmessage = () => r();
    sabWorker.postMessage(words.buffer);
  });
  // AIRLOCK_BENCH_ROOT=/path/to/other/checkout: that checkout's script pool against the same floors (a before/after)
  const Pool = process.env.AIRLOCK_BENCH_ROOT ? ((await import(join(process.env.AIRLOCK_BENCH_ROOT, "src/script/pool.ts"))) as { ScriptPool: typeof ScriptPool }).ScriptPool : ScriptPool;
  const pool = new Pool({ workers: 1, memoryMb: 64, stackKb: 512 });
  const rawEcho = async (_n: string, args: unknown): Promise<ToolOutcome> => ({ ok: true, result: args });
  const raw = async () => {
    const t0 = performance.now();
    const r = await pool.run(`for (let i = 0; i < ${TRIPS}; i++) await tools.echo({ i }); return 1;`, LIMITS, rawEcho);
    if (!r.ok) throw new Error(`raw script failed: ${JSON.stringify(r.error)}`);
    return performance.now() - t0;
  };
  const sab = async () => {
    const t0 = performance.now();
    for (let i = 0; i < TRIPS; i++) {
      await new Promise<void>((r) => {
        sabWorker.onmessage = () => r();
        Atomics.add(words, 0, 1);
        Atomics.notify(words, 0);
      });
    }
    return performance.now() - t0;
  };
  const port = async () => {
    const t0 = performance.now();
    for (let i = 0; i < TRIPS; i++) {
      await new Promise<void>((r) => {
        portWorker.onmessage = () => r();
        portWorker.postMessage(i);
      });
    }
    return performance.now() - t0;
  };
  try {
    const vsSab = await pairs(PAIRS, raw, sab, 3);
    const vsPort = await pairs(PAIRS, raw, port, 1);
    const perS = (ms: number) => Math.round((TRIPS / ms) * 1000);
    return { vs_crossings: vsSab, vs_message_port: vsPort, raw_calls_per_s: perS(vsSab.value_ms), crossings_round_trips_per_s: perS(vsSab.floor_ms), message_port_round_trips_per_s: perS(vsPort.floor_ms) };
  } finally {
    Atomics.store(words, 1, 1);
    Atomics.add(words, 0, 1);
    Atomics.notify(words, 0);
    sabWorker.terminate();
    portWorker.terminate();
    await pool.close();
  }
}

/**
 * Park (a child session's card) → the root's SSE client, against `bus.publish` on the root → the same client.
 * `pauseMs`: a pause before each sample (the writes idle), after warm-up parks that take the WAL past 1 MB.
 * `client`: `in-process` is Bun's `fetch` in this process (the figure of every session before the ninth: the
 * client's wake-up and parse share this event loop and sit in every interval, from the park's call to the
 * `await` after the frame); `own-process` is `sse-proc-client.ts`, a second process reading the frame off its
 * own socket, as a user's console or `attach` does: from CLOCK_MONOTONIC here before the call to CLOCK_MONOTONIC
 * there at the socket read that completed the frame (`mono-clock.ts`).
 */
async function park(samples: number, pauseMs = 0, client: "in-process" | "own-process" = "in-process"): Promise<Ratio & { client: string; park_min_ms: number; publish_min_ms: number; park_p99_ms: number; publish_p99_ms: number; park_p50_ms: number; publish_p50_ms: number }> {
  const dataDir = mkdtempSync(join(tmpdir(), "airlock-bench-park-"));
  const rt = await createRuntime({ config: Config.parse({ limits: { script_workers: 1 } }), configDir: dataDir, dataDir, env: {} });
  const server = startServer(rt, { host: "127.0.0.1", port: 0 });
  const abort = new AbortController();
  let child: ReturnType<typeof Bun.spawn> | undefined;
  try {
    const root = await rt.store.createSession({ workspace: dataDir, mode: "smart", sandbox: "workspace-write", privacy: "public", headless: false, provider: "scripted" });
    const sub = await rt.store.createSession({ parent_session_id: root.id, workspace: dataDir, mode: "smart", sandbox: "workspace-write", privacy: "public", headless: false, provider: "scripted" });
    const turnId = newId("turn");
    rt.inflight.register(sub.id, turnId);
    const cards = rt.cards as Cards;
    /** A frame the bench waits for: its event, the card's request id (`action_required`), the client's time of it (own-process only). */
    type Frame = { event: string; requestId: string; at: number };
    let wake: ((f: Frame) => void) | undefined;
    let ready!: () => void;
    const snapshot = new Promise<void>((r) => (ready = r));
    const eventsUrl = `${server.url}/sessions/${root.id}/events`.replace("localhost", "127.0.0.1");
    if (client === "in-process") {
      const parser = createParser({
        onEvent(m) {
          if (m.event === "snapshot") ready();
          if (m.event === "action_required") wake?.({ event: m.event, requestId: JSON.parse(m.data).request_id, at: 0 });
          if (m.event === "delta") wake?.({ event: m.event, requestId: "", at: 0 });
        },
      });
      const res = await fetch(eventsUrl, { headers: { authorization: `Bearer ${rt.tokens.apiToken}` }, signal: abort.signal });
      void (async () => {
        const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          parser.feed(value);
        }
      })().catch(() => {});
    } else {
      child = Bun.spawn([process.execPath, join(import.meta.dir, "sse-proc-client.ts"), eventsUrl], { env: { ...process.env, AIRLOCK_BENCH_TOKEN: rt.tokens.apiToken }, stdout: "pipe", stderr: "inherit" });
      const lines = (child.stdout as ReadableStream<Uint8Array>).getReader();
      const dec = new TextDecoder();
      void (async () => {
        let buf = "";
        for (;;) {
          const { value, done } = await lines.read();
          if (done) break;
          buf += dec.decode(value, { stream: true });
          let nl: number;
          while ((nl = buf.indexOf("\n")) >= 0) {
            const [event, at, requestId] = buf.slice(0, nl).split(" ");
            buf = buf.slice(nl + 1);
            if (event === "ready") ready();
            else wake?.({ event: event!, requestId: requestId!, at: Number(at) });
          }
        }
      })().catch(() => {});
    }
    await snapshot;
    const own = client === "own-process";
    const parkLat: number[] = [];
    const pubLat: number[] = [];
    let i = 0;
    let pausing = false; // no pause while warming up
    const pause = async () => {
      if (pausing) await Bun.sleep(pauseMs);
    };
    const viaPark = async () => {
      await pause();
      const arrived = new Promise<Frame>((r) => (wake = (f) => f.event === "action_required" && r(f)));
      const t0 = own ? monoMs() : performance.now();
      void cards.park({ homeSessionId: sub.id, turnId, callId: newId("call"), tool: "developer__shell", arguments: { command: `touch f${i++}` }, inspector: "mode", reason: "bench", requiresUserProof: false, ttlSeconds: 3600 });
      const f = await arrived;
      const ms = own ? f.at - t0 : performance.now() - t0;
      await cards.resolve(f.requestId, "deny", { sessionId: root.id });
      parkLat.push(ms);
      return ms;
    };
    const viaPublish = async () => {
      await pause();
      const arrived = new Promise<Frame>((r) => (wake = (f) => f.event === "delta" && r(f)));
      const t0 = own ? monoMs() : performance.now();
      rt.bus.publish(root.id, "delta", { session_id: root.id, turn_id: "turn_bench", text: `${i++}` });
      const f = await arrived;
      const ms = own ? f.at - t0 : performance.now() - t0;
      pubLat.push(ms);
      return ms;
    };
    // warm-up (and, before pauses, the WAL past the checkpoint thread's start: ~20 KB of WAL per park and answer),
    // not in the percentiles: until issue 20's wip/park they counted the 20 warm-up pairs, the process's coldest parks
    for (let k = 0; k < (pauseMs > 0 ? 60 : 20); k++) {
      await viaPark();
      await viaPublish();
    }
    parkLat.length = 0;
    pubLat.length = 0;
    pausing = pauseMs > 0;
    const out = await pairs(samples, viaPark, viaPublish, 0);
    // a negative interval would mean the two processes' clocks differ: CLOCK_MONOTONIC must not
    if (Math.min(...parkLat, ...pubLat) < 0) throw new Error(`park: a negative interval (${r3(Math.min(...parkLat, ...pubLat))} ms): the client's clock is not this process's`);
    return { client, ...out, park_p99_ms: r3(pct(parkLat, 0.99)), publish_p99_ms: r3(pct(pubLat, 0.99)), park_p50_ms: r3(pct(parkLat, 0.5)), publish_p50_ms: r3(pct(pubLat, 0.5)), park_min_ms: r3(Math.min(...parkLat)), publish_min_ms: r3(Math.min(...pubLat)) };
  } finally {
    abort.abort();
    child?.kill();
    server.stop?.();
    await rt.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (process.argv[2] === "--first-call-child") {
  await firstCallChild(process.argv[3]!, process.argv[4]!, process.argv[5]!);
  process.exit(0);
}

const machine = { cpu_model: cpus()[0]?.model ?? "unknown", cores: cpus().length, load_before: loadavg().map((x) => Math.round(x * 100) / 100), bun: Bun.version };
const results: Record<string, unknown> = {};
const step = async (name: string, f: () => Promise<unknown>) => {
  if (!want(name)) return;
  process.stderr.write(`[floors] ${name} ...\n`);
  results[name] = await f();
};
await step("startup", startup);
await step("first", () => firstCall(Math.max(5, Math.round(PAIRS / 2))));
await step("confined", confined);
await step("gate", gated);
await step("bridge", bridge);
await step("park", () => park(Math.max(PAIRS, 500)));
await step("park-idle", () => park(60, 150)); // 60 pairs whatever --pairs says: each sample waits 150 ms
await step("park-proc", () => park(Math.max(PAIRS, 500), 0, "own-process"));
await step("park-idle-proc", () => park(60, 150, "own-process"));
console.log(JSON.stringify({ machine: { ...machine, load_after: loadavg().map((x) => Math.round(x * 100) / 100) }, date: new Date().toISOString(), results }, null, 2));
process.exit(0);
