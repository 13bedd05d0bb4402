/**
 * @module test/harness-serve
 * `airlock serve` as a real process for tests: spawns it (the source via bun, or a compiled binary),
 * waits for its "listening on URL" line on stderr, and keeps draining stderr so it never blocks.
 */
import { afterAll } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface ServeProcess {
  proc: Bun.Subprocess<"ignore", "ignore" | "pipe", "pipe">;
  url: string;
  /** Everything the server wrote to stderr so far. */
  stderr(): string;
}

/**
 * Spawns `argv` (which must start `airlock serve`, usually with `--port 0`) and resolves once it
 * listens. @throws when the process exits first (with what it printed).
 */
export async function spawnServe(argv: string[], opts: { cwd?: string; env?: Record<string, string | undefined> } = {}): Promise<ServeProcess> {
  const proc = Bun.spawn(argv, { cwd: opts.cwd, env: opts.env ?? process.env, stdin: "ignore", stdout: "ignore", stderr: "pipe" });
  const reader = proc.stderr.pipeThrough(new TextDecoderStream()).getReader();
  let seen = "";
  let url: string | undefined;
  while (!url) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`airlock serve exited before listening:\n${seen}`);
    seen += value;
    url = /listening on (http:\/\/\S+)/.exec(seen)?.[1];
  }
  void (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      seen += value;
    }
  })();
  return { proc, url, stderr: () => seen };
}

/**
 * One data dir for `airlock serve` processes started and killed across a test file (restart tests): a
 * temp dir named `prefix…`, `serve(extra)` to start `bun src/main.ts serve --port 0 --data-dir DIR …extra`,
 * `track(proc)` for other processes of the file. Registers an `afterAll` that SIGKILLs every process
 * started and removes the dir.
 */
export function serveFixture(prefix: string): { dir: string; main: string; serve(extra?: string[]): Promise<ServeProcess>; track(p: Bun.Subprocess): void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const main = join(import.meta.dir, "../src/main.ts");
  const procs: Bun.Subprocess[] = [];
  afterAll(async () => {
    for (const p of procs) {
      p.kill("SIGKILL");
      await p.exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    dir,
    main,
    async serve(extra: string[] = []) {
      const sp = await spawnServe([process.execPath, main, "serve", "--port", "0", "--data-dir", dir, ...extra]);
      procs.push(sp.proc);
      return sp;
    },
    track: (p) => void procs.push(p),
  };
}
