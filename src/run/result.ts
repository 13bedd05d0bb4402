/**
 * @module run/result
 * The headless result object (SPEC §7) and the rules that derive its `status` and the exit code of
 * `airlock run` (SPEC §2) from how the turn ended. Pure; shared by `airlock run`, the scheduler and tests.
 */
import { z } from "zod";
import { EXIT, exitCodeFor, type AirlockError, assertNever } from "../errors.ts";
import { UsageSummary } from "../session/types.ts";

/** One refused call of the run (direct, from a script, or from a subagent at any depth). */
export const RefusedCallEntry = z.object({
  tool: z.string(),
  code: z.string(),
  reason: z.string(),
  session_id: z.string(),
  call_id: z.string().optional(),
  inspector: z.string().optional(),
  from_script: z.boolean().optional(),
});
export type RefusedCallEntry = z.infer<typeof RefusedCallEntry>;

export const ResultStatus = z.enum(["completed", "failed", "blocked", "cancelled"]);
export type ResultStatus = z.infer<typeof ResultStatus>;

/** SPEC §7. `result` is the final answer (null when there is none). */
export const ResultObject = z.object({
  session_id: z.string().nullable(),
  status: ResultStatus,
  result: z.string().nullable(),
  tool_calls: z.number().int().min(0),
  refused_calls: z.array(RefusedCallEntry),
  error: z.object({ code: z.string(), message: z.string() }).passthrough().nullable(),
  duration_ms: z.number().min(0),
  /**
   * Tokens of every model call of the run's session tree (root and subagents at any depth), as the
   * providers reported them; null when none reported usage (never zeros). Absent for a run that never started.
   */
  usage: UsageSummary.nullable().optional(),
  /**
   * What the person should know about the run's hooks (Runtime.hookNotes): a workspace's Claude Code hooks
   * not run because the folder is not trusted (with the `airlock trust DIR` that would run them), events and
   * fields not honoured. Absent when there is nothing to say.
   */
  warnings: z.array(z.string()).optional(),
});
export type ResultObject = z.infer<typeof ResultObject>;

/**
 * The status of a finished headless run.
 *
 * Rule (docs/recipes.md, "When is a run blocked"): a turn that was cancelled is `cancelled`. Otherwise the
 * run is `blocked` when BOTH (a) the turn failed, or it completed with an empty or absent answer (after
 * trimming whitespace), AND (b) at least one call anywhere in the run's session tree was refused with
 * `no_human_surface`. Else a completed turn is `completed` and a failed one `failed`. A run that got
 * refusals but still produced an answer is `completed`: the model went on without the person. A run that
 * crossed `limits.max_tokens_per_run` (`error.code` `token_budget`) is `failed` whatever was refused.
 */
export function headlessStatus(
  turn: { status: "completed" | "failed" | "cancelled"; answer?: string | null; error?: { code: string } | null },
  refused: readonly { code: string }[],
): ResultStatus {
  if (turn.status === "cancelled") return "cancelled";
  if (turn.error?.code === "token_budget") return "failed";
  const noAnswer = turn.status === "failed" || !turn.answer || turn.answer.trim() === "";
  if (noAnswer && refused.some((r) => r.code === "no_human_surface")) return "blocked";
  return turn.status;
}

/** Exit code of `airlock run` for a result status (SPEC §2): 0 completed, 1 failed, 3 blocked, 130 cancelled. */
export function exitCodeForStatus(status: ResultStatus): number {
  switch (status) {
    case "completed":
      return EXIT.ok;
    case "failed":
      return EXIT.failed;
    case "blocked":
      return EXIT.blocked;
    case "cancelled":
      return EXIT.cancelled;
    default:
      return assertNever(status, "run status");
  }
}

/** The result object of a run that never started (`earlyResult`): also `status: "invalid"` (exit 2). */
export type EarlyResultObject = Omit<ResultObject, "status"> & { status: ResultStatus | "invalid" };

/**
 * The result object of a run that ended before its turn started (SPEC §7): no session, no answer, no
 * calls, `error: {code, message}` from `err`. `status` follows the error's exit code (`exitCodeFor`):
 * `invalid` for exit 2 (usage, config, recipe, workspace), `blocked` for 3, `cancelled` for 130, else
 * `failed` — matching the exit code the CLI returns for `err`.
 * @param durationMs wall time from the start of the command, ms.
 */
export function earlyResult(err: AirlockError, durationMs: number): EarlyResultObject {
  const exit = exitCodeFor(err.code);
  const status: EarlyResultObject["status"] = exit === EXIT.usage ? "invalid" : exit === EXIT.blocked ? "blocked" : exit === EXIT.cancelled ? "cancelled" : "failed";
  return {
    session_id: null,
    status,
    result: null,
    tool_calls: 0,
    refused_calls: [],
    error: { code: err.code, message: err.message },
    duration_ms: Math.max(0, durationMs),
  };
}
