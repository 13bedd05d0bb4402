/**
 * @module scripts/bench/release
 * Release artifact figures, printed as JSON: each artifact's size in bytes beside the size of the Bun
 * runtime it carries (from its npm package) and the difference, and for the runnable one
 * (linux-x64) the median wall time of `--version` and of `version --json` over 20 cold starts, run
 * from a copy alone in an empty folder. Builds the release into a temp dir (build/release.ts).
 */
import { copyFileSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pinnedBunVersion, release, runtimeFor, TARGETS } from "../../build/release.ts";

const RUNS = 20;
const out = mkdtempSync(join(tmpdir(), "airlock-bench-release-"));
const alone = mkdtempSync(join(tmpdir(), "airlock-bench-alone-"));
try {
  const manifest = await release({ out, log: (l) => process.stderr.write(`release: ${l}\n`) });
  const artifacts = [];
  for (const a of manifest.artifacts) {
    const t = TARGETS.find((x) => x.file === a.file)!;
    const runtime = statSync(await runtimeFor(t, pinnedBunVersion())).size;
    artifacts.push({ file: a.file, bytes: a.bytes, runtime_bytes: runtime, over_runtime_bytes: a.bytes - runtime });
  }
  const bin = join(alone, "airlock");
  copyFileSync(join(out, "airlock-linux-x64"), bin);
  const median = async (args: string[]): Promise<number> => {
    const run = async () => {
      const p = Bun.spawn([bin, ...args], { cwd: alone, stdout: "pipe", stderr: "pipe", env: { PATH: "/usr/bin:/bin", HOME: alone } });
      const [code] = await Promise.all([p.exited, new Response(p.stdout).text(), new Response(p.stderr).text()]);
      if (code !== 0) throw new Error(`${args.join(" ")} exited ${code}`);
    };
    await run(); // page the file in once
    const times: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const t0 = performance.now();
      await run();
      times.push(performance.now() - t0);
    }
    times.sort((x, y) => x - y);
    return Math.round(((times[RUNS / 2 - 1]! + times[RUNS / 2]!) / 2) * 10) / 10;
  };
  const version_median_ms = await median(["--version"]);
  const version_json_median_ms = await median(["version", "--json"]);
  console.log(JSON.stringify({ artifacts, linux_x64: { version_median_ms, version_json_median_ms, runs: RUNS } }));
} finally {
  rmSync(out, { recursive: true, force: true });
  rmSync(alone, { recursive: true, force: true });
}
