/**
 * @module test/harness-serve
 * `airlock serve` as a real process for tests: spawns it (the source via bun, or a compiled binary),
 * waits for its "listening on URL" line on stderr, and keeps draining stderr so it never blocks.
 */

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
