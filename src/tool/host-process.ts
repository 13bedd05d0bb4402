/**
 * @module tool/host-process
 * The glue between a tool call and the launcher: runs a host process for one call under the policy the
 * gate resolved for it (`ToolContext.policy`) and shapes the tool-facing result.
 */
import { AirlockError } from "../errors.ts";
import type { SandboxPolicy } from "../launcher/policy.ts";
import { launch, type LaunchResult } from "../launcher/spawn.ts";
import type { ToolContext } from "./tool.ts";

/** What host-process tools return to the model. */
export interface HostProcessResult {
  exit_code: number | null;
  stdout: string;
  stderr: string;
  timed_out: boolean;
  truncated: boolean;
  policy: SandboxPolicy;
  unconfined?: boolean;
  /** Why `unconfined` is set, and/or what repository metadata was quarantined after the call. */
  warning?: string;
  /** Repository metadata the process created, moved or replaced, renamed to a quarantine name: one line each. */
  quarantined?: string[];
}

/**
 * Runs `argv` for a tool call in the session workspace under the call's policy (`ctx.policy`) via
 * `launch`, hiding airlock's data dir, and shapes the result. `timeoutMs` in ms.
 * @throws AirlockError `cancelled` when the call's signal fired; everything `launch` throws passes through.
 */
export async function runHostProcess(
  ctx: ToolContext,
  o: { argv: string[]; stdin?: string; timeoutMs: number; extraEnv?: Record<string, string> },
): Promise<HostProcessResult> {
  const r: LaunchResult = await launch({
    policy: ctx.policy,
    argv: o.argv,
    cwd: ctx.session.workspace,
    workspace: ctx.session.workspace,
    stdin: o.stdin,
    timeoutMs: o.timeoutMs,
    maxOutputBytes: ctx.config.limits.max_output_bytes,
    signal: ctx.signal,
    extraEnv: o.extraEnv,
    config: ctx.config,
    hiddenPaths: ctx.dataDir ? [ctx.dataDir] : [],
  });
  if (r.cancelled) throw new AirlockError("cancelled", `${o.argv[0]} was cancelled; its process tree was killed`);
  const out: HostProcessResult = {
    exit_code: r.exit_code,
    stdout: r.stdout,
    stderr: r.stderr,
    timed_out: r.timed_out,
    truncated: r.truncated,
    policy: ctx.policy,
  };
  if (r.unconfined) out.unconfined = true;
  if (r.warning) out.warning = r.warning;
  if (r.quarantined) out.quarantined = r.quarantined;
  return out;
}
