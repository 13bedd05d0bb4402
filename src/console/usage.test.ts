import { describe, expect, test } from "bun:test";
import { formatUsage, usageLine } from "./usage.ts";

describe("console usage line", () => {
  test("says the tokens in and out, cached and reasoning parts, and the calls without usage", () => {
    expect(formatUsage({ input_tokens: 12345, output_tokens: 67, cached_input_tokens: 10000, reasoning_tokens: 20, model_calls: 3, unreported_calls: 1 })).toBe(
      "12,345 in (10,000 cached) · 67 out (20 reasoning) · 3 model calls, 1 without usage",
    );
    expect(formatUsage({ input_tokens: 5, output_tokens: 1, model_calls: 1 })).toBe("5 in · 1 out · 1 model call");
  });

  test("unknown usage is said as such, never as zero; the subtree is shown only when subagents added to it", () => {
    expect(formatUsage(null)).toBe("not reported");
    expect(usageLine({ session: null, subtree: null })).toBe("tokens: not reported");
    const own = { input_tokens: 5, output_tokens: 1, model_calls: 1 };
    expect(usageLine({ session: own, subtree: own })).toBe("tokens: 5 in · 1 out · 1 model call");
    expect(usageLine({ session: own, subtree: { input_tokens: 9, output_tokens: 2, model_calls: 2 } })).toBe(
      "tokens: 5 in · 1 out · 1 model call — with subagents: 9 in · 2 out · 2 model calls",
    );
    expect(usageLine(null)).toBeNull();
  });
});
