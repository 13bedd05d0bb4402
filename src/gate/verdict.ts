/**
 * @module gate/verdict
 * What an inspector says about one call, and how verdicts combine: deny > ask > allow, the strictest
 * wins (SPEC §5.2) — with one exception, as in Claude Code: the mode's own ask is answerable, and an
 * answering allow (a permission rule's allow, a hook's explicit allow) removes it. Nothing else is
 * loosened: a rule's ask or deny, a hook's ask or deny, the floor, per-tool config and elevation stand.
 */
import type { ErrorCode } from "../errors.ts";
import type { SandboxPolicyName } from "../config/schema.ts";
import { assertNever } from "../errors.ts";

/** Which inspector produced a verdict (shown on cards and refusals). */
export type InspectorName = "sensitive_ops" | "rule" | "hook" | "mode" | "tool_config" | "elevation";

/**
 * What a PreToolUse hook's answer asks for besides its verdict (Claude Code's hooks reference,
 * "PreToolUse decision control" and "Common JSON fields"); the gate acts on it (gate/gate.ts).
 */
export interface HookEffects {
  /**
   * `updatedInput`, mapped back to the tool's own argument names (raw: the gate validates them): the call
   * is judged again from the start with these arguments instead of the ones it had.
   */
  rewrite?: Record<string, unknown>;
  /** `systemMessage`: shown to the person (`hook_message` kind `system_message`), never to the model. */
  systemMessage?: string;
  /** `hookSpecificOutput.additionalContext`: given to the model with the call's result or refusal, marked as a hook's. */
  additionalContext?: string;
  /** `continue: false`: the call is not run and the turn stops; `stopReason` (or a default naming the hook). */
  stop?: string;
  /** `permissionDecisionReason` of an allow: Claude Code shows it to the person, not the model. */
  allowReason?: string;
}

export type Verdict =
  | {
      kind: "allow";
      inspector: InspectorName;
      /** The hook that allowed (inspector `hook`). */
      hook?: string;
      /** What the hook's answer asks besides the verdict (inspector `hook`). */
      effects?: HookEffects;
      /** The permission rule that allowed (inspector `rule`). */
      rule?: string;
      /** True for an allow that answers the mode's ask: a rule's allow, a hook's explicit `permissionDecision: "allow"`. */
      answersMode?: boolean;
      /** True when the rule is a session rule ("Allow for this session"), not the config's. */
      session?: boolean;
    }
  | { kind: "deny"; inspector: InspectorName; code: ErrorCode; reason: string; hook?: string; rule?: string; effects?: HookEffects }
  | {
      kind: "ask";
      inspector: InspectorName;
      reason: string;
      /** An `allow_once` needs the approver token (security floor, elevation). */
      userProof: boolean;
      /** Code used when no person can answer; default `no_human_surface` (hooks use hook_timeout/hook_error/hook_output_invalid). */
      code?: ErrorCode;
      /** Elevation: the policy the call runs under once allowed. */
      elevate?: SandboxPolicyName;
      hook?: string;
      /** The permission rule that asks (inspector `rule`). */
      rule?: string;
      effects?: HookEffects;
    };

export type AskVerdict = Extract<Verdict, { kind: "ask" }>;
export type DenyVerdict = Extract<Verdict, { kind: "deny" }>;

/** The combined judgement: one deny (the first), or all asks merged, or allow. */
export type Judgement =
  | { kind: "allow" }
  | { kind: "deny"; verdict: DenyVerdict }
  | { kind: "ask"; asks: AskVerdict[]; primary: AskVerdict; userProof: boolean; reason: string; elevate?: SandboxPolicyName };

/**
 * Whether an ask may be answered (removed) by an answering allow: only the mode's own ask is (Claude
 * Code: an allow rule or a hook's allow skips the permission prompt). Every other inspector's ask stands.
 */
export function isAnswerable(a: AskVerdict): boolean {
  switch (a.inspector) {
    case "mode":
      return true;
    case "sensitive_ops":
    case "rule":
    case "hook":
    case "tool_config":
    case "elevation":
      return false;
    default:
      return assertNever(a.inspector, "inspector");
  }
}

/**
 * Combines verdicts, strictest first: any deny → that deny (the first in inspector order);
 * else the asks, less the mode's when an answering allow (`answersMode`: a rule's allow, a hook's
 * explicit allow) is among the verdicts; any ask left → an ask that needs user proof if any ask does,
 * whose primary is the first proof-needing ask (else the first ask), and whose reason lists every ask's
 * reason; else allow. Pure.
 */
export function combine(verdicts: Verdict[]): Judgement {
  const deny = verdicts.find((v): v is DenyVerdict => v.kind === "deny");
  if (deny) return { kind: "deny", verdict: deny };
  const answered = verdicts.some((v) => v.kind === "allow" && v.answersMode === true);
  const asks = verdicts.filter((v): v is AskVerdict => v.kind === "ask" && !(answered && isAnswerable(v)));
  if (asks.length === 0) return { kind: "allow" };
  const primary = asks.find((a) => a.userProof) ?? asks[0]!;
  const reason = asks.map((a) => (asks.length > 1 ? `[${a.inspector}] ${a.reason}` : a.reason)).join("; ");
  const elevate = asks.find((a) => a.elevate)?.elevate;
  return { kind: "ask", asks, primary, userProof: asks.some((a) => a.userProof), reason, ...(elevate ? { elevate } : {}) };
}

/**
 * What a headless session refuses an `ask` judgement with (SPEC §5.2, §7): a call that needed a person
 * (any ask without its own failure code: the floor, the mode, a hook's `ask`, elevation) is refused
 * `no_human_surface` whatever else failed with it, so the run ends `blocked`; only when every ask is an
 * inspector's own failure (a hook's `hook_error`, `hook_timeout`, `hook_output_invalid`) does the first
 * failure's code stand. The reason lists every ask and failure as `[inspector] code: reason`.
 * @returns `{code, reason}`: the refusal's error code and its model-facing reason text.
 */
export function headlessRefusal(judgement: Extract<Judgement, { kind: "ask" }>): { code: ErrorCode; reason: string } {
  const needsPerson = judgement.asks.some((a) => !a.code);
  const code: ErrorCode = needsPerson ? "no_human_surface" : (judgement.asks.find((a) => a.code)?.code ?? "no_human_surface");
  const reason = judgement.asks.map((a) => `[${a.inspector}] ${a.code ? `${a.code}: ` : ""}${a.reason}`).join("; ");
  return { code, reason };
}
