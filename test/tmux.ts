/**
 * @module test/tmux
 * A real terminal for tests: a detached `tmux` session on a private server socket (never the user's or
 * another test's, `-S` in a temp folder), its screen read with `capture-pane -p` and keys typed with `send-keys`. Tests wait on
 * what the screen shows, never on a clock.
 */
import { afterAll } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { waitFor } from "./processes.ts";

/** One tmux terminal running one command. */
export interface Terminal {
  /** The visible screen and its history as plain text (no colours). */
  screen(): string;
  /** Types keys: each argument is one `send-keys` key (`y`, `Enter`, `Escape`, `C-c`), or literal text with `literal`. */
  keys(keys: string[], literal?: boolean): void;
  /** Resolves once the screen matches `re` (returns the match); throws with the screen after `limitMs`. */
  waitScreen(re: RegExp, limitMs?: number): Promise<RegExpExecArray>;
  /** Whether the command still runs in the pane. */
  alive(): boolean;
  /** Ends the tmux server (and the command). */
  close(): void;
}

/**
 * Starts `argv` in a new detached tmux session (`width` × `height`, default 200 × 50) with `env`, on a
 * private socket in a temp folder of its own. An `afterAll` (or `close()`) kills the tmux server and removes the folder.
 */
export function openTerminal(argv: string[], opts: { env?: Record<string, string | undefined>; width?: number; height?: number; cwd?: string } = {}): Terminal {
  const dir = mkdtempSync(join(tmpdir(), "airlock-tmux-"));
  const socket = join(dir, "socket");
  const tmux = (...args: string[]): { code: number; out: string } => {
    const r = Bun.spawnSync(["tmux", "-S", socket, "-f", "/dev/null", ...args], { env: { ...process.env, ...opts.env, TMUX: undefined }, cwd: opts.cwd, stdout: "pipe", stderr: "pipe" });
    return { code: r.exitCode ?? -1, out: r.stdout.toString() + r.stderr.toString() };
  };
  const cmd = argv.map((a) => `'${a.replaceAll("'", `'\\''`)}'`).join(" ");
  const start = tmux("new-session", "-d", "-s", "t", "-x", String(opts.width ?? 200), "-y", String(opts.height ?? 50), `${cmd}; echo "[exited $?]"; sleep 600`);
  if (start.code !== 0) throw new Error(`tmux new-session failed: ${start.out}`);
  let closed = false;
  const close = (): void => {
    if (closed) return;
    closed = true;
    tmux("kill-server");
    rmSync(dir, { recursive: true, force: true });
  };
  afterAll(close);
  const screen = (): string => tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "t").out;
  return {
    screen,
    keys(keys, literal = false) {
      const r = tmux("send-keys", "-t", "t", ...(literal ? ["-l"] : []), ...keys);
      if (r.code !== 0) throw new Error(`tmux send-keys failed: ${r.out}`);
    },
    async waitScreen(re, limitMs = 60_000) {
      let m: RegExpExecArray | null = null;
      try {
        await waitFor(() => (m = re.exec(screen())) !== null, `the terminal to show ${re}`, limitMs, 50);
      } catch (e) {
        throw new Error(`${(e as Error).message}\n--- screen ---\n${screen()}`);
      }
      return m!;
    },
    alive: () => !/\[exited \d+\]/.test(screen()),
    close,
  };
}
