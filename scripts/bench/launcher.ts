/**
 * @module scripts/bench/launcher
 * Median overhead of `developer__shell {command: "true"}` under `workspace-write` (bubblewrap)
 * against the same command launched bare (no bubblewrap at all: `launch` with `bwrapPath: null` under
 * `danger-full-access`). Also reports `danger-full-access` itself, which runs under bubblewrap too
 * (its own PID namespace, so its tree dies with airlock). Prints one JSON object. Target: ≤ 20 ms.
 * Usage: `bun scripts/bench/launcher.ts [runs]` (default 60 runs per policy, after 5 warm-ups).
 */
import { Config } from "../../src/config/schema.ts";
import { launch } from "../../src/launcher/spawn.ts";
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

/** The same command with no bubblewrap at all: the baseline the confinement overhead is measured against. */
async function timeBare(): Promise<number> {
  const t0 = performance.now();
  const r = await launch({ policy: "danger-full-access", argv: ["bash", "-c", "true"], cwd: ws.dir, workspace: ws.dir, timeoutMs: 60_000, maxOutputBytes: 1 << 20, config: Config.parse({}), bwrapPath: null });
  const ms = performance.now() - t0;
  if (r.exit_code !== 0) throw new Error(`"true" exited ${r.exit_code} bare`);
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
    await timeBare();
  }
  const confined: number[] = [];
  const danger: number[] = [];
  const bare: number[] = [];
  for (let i = 0; i < runs; i++) {
    // Interleaved, so drift in machine load hits every side alike.
    confined.push(await timeOne("workspace-write"));
    danger.push(await timeOne("danger-full-access"));
    bare.push(await timeBare());
  }
  const c = stats(confined);
  const d = stats(danger);
  const u = stats(bare);
  const overhead = +(c.median_ms - u.median_ms).toFixed(2);
  console.log(
    JSON.stringify(
      {
        bench: "launcher",
        what: 'developer__shell {command: "true"}: workspace-write (bubblewrap) vs the same command with no bubblewrap at all',
        runs,
        workspace_write: c,
        danger_full_access: d,
        unconfined: u,
        danger_full_access_overhead_ms: +(d.median_ms - u.median_ms).toFixed(2),
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
