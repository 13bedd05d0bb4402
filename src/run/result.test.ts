import { describe, expect, test } from "bun:test";
import { headlessStatus } from "./result.ts";

describe("headlessStatus", () => {
  test("a run over its token budget is failed, even when a call needing a person was refused", () => {
    const refused = [{ code: "no_human_surface" }];
    expect(headlessStatus({ status: "failed", answer: null, error: { code: "token_budget" } }, refused)).toBe("failed");
    // any other failure with such a refusal stays blocked
    expect(headlessStatus({ status: "failed", answer: null, error: { code: "provider_error" } }, refused)).toBe("blocked");
  });
});
