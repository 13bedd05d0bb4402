/**
 * @module notify/command
 * One notify command: `/bin/sh -c COMMAND` with the event's JSON on stdin, confined the way a hook is (the
 * launcher's one plan with `HOOK_PROCESS`: the network and ordinary file access, but no capabilities, its own
 * PID namespace, dies with airlock, the data dir's tokens and database shown empty), the sanitized
 * environment, its own process group, and a deadline after which the whole group is killed. Its output is
 * read and dropped (the first line of stderr names a failure). Never throws: the outcome says what happened.
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { sanitizedEnv } from "../launcher/env.ts";
import { HOOK_PROCESS } from "../launcher/plan.ts";
import { BWRAP_INSTALL_HINT } from "../launcher/probe.ts";
import { resolveRealPath } from "../launcher/resolve.ts";
import { confinementFor, extraStdio, setUpSandbox } from "../launcher/setup.ts";
import { holdLifeline, killPipeHolders, outputPipes } from "../launcher/tree.ts";
import { assertNever } from "../errors.ts";
import type { Notification } from "./payload.ts";
import type { DeliveryOutcome } from "./webhook.ts";

/** How notify commands are confined and where they run. */
export interface CommandLaunch {
  /** The working directory (the config's folder, so `./notify.sh` is found beside airlock.yaml). */
  cwd: string;
  /** airlock's data dir: its tokens and database are shown empty to the command. */
  dataDir: string;
  /** `allow_unenforced`: where bubblewrap cannot run, run the command unconfined instead of failing. */
  allowUnenforced: boolean;
  /** Added to the sanitized environment (`AIRLOCK_CONFIG_DIR`). */
  extraEnv?: Record<string, string>;
  /** The bubblewrap binary; default `bwrap` on the sanitized PATH; `null` = missing (tests). */
  bwrapPath?: string | null;
}

/** Bytes of stderr kept to name a failure. */
const STDERR_KEPT = 4096;

/**
 * Runs `command` for `n`: stdin = `n` as one JSON line, env = sanitized + `AIRLOCK_NOTIFY_EVENT`, deadline
 * `timeoutMs` (then SIGKILL to its process group and to any process still holding its output). Exit 0 is
 * success; any other end is a failure whose `why` names the exit code or signal and stderr's first line.
 * @param signal aborting it (the runtime closing) kills the command.
 */
export async function runNotifyCommand(command: string, n: Notification, timeoutMs: number, launch: CommandLaunch, signal?: AbortSignal): Promise<DeliveryOutcome> {
  const env = sanitizedEnv({ ...launch.extraEnv, AIRLOCK_NOTIFY_EVENT: n.event });
  if (!existsSync(launch.cwd)) return { ok: false, attempts: 0, why: `its working directory ${launch.cwd} does not exist` };
  const sh = ["/bin/sh", "-c", command];
  let argv = sh;
  let stdio: ("pipe" | number)[] = [];
  let lifelineFd: number | undefined;
  const confinement = await confinementFor("danger-full-access", launch.bwrapPath, env.PATH, launch.allowUnenforced, HOOK_PROCESS);
  switch (confinement.kind) {
    case "refuse":
      return { ok: false, attempts: 0, why: `bubblewrap cannot run here, so the command could not be confined and was not run (allow_unenforced: true runs it unconfined). To fix: ${BWRAP_INSTALL_HINT}` };
    case "direct":
      break;
    case "bwrap": {
      const setup = await setUpSandbox(confinement, { policy: "danger-full-access", options: HOOK_PROCESS, argv: sh, cwd: resolveRealPath("/", launch.cwd), dataDirs: [launch.dataDir] });
      argv = setup.argv;
      stdio = extraStdio(setup);
      lifelineFd = setup.fds.lifeline;
      break;
    }
    default:
      return assertNever(confinement, "confinement");
  }
  return new Promise<DeliveryOutcome>((resolve) => {
    let settled = false;
    let stderr = "";
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn(argv[0]!, argv.slice(1), { cwd: launch.cwd, env, detached: true, stdio: ["pipe", "pipe", "pipe", ...stdio] });
    } catch (e) {
      resolve({ ok: false, attempts: 1, why: `could not start: ${(e as Error).message}` });
      return;
    }
    const pipes = outputPipes(child.pid);
    if (lifelineFd !== undefined) holdLifeline(child, lifelineFd);
    const killGroup = () => {
      if (child.pid !== undefined) {
        try {
          process.kill(-child.pid, "SIGKILL");
        } catch {
          /* already gone */
        }
      }
      killPipeHolders(pipes);
    };
    const finish = (o: DeliveryOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      killGroup();
      resolve(o);
    };
    const timer = setTimeout(() => finish({ ok: false, attempts: 1, why: `did not finish within ${timeoutMs / 1000} s; it was killed with its process group` }), timeoutMs);
    const onAbort = () => finish({ ok: false, attempts: 1, why: "stopped: airlock is shutting down" });
    signal?.addEventListener("abort", onAbort, { once: true });
    if (signal?.aborted) onAbort();
    child.on("error", (e) => finish({ ok: false, attempts: 1, why: `could not start: ${e.message}` }));
    child.stdout!.on("data", () => {});
    child.stderr!.on("data", (chunk: Buffer) => {
      if (stderr.length < STDERR_KEPT) stderr += chunk.toString("utf8");
    });
    child.stdin!.on("error", () => {}); // a command that does not read stdin is fine
    child.stdin!.end(`${JSON.stringify(n)}\n`);
    let exit: { code: number | null; signal: string | null } = { code: null, signal: null };
    child.on("exit", (code, sig) => {
      exit = { code, signal: sig };
      killGroup(); // background children die with it, and so do their copies of the pipes
    });
    child.on("close", () => {
      if (exit.code === 0) return finish({ ok: true, attempts: 1 });
      const first = stderr.split("\n").find((l) => l.trim() !== "")?.trim().slice(0, 200);
      finish({ ok: false, attempts: 1, why: `${exit.code !== null ? `exited with ${exit.code}` : `ended by ${exit.signal}`}${first ? `: ${first}` : ""}` });
    });
  });
}
