/**
 * @module tool/mcp/backoff.test
 * restartPlan: delays grow with recent failures, are measured from the last one, and stop after the cap.
 */
import { describe, expect, test } from "bun:test";
import { DEFAULT_BACKOFF, restartPlan } from "./backoff.ts";

const P = { delaysMs: [0, 250, 1000], maxFailures: 4, windowMs: 10_000 };

describe("restartPlan", () => {
  test("no failure: start at once", () => {
    expect(restartPlan([], 5_000, P)).toEqual({ start: true, waitMs: 0 });
  });
  test("delays grow with the failures in the window, counted from the last failure", () => {
    expect(restartPlan([1_000], 1_000, P)).toEqual({ start: true, waitMs: 0 });
    expect(restartPlan([1_000, 2_000], 2_100, P)).toEqual({ start: true, waitMs: 150 });
    expect(restartPlan([1_000, 2_000, 3_000], 3_000, P)).toEqual({ start: true, waitMs: 1000 });
    expect(restartPlan([1_000, 2_000, 3_000], 3_600, P)).toEqual({ start: true, waitMs: 400 });
  });
  test("at the cap: no start until the oldest counted failure leaves the window", () => {
    expect(restartPlan([1_000, 2_000, 3_000, 4_000], 4_500, P)).toEqual({ start: false, retryAtMs: 11_000 });
    expect(restartPlan([1_000, 2_000, 3_000, 4_000, 5_000], 5_500, P)).toEqual({ start: false, retryAtMs: 12_000 });
  });
  test("failures outside the window are forgotten", () => {
    expect(restartPlan([1_000, 2_000, 3_000, 4_000], 13_500, P)).toEqual({ start: true, waitMs: 0 });
  });
  test("the default policy never restarts more than 5 times a minute and never waits over 4 s", () => {
    const fails: number[] = [];
    let now = 0;
    let starts = 0;
    for (let i = 0; i < 100; i++) {
      const plan = restartPlan(fails, now);
      if (plan.start) {
        expect(plan.waitMs).toBeLessThanOrEqual(4000);
        now += plan.waitMs;
        starts++;
        fails.push(now); // every start fails at once
      } else {
        expect(plan.retryAtMs).toBeGreaterThan(now);
        now = plan.retryAtMs;
      }
    }
    // 100 plans over `now` ms: at most maxFailures starts per window.
    expect(starts).toBeLessThanOrEqual(Math.ceil(now / DEFAULT_BACKOFF.windowMs + 1) * DEFAULT_BACKOFF.maxFailures);
  });
});
