/**
 * @module scripts/bench/storage
 * Gated tool calls per second through the whole runtime on each storage backend, printed as JSON:
 * embedded SQLite (a temp data dir) against PostgreSQL (a throwaway cluster from test/pg-cluster.ts on
 * loopback, fsync off). Each turn of the scripted model asks for CALLS `developer__list_dir` calls in one
 * assistant message; each call is judged by the gate (audit row), run, and stored (tool message). Rounds
 * alternate between the backends so a busy machine's load hits both alike. Prints `{sqlite, postgres,
 * ratio}` with calls/s; `postgres: {skipped}` when PostgreSQL is not installed.
 * Usage: `bun scripts/bench/storage.ts [--turns N] [--calls N] [--rounds N]`.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { Config } from "../../src/config/schema.ts";
import { createRuntime } from "../../src/runtime.ts";
import { pgAvailable, startPgCluster } from "../../test/pg-cluster.ts";
import { arg } from "./args.ts";

const TURNS = arg("--turns", 10);
const CALLS = arg("--calls", 20);
const ROUNDS = arg("--rounds", 3);

/** Runs TURNS turns of CALLS gated calls on a fresh runtime; returns calls per second. */
async function measure(storage: string | undefined): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), "airlock-bench-storage-"));
  const ws = join(dir, "ws");
  mkdirSync(ws);
  writeFileSync(join(ws, "a.txt"), "a\n");
  const turns = [];
  for (let t = 0; t < TURNS; t++) {
    turns.push({ tool_calls: Array.from({ length: CALLS }, () => ({ name: "developer__list_dir", arguments: { path: "." } })) });
    turns.push({ text: `turn ${t} done` });
  }
  writeFileSync(join(dir, "turns.yaml"), stringify({ turns }));
  const config = Config.parse({ provider: { name: "scripted", script: "turns.yaml" }, ...(storage ? { storage } : {}) });
  const rt = await createRuntime({ config, configDir: dir, dataDir: dir, workspace: ws, env: {}, log: () => {} });
  try {
    const s = await rt.createSession({ workspace: ws });
    const t0 = performance.now();
    for (let t = 0; t < TURNS; t++) {
      const r = await rt.runTurn(s.id, `turn ${t}`);
      if (r.status !== "completed") throw new Error(`turn ${t} ended ${r.status}: ${JSON.stringify(r).slice(0, 300)}`);
    }
    return (TURNS * CALLS * 1000) / (performance.now() - t0);
  } finally {
    await rt.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const round = (x: number) => Math.round(x * 10) / 10;

const why = pgAvailable();
const cluster = why ? null : await startPgCluster();
try {
  const sqlite: number[] = [];
  const postgres: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    process.stderr.write(`storage: round ${r + 1}/${ROUNDS}\n`);
    sqlite.push(await measure(undefined));
    if (cluster) postgres.push(await measure(await cluster.createDatabase()));
  }
  const out = {
    turns: TURNS,
    calls_per_turn: CALLS,
    rounds: ROUNDS,
    load_avg_1m: round(loadavg()[0]!),
    sqlite: { calls_per_s: round(median(sqlite)), runs: sqlite.map(round) },
    postgres: cluster ? { calls_per_s: round(median(postgres)), runs: postgres.map(round) } : { skipped: why },
    postgres_over_sqlite: cluster ? Math.round((median(postgres) / median(sqlite)) * 100) / 100 : null,
  };
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
} finally {
  cluster?.stop();
}
