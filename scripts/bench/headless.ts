/**
 * @module scripts/bench/headless
 * Headless runs, measured (prints JSON):
 * 1. time from a headless ask to its refusal (`tool_request` → `tool_result` on the bus, in-process,
 *    scripted provider): asks from the mode (`approve`), and asks from a PreToolUse hook (includes the
 *    hook process); median, p99, max in ms; target p99 ≤ 50 ms.
 * 2. wall time of a complete scripted headless run of 3 tool calls with the compiled binary, from
 *    process start to exit (median, p90, min, ms).
 * Usage: `bun scripts/bench/headless.ts [--asks 500] [--hook-asks 50] [--runs 10]`
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { build, OUTFILE } from "../../build/build.ts";
import { runOnce } from "../../src/run/run-once.ts";
import { Config } from "../../src/config/schema.ts";
import { createRuntime } from "../../src/runtime.ts";
import { arg } from "./args.ts";

const ASKS = arg("--asks", 500);
const HOOK_ASKS = arg("--hook-asks", 50);
const RUNS = arg("--runs", 10);
const PER_TURN = 20;

function stats(xs: number[]) {
  const s = [...xs].sort((a, b) => a - b);
  const at = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
  const r = (x: number) => Math.round(x * 1000) / 1000;
  return { samples: s.length, median_ms: r(at(0.5)), p90_ms: r(at(0.9)), p99_ms: r(at(0.99)), min_ms: r(s[0]!), max_ms: r(s.at(-1)!) };
}

/** Runs one headless turn whose calls all ask (by mode or hook) and returns each call's ask → refusal time. */
async function askLatency(n: number, via: "mode" | "hook"): Promise<number[]> {
  const dir = mkdtempSync(join(tmpdir(), "airlock-bench-headless-"));
  const ws = join(dir, "ws");
  mkdirSync(ws);
  const turns = [];
  for (let left = n; left > 0; left -= PER_TURN) {
    turns.push({ tool_calls: Array.from({ length: Math.min(PER_TURN, left) }, () => ({ name: "developer__list_dir", arguments: { path: "." } })) });
  }
  turns.push({ text: "" });
  writeFileSync(join(dir, "turns.yaml"), stringify({ turns }));
  const hook = join(dir, "ask.sh");
  writeFileSync(hook, `#!/bin/sh\ncat >/dev/null\necho '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"bench"}}'\n`, { mode: 0o755 });
  const config = Config.parse({
    provider: { name: "scripted", script: "turns.yaml" },
    mode: via === "mode" ? "approve" : "autonomous",
    limits: { max_iterations: turns.length + 2 },
    ...(via === "hook" ? { hooks: { PreToolUse: [{ matcher: "", hooks: [{ type: "command", command: hook, timeout: 10 }] }] } } : {}),
  });
  const rt = await createRuntime({ config, configDir: dir, dataDir: dir, env: {} });
  const sent = new Map<string, number>();
  const out: number[] = [];
  try {
    const result = await runOnce(rt, {
      prompt: "bench",
      headless: true,
      workspace: ws,
      onEvent(ev) {
        if (ev.type === "tool_request") sent.set(ev.data.call_id, performance.now());
        else if (ev.type === "tool_result" && sent.has(ev.data.call_id)) {
          if (ev.data.error?.code === "no_human_surface") out.push(performance.now() - sent.get(ev.data.call_id)!);
        }
      },
    });
    if (result.refused_calls.length !== n) throw new Error(`expected ${n} refusals, got ${result.refused_calls.length} (${result.status})`);
  } finally {
    await rt.close();
    rmSync(dir, { recursive: true, force: true });
  }
  return out;
}

/** Wall time of `airlock run --headless` with 3 tool calls, process start to exit. */
async function binaryRuns(n: number): Promise<{ wall: number[]; codes: number[] }> {
  await build();
  const dir = mkdtempSync(join(tmpdir(), "airlock-bench-headless-bin-"));
  const ws = join(dir, "ws");
  mkdirSync(ws);
  writeFileSync(join(ws, "a.txt"), "hello\n");
  writeFileSync(
    join(dir, "turns.yaml"),
    stringify({
      turns: [
        {
          tool_calls: [
            { name: "developer__shell", arguments: { command: "echo hi" } },
            { name: "developer__read_file", arguments: { path: "a.txt" } },
            { name: "developer__list_dir", arguments: { path: "." } },
          ],
        },
        { text: "done" },
      ],
    }),
  );
  writeFileSync(join(dir, "airlock.yaml"), stringify({ provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous", sandbox: "workspace-write" }));
  const wall: number[] = [];
  const codes: number[] = [];
  try {
    for (let i = 0; i < n; i++) {
      const t0 = performance.now();
      const p = Bun.spawn([OUTFILE, "run", "go", "--headless", "--output-format", "json", "--data-dir", dir, "--workspace", ws], {
        stdout: "pipe",
        stderr: "pipe",
        stdin: "ignore",
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir },
      });
      const [code, stdout] = await Promise.all([p.exited, new Response(p.stdout).text()]);
      wall.push(performance.now() - t0);
      codes.push(code);
      const r = JSON.parse(stdout);
      if (r.status !== "completed" || r.tool_calls !== 3) throw new Error(`run ${i}: ${stdout}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return { wall, codes };
}

const mode = await askLatency(ASKS, "mode");
const hook = await askLatency(HOOK_ASKS, "hook");
const bin = await binaryRuns(RUNS);
process.stdout.write(
  `${JSON.stringify(
    {
      ask_to_refusal_mode: { ...stats(mode), target_p99_ms: 50 },
      ask_to_refusal_hook: { ...stats(hook), target_p99_ms: 50, note: "includes starting the hook process" },
      headless_run_3_tool_calls_binary: { ...stats(bin.wall), exit_codes: [...new Set(bin.codes)] },
    },
    null,
    2,
  )}\n`,
);
