/**
 * @module launcher/for-tool
 * The glue between a tool call and the launcher: which policy one call runs under (the session's,
 * or an elevation the gate approved for this call only) and the tool-facing result shape.
 */
import { AirlockError } from "../errors.ts";
import type { ToolContext } from "../tool/tool.ts";
import { hasElevationRequest, validateElevation, type SandboxPolicy } from "./policy.ts";
import { launch, type LaunchResult } from "./spawn.ts";

/**
 * The policy this call runs under: `ctx.elevatedPolicy` (set by the gate after a person approved
 * this exact call) or else the session's. An elevation request in `args` is validated first and an
 * invalid one throws its AirlockError (`elevation_invalid`, `elevation_missing_justification`,
 * `elevation_not_wider`); a valid one that the gate did not approve changes nothing.
 */
export function effectivePolicy(args: unknown, ctx: ToolContext): SandboxPolicy {
  if (hasElevationRequest(args)) {
    const check = validateElevation(ctx.session.sandbox, args as { sandbox_permissions?: unknown; justification?: unknown });
    if (!check.ok) throw check.error;
  }
  return ctx.elevatedPolicy ?? ctx.session.sandbox;
}

/** Airlock's data dir (tokens, database) from the runtime, to hide it from the process; none when unknown. */
function dataDirOf(runtime: unknown): string[] {
  const d = typeof runtime === "object" && runtime !== null ? (runtime as { dataDir?: unknown }).dataDir : undefined;
  return typeof d === "string" && d !== "" ? [d] : [];
}

/** What host-process tools return to the model. */
export interface HostProcessResult {
  exit_code: number | null;
  stdout: string;
  stderr: string;
  timed_out: boolean;
  truncated: boolean;
  policy: SandboxPolicy;
  unconfined?: boolean;
  warning?: string;
}

/**
 * Runs `argv` for a tool call in the session workspace under `policy` via `launch`, and shapes the
 * result. Throws `cancelled` when the call's signal fired; everything `launch` throws passes through.
 */
export async function runForTool(
  ctx: ToolContext,
  o: { policy: SandboxPolicy; argv: string[]; stdin?: string; timeoutMs: number; extraEnv?: Record<string, string> },
): Promise<HostProcessResult> {
  const r: LaunchResult = await launch({
    policy: o.policy,
    argv: o.argv,
    cwd: ctx.session.workspace,
    workspace: ctx.session.workspace,
    stdin: o.stdin,
    timeoutMs: o.timeoutMs,
    maxOutputBytes: ctx.config.limits.max_output_bytes,
    signal: ctx.signal,
    extraEnv: o.extraEnv,
    config: ctx.config,
    hiddenPaths: dataDirOf(ctx.runtime),
  });
  if (r.cancelled) throw new AirlockError("cancelled", `${o.argv[0]} was cancelled; its process tree was killed`);
  const out: HostProcessResult = {
    exit_code: r.exit_code,
    stdout: r.stdout,
    stderr: r.stderr,
    timed_out: r.timed_out,
    truncated: r.truncated,
    policy: o.policy,
  };
  if (r.unconfined) out.unconfined = true;
  if (r.warning) out.warning = r.warning;
  return out;
}
