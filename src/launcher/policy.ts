/**
 * @module launcher/policy
 * Sandbox policies (`read-only < workspace-write < danger-full-access`), their ordering, and the
 * per-call elevation rules of SPEC §9: a request names a strictly wider policy and a justification.
 */
import { SandboxPolicyName } from "../config/schema.ts";
import { AirlockError } from "../errors.ts";

/** A sandbox policy name (`read-only | workspace-write | danger-full-access`). */
export type SandboxPolicy = SandboxPolicyName;

/** All policies, narrowest first. */
export const POLICIES: readonly SandboxPolicy[] = ["read-only", "workspace-write", "danger-full-access"];

const RANK: Record<SandboxPolicy, number> = { "read-only": 0, "workspace-write": 1, "danger-full-access": 2 };

/** True when `a` grants strictly more than `b` (e.g. `workspace-write` over `read-only`). */
export function isStrictlyWider(a: SandboxPolicy, b: SandboxPolicy): boolean {
  return RANK[a] > RANK[b];
}

/** True when `policy` is enforced by bubblewrap (everything but `danger-full-access`). */
export function isConfined(policy: SandboxPolicy): boolean {
  return policy !== "danger-full-access";
}

/** True when a tool call's arguments carry an elevation request (`sandbox_permissions` present at all, any value). */
export function hasElevationRequest(args: unknown): boolean {
  return typeof args === "object" && args !== null && Object.hasOwn(args, "sandbox_permissions");
}

export type ElevationCheck = { ok: true; policy: SandboxPolicy } | { ok: false; error: AirlockError };

/**
 * Validates an elevation request against the session's policy (SPEC §9). Checks, in order:
 * `sandbox_permissions` is a known policy (`elevation_invalid`), `justification` is a non-empty
 * string (`elevation_missing_justification`), the policy is strictly wider than the session's
 * (`elevation_not_wider`). A valid request still needs a person's approval (the gate's card).
 */
export function validateElevation(
  sessionPolicy: SandboxPolicy,
  args: { sandbox_permissions?: unknown; justification?: unknown },
): ElevationCheck {
  const parsed = SandboxPolicyName.safeParse(args.sandbox_permissions);
  if (!parsed.success) {
    return {
      ok: false,
      error: new AirlockError(
        "elevation_invalid",
        `sandbox_permissions ${JSON.stringify(args.sandbox_permissions ?? null)} is not a sandbox policy; use one of ${POLICIES.join(", ")}`,
        { requested: args.sandbox_permissions ?? null },
      ),
    };
  }
  const requested = parsed.data;
  if (typeof args.justification !== "string" || args.justification.trim() === "") {
    return {
      ok: false,
      error: new AirlockError(
        "elevation_missing_justification",
        `sandbox_permissions "${requested}" needs a non-empty "justification" saying why this call must run with wider access`,
        { requested },
      ),
    };
  }
  if (!isStrictlyWider(requested, sessionPolicy)) {
    return {
      ok: false,
      error: new AirlockError(
        "elevation_not_wider",
        `sandbox_permissions "${requested}" is not wider than the session's policy "${sessionPolicy}"; drop sandbox_permissions or ask for a wider policy`,
        { requested, session_policy: sessionPolicy },
      ),
    };
  }
  return { ok: true, policy: requested };
}
