/**
 * @module scripts/bench/early-ab
 * `airlock run` → its first model request for two binaries, alternated run by run (A B, B A, …), against one
 * local fake OpenAI-compatible server, with a trivial compiled Bun binary (`console.log(1)`) timed between
 * them as the floor (docs/performance.md, issue 20, twelfth session). Each binary gets its own data dir, warmed
 * by three runs first, so neither side's validated-config cache is keyed by the other's build id (one data dir
 * shared by two builds misses on every switch). Prints one JSON line: the median ms of each side, each ÷ the
 * floor's median, and the paired differences (run i of A against run i of B), whose median and sign count
 * see through the load better than two medians taken minutes apart. Wall times: measure alternated on a quiet
 * machine, and report the load (printed).
 * Usage: `bun scripts/bench/early-ab.ts [--runs 40] BINARY_A BINARY_B`
 */
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { startFakeOpenAI, textChunks } from "../../test/fixtures/fake-openai.ts";

const args = process.argv.slice(2);
let runs = 40;
const binaries: string[] = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--runs") runs = Number(args[++i]);
  else binaries.push(args[i]!);
}
if (binaries.length !== 2 || !Number.isInteger(runs) || runs < 2) {
  process.stderr.write("usage: bun scripts/bench/early-ab.ts [--runs N] BINARY_A BINARY_B\n");
  process.exit(2);
}

/** The median of `xs` (the upper one of an even count). */
function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}
const r2 = (x: number) => Math.round(x * 100) / 100;

const dir = mkdtempSync(join(tmpdir(), "airlock-bench-early-ab-"));
let arrived: (() => void) | undefined;
const fake = startFakeOpenAI(() => {
  arrived?.();
  return textChunks("ok");
});
try {
  writeFileSync(join(dir, "floor.ts"), "console.log(1);\n");
  const floorBin = join(dir, "floor");
  const fb = await Bun.build({ entrypoints: [join(dir, "floor.ts")], compile: { outfile: floorBin }, target: "bun" });
  if (!fb.success) throw new Error(`floor build failed: ${fb.logs.join("\n")}`);
  const sides = binaries.map((source, i) => {
    const home = join(dir, `side-${i}`);
    mkdirSync(join(home, "data"), { recursive: true });
    mkdirSync(join(home, "ws"));
    writeFileSync(join(home, "data", "airlock.yaml"), `provider:\n  name: openai\n  model: bench\n  base_url: ${fake.url}\n  api_key_env: BENCH_KEY\n`);
    const bin = join(home, "airlock");
    copyFileSync(source, bin);
    return { bin, home };
  });

  /** Spawn → the request at the server, ms; throws when the run exits other than 0. */
  const firstRequest = async (s: { bin: string; home: string }): Promise<number> => {
    const got = new Promise<number>((r) => (arrived = () => r(performance.now())));
    const t0 = performance.now();
    const p = Bun.spawn([s.bin, "run", "hi", "--headless", "--data-dir", join(s.home, "data"), "--workspace", join(s.home, "ws")], {
      cwd: join(s.home, "ws"),
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
      env: { PATH: "/usr/bin:/bin", HOME: s.home, BENCH_KEY: "bench" },
    });
    const done = Promise.all([p.exited, new Response(p.stdout).text(), new Response(p.stderr).text()]);
    const at = await Promise.race([got, done.then(([c, , e]) => Promise.reject(new Error(`${s.bin} exited ${c} before its model request: ${e.slice(0, 300)}`)))]);
    const [code, , err] = await done;
    if (code !== 0) throw new Error(`${s.bin} exited ${code}: ${err.slice(0, 300)}`);
    return at - t0;
  };
  /** Spawn → exit of the floor binary, ms. */
  const floor = async (): Promise<number> => {
    const t0 = performance.now();
    const p = Bun.spawn([floorBin], { stdin: "ignore", stdout: "pipe", stderr: "pipe", env: { PATH: "/usr/bin:/bin" } });
    await Promise.all([p.exited, new Response(p.stdout).arrayBuffer(), new Response(p.stderr).arrayBuffer()]);
    return performance.now() - t0;
  };

  for (const s of sides) for (let i = 0; i < 3; i++) await firstRequest(s);
  const loadBefore = loadavg()[0]!;
  const times: [number[], number[]] = [[], []];
  const floors: number[] = [];
  for (let i = 0; i < runs; i++) {
    const order = i % 2 === 0 ? [0, 1] : [1, 0];
    floors.push(await floor());
    for (const k of order) times[k as 0 | 1].push(await firstRequest(sides[k]!));
  }
  const f = median(floors);
  const diffs = times[0].map((a, i) => a - times[1][i]!);
  console.log(
    JSON.stringify({
      at: new Date().toISOString(),
      load: [r2(loadBefore), r2(loadavg()[0]!)],
      runs,
      floor_ms: r2(f),
      a: { binary: binaries[0], ms: r2(median(times[0])), ratio: Math.round((median(times[0]) / f) * 1000) / 1000 },
      b: { binary: binaries[1], ms: r2(median(times[1])), ratio: Math.round((median(times[1]) / f) * 1000) / 1000 },
      a_minus_b_median_ms: r2(median(diffs)),
      b_faster_in: diffs.filter((d) => d > 0).length,
    }),
  );
} finally {
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
}
