/**
 * @module scripts/bench/launcher
 * Median overhead of `developer__shell {command: "true"}` under `workspace-write` (bubblewrap)
 * against the same call unconfined (`danger-full-access`). Prints one JSON object. Target: ≤ 20 ms.
 * Usage: `bun scripts/bench/launcher.ts [runs]` (default 60 runs per policy, after 5 warm-ups).
 */
import { shellTool } from "../../src/tool/shell.ts";
import { makeToolContext, tempWorkspace } from "../../test/fixtures/tool-context.ts";

const runs = Number(process.argv[2] ?? 60);
const ws = tempWorkspace("airlock-bench-");

async function timeOne(policy: "workspace-write" | "danger-full-access"): Promise<number> {
  const ctx = makeToolContext({ workspace: ws.dir, sandbox: policy });
  const t0 = performance.now();
  const r = (await shellTool.execute({ command: "true" }, ctx)) as { exit_code: number | null };
  const ms = performance.now() - t0;
  if (r.exit_code !== 0) throw new Error(`"true" exited ${r.exit_code} under ${policy}`);
  return ms;
}

function stats(xs: number[]) {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
  return { median_ms: +q(0.5).toFixed(2), p90_ms: +q(0.9).toFixed(2), min_ms: +s[0]!.toFixed(2), max_ms: +s[s.length - 1]!.toFixed(2) };
}

try {
  for (let i = 0; i < 5; i++) {
    await timeOne("workspace-write");
    await timeOne("danger-full-access");
  }
  const confined: number[] = [];
  const unconfined: number[] = [];
  for (let i = 0; i < runs; i++) {
    // Interleaved, so drift in machine load hits both sides alike.
    confined.push(await timeOne("workspace-write"));
    unconfined.push(await timeOne("danger-full-access"));
  }
  const c = stats(confined);
  const u = stats(unconfined);
  const overhead = +(c.median_ms - u.median_ms).toFixed(2);
  console.log(
    JSON.stringify(
      {
        bench: "launcher",
        what: 'developer__shell {command: "true"}: workspace-write (bubblewrap) vs danger-full-access (unconfined)',
        runs,
        workspace_write: c,
        unconfined: u,
        median_overhead_ms: overhead,
        target_ms: 20,
        within_target: overhead <= 20,
      },
      null,
      2,
    ),
  );
} finally {
  ws.cleanup();
}
