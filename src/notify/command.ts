/**
 * @module notify/command
 * One notify command: `/bin/sh -c COMMAND` with the event's JSON on stdin (one line), run exactly as a
 * hook is (hook/run.ts `runHookProcess`: the launcher's one plan with `HOOK_PROCESS` — the network and
 * ordinary file access, but no capabilities, its own PID namespace, dies with airlock, the data dir's
 * tokens and database shown empty — the sanitized environment, its own process group, and a deadline
 * after which the whole group is killed). Its output is dropped (stderr's first line names a failure).
 * Never throws: the outcome says what happened.
 */
import { runHookProcess } from "../hook/run.ts";
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

/**
 * Runs `command` for `n`: stdin = `n` as one JSON line, env = sanitized + `AIRLOCK_NOTIFY_EVENT`, deadline
 * `timeoutMs` (then SIGKILL to its process group and to any process still holding its output). Exit 0 is
 * success; any other end is a failure whose `why` names the exit code or signal and stderr's first line.
 * @param signal aborting it (the runtime closing) kills the command.
 */
export async function runNotifyCommand(command: string, n: Notification, timeoutMs: number, launch: CommandLaunch, signal?: AbortSignal): Promise<DeliveryOutcome> {
  const r = await runHookProcess(command, n, {
    cwd: launch.cwd,
    timeoutS: timeoutMs / 1000,
    ...(signal ? { signal } : {}),
    env: { ...launch.extraEnv, AIRLOCK_NOTIFY_EVENT: n.event },
    launch: { dataDir: launch.dataDir, allowUnenforced: launch.allowUnenforced, ...(launch.bwrapPath !== undefined ? { bwrapPath: launch.bwrapPath } : {}) },
    label: "notify command",
    stopped: "airlock is shutting down",
    newline: true,
  });
  switch (r.kind) {
    case "failed":
      return { ok: false, attempts: 1, why: r.reason };
    case "exited": {
      if (r.code === 0) return { ok: true, attempts: 1 };
      const first = r.stderr.split("\n").find((l) => l.trim() !== "")?.trim().slice(0, 200);
      return { ok: false, attempts: 1, why: `${r.code !== null ? `exited with ${r.code}` : `ended by ${r.signal}`}${first ? `: ${first}` : ""}` };
    }
    default: {
      const never: never = r;
      return never;
    }
  }
}
