/**
 * @module test/harness-serve
 * `airlock serve` as a real process for tests: spawns it (the source via bun, or a compiled binary),
 * waits for its "listening on URL" line on stderr, and keeps draining stderr so it never blocks. Also: data dirs
 * for a server with the scripted provider, a port nothing listens on, and a client command run to its end.
 */
import { afterAll } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
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

/** The entry point run from source. */
export const MAIN = join(import.meta.dir, "../src/main.ts");

/** A TCP port on 127.0.0.1 that nothing listens on: bound, then closed (another process may take it later). */
export async function deadPort(): Promise<number> {
  const s = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") });
  const port = s.port!;
  await s.stop(true);
  return port;
}

/**
 * Call at a test file's top level: the temp dirs and processes of the file's tests. Registers an `afterAll`
 * that SIGKILLs every tracked process (awaiting each exit) and then removes every dir.
 */
export function serveScratch(): {
  /** An empty temp dir named `prefix…`. */
  dir(prefix: string): string;
  /** A data dir (a temp dir named `prefix…`): airlock.yaml with `mode: smart`, the scripted provider and `server.port` = `port`; turns.yaml answering "done". */
  dataDir(prefix: string, port: number): string;
  /** `bun src/main.ts serve --port 0 …args --data-dir DIR` via {@link spawnServe}, tracked. */
  serve(dir: string, args?: string[]): Promise<ServeProcess>;
  /** Tracks `p` (killed in afterAll); returns it. */
  track<P extends Bun.Subprocess>(p: P): P;
} {
  const dirs: string[] = [];
  const procs: Bun.Subprocess[] = [];
  afterAll(async () => {
    for (const p of procs) {
      p.kill("SIGKILL");
      await p.exited;
    }
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  const dir = (prefix: string) => {
    const d = mkdtempSync(join(tmpdir(), prefix));
    dirs.push(d);
    return d;
  };
  return {
    dir,
    dataDir(prefix, port) {
      const d = dir(prefix);
      writeFileSync(join(d, "airlock.yaml"), `mode: smart\nprovider: { name: scripted, script: turns.yaml }\nserver: { port: ${port} }\n`);
      writeFileSync(join(d, "turns.yaml"), 'turns:\n  - text: "done"\n');
      return d;
    },
    async serve(dir, args = []) {
      const sp = await spawnServe([process.execPath, MAIN, "serve", "--port", "0", ...args, "--data-dir", dir]);
      procs.push(sp.proc);
      return sp;
    },
    track(p) {
      procs.push(p);
      return p;
    },
  };
}

/**
 * Runs the CLI from source as `bun src/main.ts …args --data-dir DIR` (cwd DIR, stdin closed) with neither
 * `$AIRLOCK_URL` nor `$AIRLOCK_HOME` set, NO_COLOR=1, until it exits. Returns its stdout, stderr and exit code.
 */
export async function airlockClient(dir: string, args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  const p = Bun.spawn([process.execPath, MAIN, ...args, "--data-dir", dir], {
    cwd: dir,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, AIRLOCK_HOME: "", AIRLOCK_URL: "", NO_COLOR: "1" },
  });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { stdout, stderr, code };
}

/**
 * A script for `bun -e SCRIPT PORT`: a server that binds 127.0.0.1:PORT as soon as it is free (a bind tried every
 * 2 ms), prints `bound`, then prints `AUTH <Authorization header or -> <path>` for every request it gets and answers
 * `{"actions":[],"schedules":[]}` (as airlock's lists would); it exits on its own after 30 s.
 */
export const SQUATTER_WHEN_FREE = `
const port = Number(process.argv[1]);
for (;;) {
  try {
    Bun.serve({ hostname: "127.0.0.1", port, fetch(r) {
      console.log("AUTH " + (r.headers.get("authorization") ?? "-") + " " + new URL(r.url).pathname);
      return Response.json({ actions: [], schedules: [] });
    } });
    console.log("bound");
    break;
  } catch { await Bun.sleep(2); }
}
setTimeout(() => process.exit(0), 30000);
`;

/** Whether this machine has an IPv6 loopback to bind (tests of `::1` skip without one). */
export function hasIpv6Loopback(): boolean {
  try {
    Bun.serve({ hostname: "::1", port: 0, fetch: () => new Response("") }).stop(true);
    return true;
  } catch {
    return false;
  }
}
