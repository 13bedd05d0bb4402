/**
 * @module gate/inspectors/elevation
 * Per-call sandbox elevation (SPEC §9): arguments carrying `sandbox_permissions` are validated
 * (src/launcher/policy.ts); an invalid request is refused with its code, a valid one asks with user
 * proof and, once allowed, runs that one call under the wider policy.
 */
import type { SandboxPolicyName } from "../../config/schema.ts";
import { hasElevationRequest, validateElevation } from "../../launcher/policy.ts";
import type { Verdict } from "../verdict.ts";

/** Allow when no elevation is requested; deny (elevation_*) when invalid; ask with user proof and `elevate` when valid. */
export function elevationVerdict(sessionPolicy: SandboxPolicyName, rawArgs: unknown): Verdict {
  if (!hasElevationRequest(rawArgs)) return { kind: "allow", inspector: "elevation" };
  const r = validateElevation(sessionPolicy, rawArgs as { sandbox_permissions?: unknown; justification?: unknown });
  if (!r.ok) return { kind: "deny", inspector: "elevation", code: r.error.code, reason: r.error.message };
  const why = String((rawArgs as { justification: string }).justification).trim();
  return {
    kind: "ask",
    inspector: "elevation",
    userProof: true,
    elevate: r.policy,
    reason: `asks to run this one call under sandbox "${r.policy}" instead of "${sessionPolicy}": ${why}`,
  };
}

/** The policy a call asks to run under: a valid elevation request's, else the session's. */
export function requestedPolicy(sessionPolicy: SandboxPolicyName, rawArgs: unknown): SandboxPolicyName {
  const v = elevationVerdict(sessionPolicy, rawArgs);
  return v.kind === "ask" && v.elevate ? v.elevate : sessionPolicy;
}
