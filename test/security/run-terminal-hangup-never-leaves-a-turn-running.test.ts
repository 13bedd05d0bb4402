/**
 * The terminal of an attended `airlock run` closes while a card waits at its prompt (the window closed, ssh
 * dropped). The kernel hangs the terminal up: SIGHUP, and reads of stdin fail (EIO). `airlock run` had no
 * SIGHUP handler, so it died at once: the turn stayed `running` and the card `pending` in the store until some
 * later airlock process happened to start on that data dir (a running `airlock serve` listed the dead card).
 * And where SIGHUP is ignored (a wrapper's `trap '' HUP`), the failing reads never ended the prompt: the run
 * waited on a card nobody could see until its TTL. A hang-up is the end of the terminal: the turn is cancelled
 * (as SIGTERM: stored `cancelled`, the card withdrawn, exit 130), and a read error is the end of stdin.
 * Real processes: a PTY made by util-linux `script`, closed by killing `script`.
 */
import { afterAll, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { airlockRun, MAIN, QUESTION, runInPty, scriptedDataDir, tempDirs } from "../run-in-pty.ts";
import { turnStatuses } from "../turn-statuses.ts";

const tempDir = tempDirs();
const started: number[] = [];
afterAll(() => {
  for (const pid of started) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {}
  }
});

/** A data dir whose model writes a.txt, then b.txt (a shell call each), then says "done"; `mode: smart`. Returns it and its ws. */
function twoWrites(prefix: string): { dir: string; ws: string } {
  const dir = tempDir(prefix);
  const ws = scriptedDataDir(
    dir,
    "turns:\n" +
      ["a", "b"].map((f) => `  - tool_calls:\n      - name: developer__shell\n        arguments: { command: "echo hi > ${f}.txt" }\n`).join("") +
      '  - text: "done"\n',
    "provider: { name: scripted, script: turns.yaml }\nmode: smart\n",
  );
  return { dir, ws };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Starts `airlock run` in a PTY (`prefix` runs first in its shell, e.g. `trap "" HUP`; with `newSession`, in a
 * session of its own), closes the terminal once the question is on screen, and waits up to 15 s for airlock to
 * end. Returns whether it ended, and the dir.
 */
async function closeTerminalAtPrompt(prefix: string, newSession = false): Promise<{ ended: boolean; dir: string; ws: string }> {
  const { dir, ws } = twoWrites("airlock-run-hup-");
  const pidFile = join(dir, "pid");
  const cmd = `${prefix} echo $$ > ${pidFile}; exec ${airlockRun(dir, "write them")}`;
  // newSession: airlock in a session of its own (setsid), so no SIGHUP reaches it: only its stdin ends
  const shell = newSession ? `exec setsid -w sh -c '${cmd}'` : cmd;
  // at the question the terminal closes: `script` is killed, its master side goes away
  const { screen } = await runInPty({ cmd: shell, cwd: ws, killAfterMs: 30_000, onScreen: (s) => (s.includes(QUESTION) ? "stop" : undefined) });
  expect(screen).toContain(QUESTION);
  const pid = Number(readFileSync(pidFile, "utf8"));
  started.push(pid);
  for (let i = 0; i < 60 && alive(pid); i++) await Bun.sleep(250);
  return { ended: !alive(pid), dir, ws };
}

test("the terminal closes at the prompt: the turn ends and is stored so, not left running", async () => {
  const { ended, dir, ws } = await closeTerminalAtPrompt("");
  expect(ended).toBe(true);
  // SIGHUP cancels the turn; the end of stdin that comes first is the terminal going away too (not a Ctrl-D:
  // the card is not denied and the model does not carry on), so the turn is cancelled whichever wins
  expect(await turnStatuses(dir)).toEqual(["cancelled"]);
  expect(existsSync(join(ws, "a.txt"))).toBe(false);
});

test("with SIGHUP ignored, the terminal closing at the prompt ends the run; nothing waits on a card nobody sees", async () => {
  const { ended, dir, ws } = await closeTerminalAtPrompt(`trap "" HUP;`);
  expect(ended).toBe(true);
  expect(await turnStatuses(dir)).toEqual(["cancelled"]);
  expect(existsSync(join(ws, "a.txt"))).toBe(false);
  expect(existsSync(join(ws, "b.txt"))).toBe(false);
});

test("where no SIGHUP reaches airlock (its own session), the terminal closing at the prompt is a hang-up all the same: no crash, the turn is cancelled and stored so", async () => {
  // readline's close on the end of stdin restores the terminal's mode, which fails (EIO) on a hung-up terminal:
  // that error, unlistened, ended the process with a stack trace before the turn's end was stored. And the end
  // of stdin there was taken for a Ctrl-D: the card denied `stdin_closed`, the model carried on, `completed`
  const { ended, dir, ws } = await closeTerminalAtPrompt("", true);
  expect(ended).toBe(true);
  expect(await turnStatuses(dir)).toEqual(["cancelled"]);
  expect(existsSync(join(ws, "a.txt"))).toBe(false);
  expect(existsSync(join(ws, "b.txt"))).toBe(false);
});

/** Runs `sh_cmd` in a detached tmux session on a server of its own (socket `sock`); returns a function reading the pane. */
function tmuxRun(sock: string, cwd: string, shCmd: string): () => string {
  const r = Bun.spawnSync(["tmux", "-L", sock, "-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", "200", "-y", "50", shCmd], { cwd, env: { ...process.env, AIRLOCK_HOME: "", TMUX: "" } });
  expect(r.exitCode).toBe(0);
  return () => new TextDecoder().decode(Bun.spawnSync(["tmux", "-L", sock, "capture-pane", "-p", "-t", "t"]).stdout);
}

test.skipIf(!Bun.which("tmux"))("tmux kill-window with the card on screen: the terminal went away, not a Ctrl-D — the turn is cancelled (exit 130), the model does not carry on", async () => {
  const { dir, ws } = twoWrites("airlock-run-tmux-");
  const sock = `airlock-test-${process.pid}-${Date.now()}`;
  const rc = join(dir, "rc");
  // the shell stays (HUP ignored in it) to write airlock's exit code; airlock takes SIGHUP as it comes
  const capture = tmuxRun(sock, ws, `trap '' HUP; ${process.execPath} ${MAIN} run --data-dir ${dir} 'write them'; echo $? > ${rc}`);
  try {
    let screen = "";
    for (let i = 0; i < 120 && !screen.includes("allow? [y]once"); i++) {
      await Bun.sleep(250);
      screen = capture();
    }
    expect(screen).toContain("allow? [y]once");
    Bun.spawnSync(["tmux", "-L", sock, "kill-window", "-t", "t"]);
    for (let i = 0; i < 60 && !existsSync(rc); i++) await Bun.sleep(250);
    expect(readFileSync(rc, "utf8").trim()).toBe("130");
    expect(await turnStatuses(dir)).toEqual(["cancelled"]);
    expect(existsSync(join(ws, "a.txt"))).toBe(false);
    expect(existsSync(join(ws, "b.txt"))).toBe(false);
  } finally {
    Bun.spawnSync(["tmux", "-L", sock, "kill-server"]);
  }
});
