import { describe, expect, test } from "bun:test";
import { hasElevationRequest, isStrictlyWider, POLICIES, validateElevation } from "./policy.ts";

describe("policy.isStrictlyWider", () => {
  test("orders read-only < workspace-write < danger-full-access, and nothing is wider than itself", () => {
    const wider = POLICIES.flatMap((a) => POLICIES.filter((b) => isStrictlyWider(a, b)).map((b) => `${a}>${b}`));
    expect(wider).toEqual(["workspace-write>read-only", "danger-full-access>read-only", "danger-full-access>workspace-write"]);
  });
});

describe("policy.hasElevationRequest", () => {
  test("is true when sandbox_permissions is present with any value, false otherwise", () => {
    expect(hasElevationRequest({ command: "x", sandbox_permissions: "danger-full-access" })).toBe(true);
    expect(hasElevationRequest({ sandbox_permissions: null })).toBe(true);
    expect(hasElevationRequest({ command: "x", justification: "why" })).toBe(false);
    expect(hasElevationRequest(null)).toBe(false);
    expect(hasElevationRequest("sandbox_permissions")).toBe(false);
  });
});

describe("policy.validateElevation", () => {
  const code = (r: ReturnType<typeof validateElevation>) => (r.ok ? `ok:${r.policy}` : r.error.code);

  test("accepts a strictly wider known policy with a justification", () => {
    expect(validateElevation("read-only", { sandbox_permissions: "workspace-write", justification: "build writes dist/" })).toEqual({ ok: true, policy: "workspace-write" });
    expect(code(validateElevation("workspace-write", { sandbox_permissions: "danger-full-access", justification: "needs the network" }))).toBe("ok:danger-full-access");
  });

  test("refuses an unknown policy with elevation_invalid", () => {
    expect(code(validateElevation("read-only", { sandbox_permissions: "root", justification: "x" }))).toBe("elevation_invalid");
    expect(code(validateElevation("read-only", { sandbox_permissions: 3, justification: "x" }))).toBe("elevation_invalid");
    expect(code(validateElevation("read-only", { justification: "x" }))).toBe("elevation_invalid");
  });

  test("refuses a missing or blank justification with elevation_missing_justification", () => {
    expect(code(validateElevation("read-only", { sandbox_permissions: "workspace-write" }))).toBe("elevation_missing_justification");
    expect(code(validateElevation("read-only", { sandbox_permissions: "workspace-write", justification: "   " }))).toBe("elevation_missing_justification");
    expect(code(validateElevation("read-only", { sandbox_permissions: "workspace-write", justification: 42 }))).toBe("elevation_missing_justification");
  });

  test("refuses the same or a narrower policy with elevation_not_wider", () => {
    expect(code(validateElevation("workspace-write", { sandbox_permissions: "workspace-write", justification: "x" }))).toBe("elevation_not_wider");
    expect(code(validateElevation("workspace-write", { sandbox_permissions: "read-only", justification: "x" }))).toBe("elevation_not_wider");
    expect(code(validateElevation("danger-full-access", { sandbox_permissions: "danger-full-access", justification: "x" }))).toBe("elevation_not_wider");
  });

  test("error messages say what to do", () => {
    const r = validateElevation("workspace-write", { sandbox_permissions: "read-only", justification: "x" });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error.message).toContain("not wider than the session's policy \"workspace-write\"");
  });
});
