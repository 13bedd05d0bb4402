/**
 * `airlock run` from source in a real PTY (util-linux `script -qec CMD /dev/null`), for tests of the terminal
 * card: a data dir with the scripted provider (turns.yaml + airlock.yaml), the run spawned in the PTY, its screen
 * (stdout of `script`: what the terminal shows, stdout and stderr of airlock together) read chunk by chunk, and
 * keys typed when something appears.
 *
 * What it kills and when: the `script` process (and with it the PTY, whose hang-up ends airlock) with SIGKILL
 * after `killAfterMs` (default 40,000 ms) if it has not ended by then, and at once when `onScreen` returns
 * "stop". Nothing else. Temporary dirs made by `tempDirs()` are removed in the test file's afterAll.
 */
import { afterAll } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";

/** The entry point run from source. */
export const MAIN = join(import.meta.dir, "..", "src", "main.ts");
/** The question under an attended card; it is on screen once the card can be answered. */
export const QUESTION = "allow? [y]once";

/**
 * Call at a test file's top level. Returns `make(prefix)`: a fresh dir under the system temp dir, whose name
 * starts with `prefix`, removed (recursively) after the file's tests.
 */
export function tempDirs(): (prefix: string) => string {
  const dirs: string[] = [];
  afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
  return (prefix) => {
    const dir = mkdtempSync(join(tmpdir(), prefix));
    dirs.push(dir);
    return dir;
  };
}

/**
 * Makes `dataDir` a data dir for the scripted provider: writes `turns` to turns.yaml and `config` to
 * airlock.yaml — each a string written as is, or an object written as YAML (for `config`, after
 * `provider: { name: scripted, script: turns.yaml }`). Returns `ws`, the workspace `<dataDir>/ws` (created).
 */
export function scriptedDataDir(dataDir: string, turns: string | object, config: string | Record<string, unknown>): string {
  writeFileSync(join(dataDir, "turns.yaml"), typeof turns === "string" ? turns : stringify(turns));
  writeFileSync(
    join(dataDir, "airlock.yaml"),
    typeof config === "string" ? config : stringify({ provider: { name: "scripted", script: "turns.yaml" }, ...config }),
  );
  const ws = join(dataDir, "ws");
  mkdirSync(ws, { recursive: true });
  return ws;
}

/**
 * The shell command `<bun> src/main.ts run --data-dir DATADIR [--workspace WS] "PROMPT"`. Nothing is escaped: paths
 * without spaces, a prompt of plain words (double quotes, so the command also fits inside `sh -c '…'`).
 */
export function airlockRun(dataDir: string, prompt: string, workspace?: string): string {
  return `${process.execPath} ${MAIN} run --data-dir ${dataDir}${workspace === undefined ? "" : ` --workspace ${workspace}`} "${prompt}"`;
}

/** Types `keys` into the PTY; resolves once they are flushed to it. */
export type Type = (keys: string) => Promise<void>;

export interface PtyOptions {
  /** The shell command run in the PTY (by `sh -c`, via `script -qec`). */
  cmd: string;
  /** The working directory. */
  cwd: string;
  /** Added to the environment, after `process.env` and `AIRLOCK_HOME: ""`. */
  env?: Record<string, string>;
  /** Milliseconds until `script` is killed (SIGKILL) if it has not ended; default 40,000. */
  killAfterMs?: number;
  /**
   * Called with the whole screen so far after each chunk (decoded as a UTF-8 stream); reading waits for a
   * returned promise. `end()` closes the PTY's input (`script` passes the end of its stdin on). Returning "stop"
   * stops reading and kills `script` (the terminal goes away).
   */
  onScreen?: (screen: string, type: Type, end: () => Promise<void>) => void | "stop" | Promise<void | "stop">;
}

/**
 * Runs `cmd` in a PTY until it ends (or is killed). Returns the exit code of `script`, the screen, and whether
 * the `killAfterMs` guard killed it.
 */
export async function runInPty(o: PtyOptions): Promise<{ code: number; screen: string; killed: boolean }> {
  const p = Bun.spawn(["script", "-qec", o.cmd, "/dev/null"], {
    cwd: o.cwd,
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, AIRLOCK_HOME: "", ...o.env },
  });
  let killed = false;
  const timer = setTimeout(() => {
    killed = true;
    p.kill("SIGKILL");
  }, o.killAfterMs ?? 40_000);
  const type: Type = async (keys) => {
    p.stdin.write(keys);
    await p.stdin.flush();
  };
  const end = async () => {
    await p.stdin.end();
  };
  let screen = "";
  const reader = p.stdout.getReader();
  const dec = new TextDecoder();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    screen += dec.decode(value, { stream: true });
    if ((await o.onScreen?.(screen, type, end)) === "stop") {
      p.kill("SIGKILL");
      break;
    }
  }
  clearTimeout(timer);
  return { code: await p.exited, screen, killed };
}

/**
 * Runs `cmd` in a PTY, typing `answer(i)` (i from 0) for the i-th `question` as soon as it is on screen.
 * Returns what {@link runInPty} returns, and how many questions were answered.
 */
export async function runAnswering(
  o: Omit<PtyOptions, "onScreen">,
  answer: (i: number) => string,
  question = QUESTION,
): Promise<{ code: number; screen: string; killed: boolean; answered: number }> {
  let answered = 0;
  const r = await runInPty({
    ...o,
    onScreen: async (screen, type) => {
      while (answered < screen.split(question).length - 1) {
        const keys = answer(answered);
        answered++;
        await type(keys);
      }
    },
  });
  return { ...r, answered };
}
