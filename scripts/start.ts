/**
 * @module scripts/start
 * What `npm start` runs: builds `dist/airlock` when it is missing or stale (`bun build/build.ts`, which
 * skips a fresh binary), then runs `dist/airlock serve <args>`, forwarding signals and the exit code.
 * Without build/build.ts it falls back to `bun src/main.ts serve <args>`.
 * Usage: `npm start -- --port 8080 --data-dir /tmp/demo`.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "..");
const BUILD = join(ROOT, "build", "build.ts");
const BINARY = join(ROOT, "dist", "airlock");
const SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;
const SIGNAL_NUMBERS: Record<string, number> = { SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGTERM: 15 };

/** Runs argv with inherited stdio, forwarding SIGINT/SIGTERM/SIGHUP to it; resolves with its exit code (128+N when killed by signal N). */
async function runForwarding(argv: string[]): Promise<number> {
  const child = Bun.spawn(argv, { cwd: ROOT, stdin: "inherit", stdout: "inherit", stderr: "inherit" });
  const forward = (sig: NodeJS.Signals) => () => child.kill(sig);
  const handlers = SIGNALS.map((sig) => [sig, forward(sig)] as const);
  for (const [sig, h] of handlers) process.on(sig, h);
  const code = await child.exited;
  for (const [sig, h] of handlers) process.off(sig, h);
  if (child.signalCode) return 128 + (SIGNAL_NUMBERS[child.signalCode] ?? 1);
  return code;
}

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  if (!existsSync(BUILD)) {
    process.stderr.write("airlock start: build/build.ts not found; running src/main.ts with bun instead of the compiled binary\n");
    return runForwarding([process.execPath, join(ROOT, "src", "main.ts"), "serve", ...args]);
  }
  const built = await runForwarding([process.execPath, BUILD]);
  if (built !== 0) {
    process.stderr.write(`airlock start: building dist/airlock failed (exit ${built}); see the messages above\n`);
    return built;
  }
  return runForwarding([BINARY, "serve", ...args]);
}

process.exit(await main());
