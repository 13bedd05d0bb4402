/**
 * `airlock doctor`'s `config` check on a config that does not load: one failed check per problem, never one
 * per line of the error message (before, a duplicate key gave "4 checks failed": the error, the source line,
 * the caret and the "Fix the YAML syntax…" footer each became a failed check with "fix the key named").
 */
import { describe, expect, test } from "bun:test";
import { parseConfigText } from "../config/load.ts";
import { AirlockError } from "../errors.ts";
import { configFailureChecks } from "./doctor.ts";

function failure(text: string): unknown {
  try {
    parseConfigText(text, "airlock.yaml");
  } catch (e) {
    return e;
  }
  throw new Error("the config loaded");
}

describe("doctor: configFailureChecks", () => {
  test("a duplicate key is one failed check with its position and the source line", () => {
    const checks = configFailureChecks(failure("mode: smart\nsandbox: read-only\nmode: approve\n"));
    expect(checks).toHaveLength(1);
    expect(checks[0]!.status).toBe("fail");
    expect(checks[0]!.message).toContain("airlock.yaml:3:1: YAML syntax error: Map keys must be unique");
    expect(checks[0]!.message).toContain("(in: mode: approve)");
    expect(checks[0]!.fix).toContain("YAML syntax");
  });

  test("a tab used as indentation is one failed check, not one per follow-on parser error on that line", () => {
    const checks = configFailureChecks(failure("provider:\n\tname: scripted\n"));
    expect(checks).toHaveLength(1);
    expect(checks[0]!.message).toContain("airlock.yaml:2:1: YAML syntax error: Tabs are not allowed as indentation");
  });

  test("invalid keys: one failed check per key, without the message's header and footer", () => {
    const checks = configFailureChecks(failure("mode: smrt\nsandbx: read-only\nlimits:\n  shell_timeout_s: ten\n"));
    expect(checks.map((c) => c.message)).toEqual([
      expect.stringMatching(/^config_invalid: airlock\.yaml: mode: .*\(line 1, column 7\)$/),
      expect.stringMatching(/^config_invalid: airlock\.yaml: unknown key "sandbx" .*did you mean "sandbox".*\(line 2, column 1\)$/),
      expect.stringMatching(/^config_invalid: airlock\.yaml: limits\.shell_timeout_s: .*\(line 4, column 20\)$/),
    ]);
    expect(checks.every((c) => c.fix === "fix the key named (docs/configuration.md)")).toBe(true);
    expect(checks.some((c) => c.message.includes("is invalid (") || c.message.includes("and run again"))).toBe(false);
  });

  test("any other error (a missing --config file) is one failed check", () => {
    const checks = configFailureChecks(new AirlockError("config_invalid", "config file x.yaml (given by --config) does not exist; create it or drop --config"));
    expect(checks).toHaveLength(1);
    expect(checks[0]!.message).toBe("config_invalid: config file x.yaml (given by --config) does not exist; create it or drop --config");
  });
});
