import { describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { HooksConfig } from "../config/schema.ts";
import { AirlockError, exitCodeFor } from "../errors.ts";
import { loadRecipe, parseParamFlags, parseRecipe, prepareRecipe, resolveParams, substitute, substitutePrompt } from "./recipe.ts";

function failure(fn: () => unknown): AirlockError {
  try {
    fn();
  } catch (e) {
    if (e instanceof AirlockError) return e;
    throw e;
  }
  throw new Error("expected an AirlockError");
}

const TRIAGE = `
name: nightly-triage
instructions: "Summarise the failing tests in {{ project }} (at most {{count}} of them)"
parameters:
  project: { type: string, default: "." }
  count: { type: integer }
  verbose: { type: boolean, default: false }
mode: autonomous
sandbox: read-only
`;

describe("recipe.parseRecipe", () => {
  test("parses the SPEC example shape with defaults filled", () => {
    const r = parseRecipe(TRIAGE, "triage.yaml");
    expect(r).toEqual({
      name: "nightly-triage",
      instructions: "Summarise the failing tests in {{ project }} (at most {{count}} of them)",
      parameters: {
        project: { type: "string", default: "." },
        count: { type: "integer" },
        verbose: { type: "boolean", default: false },
      },
      mode: "autonomous",
      sandbox: "read-only",
    });
  });

  test("a declared parameter type that does not exist is recipe_invalid naming the parameter, exit 2", () => {
    const e = failure(() => parseRecipe(`instructions: hi {{ count }}\nparameters: { count: { type: numbr } }\n`, "x.yaml"));
    expect(e.code).toBe("recipe_invalid");
    expect(exitCodeFor(e.code)).toBe(2);
    expect(e.message).toContain("recipe x.yaml: parameters.count.type");
    expect(e.message).toContain('"numbr"');
  });

  test("a default that does not match its type names the parameter", () => {
    const e = failure(() => parseRecipe(`instructions: hi\nparameters: { count: { type: number, default: ten } }\n`, "x.yaml"));
    expect(e.message).toContain("recipe x.yaml: parameters.count.default: expected number, got \"ten\"");
  });

  test("a placeholder naming no declared parameter is refused", () => {
    const e = failure(() => parseRecipe(`instructions: "fix {{ target }}"\n`, "x.yaml"));
    expect(e.code).toBe("recipe_invalid");
    expect(e.message).toContain("{{ target }} names no declared parameter");
  });

  test("a bad default and an undeclared placeholder read cleanly: no trailing ', got a mapping'", () => {
    const bad = failure(() => parseRecipe(`instructions: hi\nparameters:\n  strict: { type: boolean, default: nope }\n`, "x.yaml"));
    expect(bad.message).toBe('recipe x.yaml: parameters.strict.default: expected boolean, got "nope" (line 3, column 37); see docs/recipes.md');
    const typo = failure(() => parseRecipe(`instructions: "fix {{ projct }}"\nparameters: { project: { type: string } }\n`, "x.yaml"));
    expect(typo.message).toBe(
      "recipe x.yaml: instructions: {{ projct }} names no declared parameter; declare it under parameters (e.g. parameters: { projct: { type: string } }) (line 1, column 15); see docs/recipes.md",
    );
    for (const e of [bad, typo]) expect(e.message).not.toContain("got a mapping");
  });

  test("unknown keys, a bad mode and YAML syntax errors are recipe_invalid", () => {
    expect(failure(() => parseRecipe(`instructions: a\nmodee: smart\n`, "x.yaml")).message).toContain('unknown key "modee"');
    expect(failure(() => parseRecipe(`instructions: a\nmode: yolo\n`, "x.yaml")).message).toContain("mode: expected one of");
    expect(failure(() => parseRecipe(`instructions: [a\n`, "x.yaml")).code).toBe("recipe_invalid");
    expect(failure(() => parseRecipe(`- a\n`, "x.yaml")).message).toContain("expected a mapping");
    expect(failure(() => parseRecipe(`name: x\n`, "x.yaml")).message).toContain("instructions");
  });
});

describe("recipe.resolveParams", () => {
  const r = parseRecipe(TRIAGE, "triage.yaml");

  test("converts --param strings to the declared types and fills defaults", () => {
    expect(resolveParams(r, { count: "3", verbose: "yes" }, "t.yaml")).toEqual({ project: ".", count: 3, verbose: true });
    expect(resolveParams(r, { count: 7, project: "api" }, "t.yaml")).toEqual({ project: "api", count: 7, verbose: false });
  });

  test("a value of the wrong type names the parameter (SPEC §2 message shape)", () => {
    const e = failure(() => resolveParams(r, { count: "ten" }, "examples/x.yaml"));
    expect(e.code).toBe("recipe_invalid");
    expect(e.message).toBe('recipe examples/x.yaml: parameters.count: expected integer, got "ten"');
    expect(failure(() => resolveParams(r, { count: "2.5" }, "x")).message).toContain("parameters.count: expected integer");
    expect(failure(() => resolveParams(r, { count: "1", verbose: "maybe" }, "x")).message).toContain("parameters.verbose: expected boolean");
  });

  test("an unknown parameter and a missing required one are named", () => {
    expect(failure(() => resolveParams(r, { count: "1", colour: "red" }, "x")).message).toContain('unknown parameter "colour"');
    const missing = failure(() => resolveParams(r, {}, "x"));
    expect(missing.message).toContain('missing required parameter "count"');
    expect(missing.message).toContain("--param count=VALUE");
  });
});

describe("recipe.substitute and prepareRecipe", () => {
  test("substitutes in one pass; values holding braces are not expanded again", () => {
    expect(substitute("a {{x}} b {{ y }} {{x}}", { x: "{{ y }}", y: 2 })).toBe("a {{ y }} b 2 {{ y }}");
  });

  test("prepareRecipe renders the prompt and derives overrides, resolving paths against the recipe dir", () => {
    const dir = mkdtempSync(join(tmpdir(), "recipe-"));
    const file = join(dir, "r.yaml");
    writeFileSync(
      file,
      `instructions: "check {{ project }}"\nparameters: { project: { type: string } }\nprovider: { name: scripted, script: turns.yaml }\nmode: approve\nsandbox: read-only\nworkspace: ws\nhooks: { PreToolUse: [{ matcher: Bash, hooks: [{ type: command, command: ./h.sh }] }] }\n`,
    );
    const p = prepareRecipe(loadRecipe(file), { project: "api" });
    expect(p.prompt).toBe("check api");
    expect(p.workspace).toBe(join(dir, "ws"));
    expect(p.overrides).toEqual({
      mode: "approve",
      sandbox: "read-only",
      provider: { name: "scripted", script: join(dir, "turns.yaml") },
      hooks: { ...HooksConfig.parse({}), PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: "./h.sh", timeout: 60 }] }] },
    });
  });

  test("loadRecipe of a missing file is recipe_invalid saying so", () => {
    expect(failure(() => loadRecipe("/nonexistent/r.yaml")).message).toContain("cannot read the file (ENOENT)");
  });

  test("parseParamFlags splits at the first '=' and refuses a flag without one", () => {
    expect(parseParamFlags(["a=1", "b=x=y", "a=2"])).toEqual({ a: "2", b: "x=y" });
    expect(failure(() => parseParamFlags(["oops"])).code).toBe("usage");
  });
});

describe("recipe.substitutePrompt", () => {
  const r = parseRecipe(TRIAGE, "triage.yaml");
  const params = resolveParams(r, { count: "2" }, "triage.yaml");

  test("a PROMPT given with --recipe gets the recipe's {{ name }} substitution", () => {
    expect(substitutePrompt("look at {{project}} ({{ count }} max)", r, params, "triage.yaml")).toBe("look at . (2 max)");
    expect(substitutePrompt("no placeholders", r, params, "triage.yaml")).toBe("no placeholders");
  });

  test("a placeholder the recipe does not declare is the instructions' error, naming the prompt", () => {
    const e = failure(() => substitutePrompt("fix {{ projct }} and {{ projct }}", r, params, "triage.yaml"));
    expect(e.code).toBe("recipe_invalid");
    expect(exitCodeFor(e.code)).toBe(2);
    expect(e.message).toBe(
      "recipe triage.yaml: prompt: {{ projct }} names no declared parameter; declare it under parameters (e.g. parameters: { projct: { type: string } })",
    );
  });
});
