/**
 * @module scripts/bench/early-instructions
 * Instructions (callgrind, all threads) of `airlock run hi --headless` against a local fake
 * OpenAI-compatible server, and of `--version`, `--help` and an argument error, each to its exit, for each
 * binary given, alternated; prints JSON. Load-independent, so it compares binaries on a busy machine
 * (docs/performance.md, issue 20, tenth session). The data dir's token and config cache are made first by
 * two plain runs (the warm path, as `floors.ts` measures it). `--probe-at POINT` passes
 * `AIRLOCK_PROBE_AT=POINT` to `run`, for probe builds that exit there (a temporary patch, never committed:
 * `if (process.env.AIRLOCK_PROBE_AT === "fetch") process.exit(0)` before the early request's `fetch`), so
 * `run` counts up to that point; without it `run` counts the whole command. (A dump asked for when the
 * request arrives is no measure: the process goes on loading `run.ts` while the dump is pending.)
 * Needs `valgrind` on PATH.
 * Usage: `bun scripts/bench/early-instructions.ts [--rounds 3] [--probe-at POINT] BINARY…`
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { startFakeOpenAI, textChunks } from "../../test/fixtures/fake-openai.ts";

const args = process.argv.slice(2);
let rounds = 3;
let probeAt: string | undefined;
const binaries: string[] = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--rounds") rounds = Number(args[++i]);
  else if (args[i] === "--probe-at") probeAt = args[++i];
  else binaries.push(args[i]!);
}
if (binaries.length === 0 || !Number.isInteger(rounds) || rounds < 1) {
  process.stderr.write("usage: bun scripts/bench/early-instructions.ts [--rounds N] [--probe-at POINT] BINARY…\n");
  process.exit(2);
}

/** The instruction total ("summary:" or "totals:" line) of one callgrind output file. */
function total(file: string): number {
  const m = /^(?:summary|totals): (\d+)/m.exec(readFileSync(file, "utf8"));
  if (!m) throw new Error(`no total in ${file}`);
  return Number(m[1]);
}

const dir = mkdtempSync(join(tmpdir(), "airlock-bench-early-"));
const fake = startFakeOpenAI(() => textChunks("ok"));
const env = { PATH: "/usr/bin:/bin", HOME: dir, BENCH_KEY: "bench" };

/** Instructions of `bin argv…` to its exit (`extra` added to its environment). Throws when it exits other than `expect`. */
async function count(bin: string, argv: string[], ws: string, expect: number, extra: Record<string, string> = {}): Promise<number> {
  const out = mkdtempSync(join(dir, "cg-"));
  const p = Bun.spawn(["valgrind", "--tool=callgrind", `--callgrind-out-file=${join(out, "cg.out")}`, bin, ...argv], { cwd: ws, stdin: "ignore", stdout: "pipe", stderr: "pipe", env: { ...env, ...extra } });
  const [code, , err] = await Promise.all([p.exited, new Response(p.stdout).text(), new Response(p.stderr).text()]);
  if (code !== expect) throw new Error(`${bin} ${argv.join(" ")} exited ${code}, expected ${expect}: ${err.slice(-300)}`);
  const n = total(join(out, "cg.out"));
  rmSync(out, { recursive: true, force: true });
  return n;
}

const results: Record<string, Record<string, number[]>> = {};
for (const [b, bin] of binaries.entries()) {
  const data = join(dir, `data-${b}`);
  const ws = join(dir, `ws-${b}`);
  mkdirSync(data);
  mkdirSync(ws);
  writeFileSync(join(data, "airlock.yaml"), `provider:\n  name: openai\n  model: bench\n  base_url: ${fake.url}\n  api_key_env: BENCH_KEY\n`);
  for (let i = 0; i < 2; i++) {
    // Not spawnSync: the fake server answers from this process's event loop.
    const p = Bun.spawn([bin, "run", "hi", "--headless", "--data-dir", data, "--workspace", ws], { cwd: ws, env, stdin: "ignore", stdout: "ignore", stderr: "pipe" });
    const [code, err] = await Promise.all([p.exited, new Response(p.stderr).text()]);
    if (code !== 0) throw new Error(`${bin} run exited ${code}: ${err.slice(-300)}`);
  }
  results[bin] = { run: [], version: [], help: [], argument_error: [] };
}
const load_before = loadavg();
for (let r = 0; r < rounds; r++) {
  for (const [b, bin] of binaries.entries()) {
    const data = join(dir, `data-${b}`);
    const ws = join(dir, `ws-${b}`);
    const res = results[bin]!;
    res.run!.push(await count(bin, ["run", "hi", "--headless", "--data-dir", data, "--workspace", ws], ws, 0, probeAt ? { AIRLOCK_PROBE_AT: probeAt } : {}));
    res.version!.push(await count(bin, ["--version"], ws, 0));
    res.help!.push(await count(bin, ["--help"], ws, 0));
    res.argument_error!.push(await count(bin, ["run", "--mode", "nope", "x"], ws, 2));
  }
}
await fake.close();
rmSync(dir, { recursive: true, force: true });
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(
  JSON.stringify(
    {
      what: "callgrind instructions (all threads) to exit, median of rounds",
      rounds,
      run_probe_at: probeAt ?? null,
      load_before,
      load_after: loadavg(),
      binaries: Object.fromEntries(Object.entries(results).map(([bin, r]) => [bin, Object.fromEntries(Object.entries(r).map(([k, v]) => [k, { median: median(v), all: v }]))])),
    },
    null,
    1,
  ),
);
