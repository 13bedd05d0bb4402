/**
 * @module scripts/bench/all
 * `npm run bench`: runs every `scripts/bench/<name>.ts` as its own subprocess (same bun), one after the
 * other, and prints one combined JSON object on stdout; progress goes to stderr.
 * Usage: `bun scripts/bench/all.ts [name ...] [--timeout-s 300]`.
 */
import { cpus, loadavg, release, totalmem } from "node:os";
import { join } from "node:path";

/** Benchmarks in the order they run (cheap and quiet first, the ones that spawn many processes last). */
const BENCHES = ["floors", "binary", "sandbox", "rules", "parked", "script-pool", "launcher", "approvals", "cards", "attach", "bus", "storage", "fleet-cards", "fleet-dispatch", "notify", "headless", "mcp", "console", "anthropic", "openai-stream", "openapi", "acp", "schedules", "release", "embedded"] as const;

/** Outcome of one benchmark: its JSON figures, or why there are none. */
type BenchResult = unknown | { error: string; exit_code?: number | null; stderr_tail?: string };

interface Args {
  names: string[];
  timeoutMs: number;
}

/** Parses argv: bench names (must be known) and `--timeout-s N` (default 300 s). Throws on an unknown name. */
function parseArgs(argv: string[]): Args {
  const names: string[] = [];
  let timeoutMs = 300_000;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--timeout-s") {
      const s = Number(argv[++i]);
      if (!(s > 0)) throw new Error(`--timeout-s wants a positive number of seconds, got ${argv[i]}`);
      timeoutMs = s * 1000;
    } else if ((BENCHES as readonly string[]).includes(a)) names.push(a);
    else throw new Error(`unknown benchmark "${a}"; known: ${BENCHES.join(", ")}`);
  }
  return { names: names.length ? names : [...BENCHES], timeoutMs };
}

/**
 * Runs `scripts/bench/<name>.ts` in its own process group, killing the whole group after `timeoutMs`
 * (benches spawn bwrap, MCP servers and binaries). Returns the parsed stdout JSON, or `{error}`.
 */
async function runOne(name: string, timeoutMs: number): Promise<{ ok: boolean; value: BenchResult; ms: number }> {
  const t0 = performance.now();
  const proc = Bun.spawn([process.execPath, join(import.meta.dir, `${name}.ts`)], {
    cwd: join(import.meta.dir, "..", ".."),
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    detached: true,
  });
  current = proc.pid;
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    try {
      process.kill(-proc.pid, "SIGKILL");
    } catch {
      proc.kill("SIGKILL");
    }
  }, timeoutMs);
  // Pass the bench's stderr through as progress, keeping a tail for the error report.
  let tail = "";
  const errPump = (async () => {
    const dec = new TextDecoder();
    for await (const chunk of proc.stderr) {
      const s = dec.decode(chunk, { stream: true });
      process.stderr.write(s);
      tail = (tail + s).slice(-2000);
    }
  })();
  const [code, out] = await Promise.all([proc.exited, new Response(proc.stdout).text()]);
  clearTimeout(timer);
  current = undefined;
  await errPump.catch(() => {});
  const ms = performance.now() - t0;
  if (timedOut) return { ok: false, value: { error: `timed out after ${timeoutMs / 1000} s`, exit_code: code, stderr_tail: tail }, ms };
  if (code !== 0) return { ok: false, value: { error: `exited with code ${code}`, exit_code: code, stderr_tail: tail }, ms };
  try {
    return { ok: true, value: JSON.parse(out), ms };
  } catch {
    return { ok: false, value: { error: `stdout is not one JSON value: ${out.slice(0, 300)}`, exit_code: code }, ms };
  }
}

/** Process group of the bench running now; Ctrl-C takes it down too (it runs detached). */
let current: number | undefined;
for (const sig of ["SIGINT", "SIGTERM"] as const) {
  process.on(sig, () => {
    if (current) {
      try {
        process.kill(-current, "SIGKILL");
      } catch {
        // already gone
      }
    }
    process.exit(130);
  });
}

if (process.argv.slice(2).some((a) => a === "-h" || a === "--help")) {
  process.stdout.write(`usage: npm run bench -- [name ...] [--timeout-s 300]   (or: npx bun scripts/bench/all.ts …)\nnames: ${BENCHES.join(", ")}\nOne JSON object on stdout, progress on stderr; see docs/performance.md "Reproduce".\n`);
  process.exit(0);
}
let args: Args;
try {
  args = parseArgs(process.argv.slice(2));
} catch (e) {
  process.stderr.write(`${(e as Error).message}\n`);
  process.exit(2);
}
const machine = {
  cpus: cpus().length,
  cpu_model: cpus()[0]?.model ?? "unknown",
  mem_gb: Math.round((totalmem() / 2 ** 30) * 10) / 10,
  bun: Bun.version,
  kernel: release(),
  load_average: loadavg().map((x) => Math.round(x * 100) / 100),
};
const results: Record<string, BenchResult> = {};
let failed = 0;
for (const name of args.names) {
  process.stderr.write(`[bench] ${name} ...\n`);
  const r = await runOne(name, args.timeoutMs);
  results[name] = r.value;
  if (!r.ok) failed++;
  process.stderr.write(`[bench] ${name} ${r.ok ? "done" : `FAILED (${(r.value as { error: string }).error})`} in ${(r.ms / 1000).toFixed(1)} s\n`);
}
console.log(JSON.stringify({ machine, date: new Date().toISOString(), results }, null, 2));
if (failed) process.stderr.write(`[bench] ${failed} of ${args.names.length} failed\n`);
process.exit(failed ? 1 : 0);
