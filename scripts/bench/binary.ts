/**
 * @module scripts/bench/binary
 * Compiled binary figures, printed as JSON: its size in bytes and the median wall time of
 * `airlock --version` over 20 runs (cold process start), run from a copy alone in an empty folder.
 */
import { compiledBinary, runBinary } from "../../test/harness-binary.ts";
import { statSync } from "node:fs";

const RUNS = 20;
const bin = await compiledBinary();
await runBinary(bin, ["--version"]); // page the file in once
const times: number[] = [];
for (let i = 0; i < RUNS; i++) {
  const t0 = performance.now();
  const r = await runBinary(bin, ["--version"]);
  times.push(performance.now() - t0);
  if (r.code !== 0) throw new Error(`--version exited ${r.code}: ${r.stderr}`);
}
times.sort((a, b) => a - b);
const median = (times[RUNS / 2 - 1]! + times[RUNS / 2]!) / 2;
console.log(JSON.stringify({ binary_bytes: statSync(bin).size, version_median_ms: Math.round(median * 10) / 10, runs: RUNS }));
