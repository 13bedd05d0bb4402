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
