/**
 * @module gate/verdict
 * What an inspector says about one call, and how verdicts combine: deny > ask > allow.
 * An allow never loosens another verdict; the strictest one wins (SPEC §5.2).
 */
import type { ErrorCode } from "../errors.ts";
import type { SandboxPolicyName } from "../config/schema.ts";

/** Which inspector produced a verdict (shown on cards and refusals). */
export type InspectorName = "sensitive_ops" | "hook" | "mode" | "tool_config" | "elevation";

export type Verdict =
  | { kind: "allow"; inspector: InspectorName }
  | { kind: "deny"; inspector: InspectorName; code: ErrorCode; reason: string; hook?: string }
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
    };

export type AskVerdict = Extract<Verdict, { kind: "ask" }>;
export type DenyVerdict = Extract<Verdict, { kind: "deny" }>;

/** The combined judgement: one deny (the first), or all asks merged, or allow. */
export type Judgement =
  | { kind: "allow" }
  | { kind: "deny"; verdict: DenyVerdict }
  | { kind: "ask"; asks: AskVerdict[]; primary: AskVerdict; userProof: boolean; reason: string; elevate?: SandboxPolicyName };

/**
 * Combines verdicts, strictest first: any deny → that deny (the first in inspector order);
 * else any ask → an ask that needs user proof if any ask does, whose primary is the first proof-needing
 * ask (else the first ask), and whose reason lists every ask's reason; else allow.
 */
export function combine(verdicts: Verdict[]): Judgement {
  const deny = verdicts.find((v): v is DenyVerdict => v.kind === "deny");
  if (deny) return { kind: "deny", verdict: deny };
  const asks = verdicts.filter((v): v is AskVerdict => v.kind === "ask");
  if (asks.length === 0) return { kind: "allow" };
  const primary = asks.find((a) => a.userProof) ?? asks[0]!;
  const reason = asks.map((a) => (asks.length > 1 ? `[${a.inspector}] ${a.reason}` : a.reason)).join("; ");
  const elevate = asks.find((a) => a.elevate)?.elevate;
  return { kind: "ask", asks, primary, userProof: asks.some((a) => a.userProof), reason, ...(elevate ? { elevate } : {}) };
}
