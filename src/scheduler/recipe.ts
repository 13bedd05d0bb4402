/**
 * @module scheduler/recipe
 * Recipes (SPEC §8): a YAML file naming instructions, typed parameters with defaults, and the
 * mode / sandbox / provider / hooks that override the config for one run. Parsing, parameter
 * checking and `{{ name }}` substitution are pure; every failure is `recipe_invalid` (exit 2).
 */
import { dirname, isAbsolute, resolve } from "node:path";
import { z } from "zod";
import { HooksConfig, Mode, ProviderName, SandboxPolicyName } from "../config/schema.ts";
import { describeValue, formatZodIssues, parseYaml, type ConfigOverrides } from "../config/load.ts";
import { readRegularFile } from "../config/paths.ts";
import { AirlockError, assertNever } from "../errors.ts";

/** The type of a recipe parameter. Values from `--param` are strings and are converted to it. */
export const ParamType = z.enum(["string", "number", "integer", "boolean"]);
export type ParamType = z.infer<typeof ParamType>;

export type ParamValue = string | number | boolean;

/** One declared parameter. No `default` means the parameter is required. */
export const RecipeParameter = z.strictObject({
  type: ParamType.default("string"),
  default: z.union([z.string(), z.number(), z.boolean()]).optional(),
  description: z.string().optional(),
});
export type RecipeParameter = z.infer<typeof RecipeParameter>;

/** A recipe's provider block: any subset of the config's provider keys. */
export const RecipeProvider = z.strictObject({
  name: ProviderName.optional(),
  model: z.string().min(1).optional(),
  base_url: z.url().optional(),
  api_key_env: z.string().min(1).optional(),
  /** scripted provider only; a relative path resolves against the recipe's directory. */
  script: z.string().min(1).optional(),
  max_retries: z.number().int().min(0).max(10).optional(),
  timeout_s: z.number().positive().optional(),
});

/** Parameter names: letters, digits, `_` and `-`, starting with a letter or `_`. */
const PARAM_NAME = /^[A-Za-z_][A-Za-z0-9_-]*$/;
/** `{{ name }}` with optional spaces inside the braces. */
const PLACEHOLDER = /\{\{\s*([A-Za-z_][A-Za-z0-9_-]*)\s*\}\}/g;

export const Recipe = z
  .strictObject({
    name: z.string().min(1).optional(),
    description: z.string().optional(),
    /** The prompt of the run, with `{{ name }}` placeholders. */
    instructions: z.string().min(1),
    parameters: z.record(z.string().regex(PARAM_NAME, "parameter names are letters, digits, '_' and '-'"), RecipeParameter).default({}),
    provider: RecipeProvider.optional(),
    mode: Mode.optional(),
    sandbox: SandboxPolicyName.optional(),
    hooks: HooksConfig.optional(),
    /** Workspace of the run; a relative path resolves against the recipe's directory. Default: the caller's. */
    workspace: z.string().min(1).optional(),
  })
  .superRefine((r, ctx) => {
    for (const [name, p] of Object.entries(r.parameters)) {
      if (p.default === undefined) continue;
      const err = checkValue(p.type, p.default);
      if (err) ctx.addIssue({ code: "custom", path: ["parameters", name, "default"], message: `${err}, got ${describeValue(p.default)}` });
    }
    for (const name of undeclaredPlaceholders(r.instructions, r.parameters)) {
      ctx.addIssue({ code: "custom", path: ["instructions"], message: undeclaredMessage(name) });
    }
  });

/** The names of `{{ name }}` placeholders in `text` that `parameters` does not declare, in order of appearance. */
function undeclaredPlaceholders(text: string, parameters: Readonly<Record<string, unknown>>): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(PLACEHOLDER)) if (!(m[1]! in parameters) && !out.includes(m[1]!)) out.push(m[1]!);
  return out;
}

/** Why a placeholder is refused, shared by the recipe's `instructions` and a PROMPT given with `--recipe`. */
function undeclaredMessage(name: string): string {
  return `{{ ${name} }} names no declared parameter; declare it under parameters (e.g. parameters: { ${name}: { type: string } })`;
}
export type Recipe = z.infer<typeof Recipe>;

/** A recipe read from disk: the parsed value plus where it came from. */
export interface LoadedRecipe {
  recipe: Recipe;
  /** Absolute path of the file (or a label such as `schedule sch_…` when parsed from stored text). */
  path: string;
  /** Directory relative paths inside the recipe resolve against. */
  dir: string;
  /** The YAML text as read. */
  text: string;
}

/** Everything a run needs from a recipe with its parameters applied. */
export interface PreparedRecipe {
  name: string;
  /** The instructions with every `{{ name }}` replaced. */
  prompt: string;
  /** Parameter values after conversion and defaults. */
  params: Record<string, ParamValue>;
  /** Config overrides for this run only (feed to `mergeConfig` / `setRunOverrides`). */
  overrides: ConfigOverrides;
  /** Absolute workspace from the recipe, if it names one. */
  workspace?: string;
}

/**
 * Parses and validates recipe YAML.
 * @param source how errors name the file, e.g. `examples/x.yaml`; messages read `recipe <source>: <key>: …`.
 * @throws AirlockError `recipe_invalid` naming every failing key.
 */
export function parseRecipe(text: string, source: string): Recipe {
  const label = `recipe ${source}`;
  const { value, locate } = parseYaml(text, label, "recipe_invalid");
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new AirlockError("recipe_invalid", `${label}: expected a mapping with at least "instructions", got ${describeValue(value)}; see docs/recipes.md`);
  }
  const r = Recipe.safeParse(value, { reportInput: true });
  if (!r.success) {
    const lines = formatZodIssues(r.error.issues, label, { locate, schema: Recipe });
    throw new AirlockError("recipe_invalid", lines.length === 1 ? `${lines[0]}; see docs/recipes.md` : `${lines.join("\n")}\nFix these keys (see docs/recipes.md) and run again.`, { issues: lines });
  }
  return r.data;
}

/**
 * The most a recipe file may hold, bytes: 4 MiB, wherever it is read (`airlock run --recipe`, `airlock schedule add`,
 * `POST /schedules`'s `recipe_path`). A recipe is YAML written by hand whose instructions may carry a long prompt; a
 * sparse or endless file of gigabytes would otherwise stall the reading command or the serving thread.
 */
export const MAX_RECIPE_FILE_BYTES = 4 << 20;

/** Why a recipe file could not be read, for `recipe_invalid` messages (the code of {@link readRegularFile}'s error). */
export function recipeReadProblem(e: unknown): string {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === "ENOTREG" || code === "EISDIR") return `${code}: not a regular file`;
  if (code === "EFBIG") return `EFBIG: larger than ${MAX_RECIPE_FILE_BYTES} bytes (4 MiB), the most a recipe may hold`;
  return code ?? (e as Error).message;
}

/**
 * Reads and parses a recipe file (at most {@link MAX_RECIPE_FILE_BYTES}).
 * @throws AirlockError `recipe_invalid` when the file cannot be read or is invalid.
 */
export function loadRecipe(path: string, cwd = process.cwd()): LoadedRecipe {
  const abs = resolve(cwd, path);
  let text: string;
  try {
    text = readRegularFile(abs, { maxBytes: MAX_RECIPE_FILE_BYTES }).toString("utf8");
  } catch (e) {
    throw new AirlockError("recipe_invalid", `recipe ${path}: cannot read the file (${recipeReadProblem(e)}); pass an existing YAML file to --recipe`);
  }
  return { recipe: parseRecipe(text, path), path: abs, dir: dirname(abs), text };
}

/**
 * Parses repeated `--param KEY=VALUE` flags into a map (the value may contain `=`; the last flag wins).
 * @throws AirlockError `usage` for a flag without `=` or with an empty key.
 */
export function parseParamFlags(flags: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const f of flags) {
    const i = f.indexOf("=");
    if (i <= 0) throw new AirlockError("usage", `--param ${JSON.stringify(f)}: expected KEY=VALUE, e.g. --param project=api`);
    out[f.slice(0, i)] = f.slice(i + 1);
  }
  return out;
}

/** Why `v` is not a valid `type` value (undefined when it is). Strings are not converted here. */
function checkValue(type: ParamType, v: unknown): string | undefined {
  switch (type) {
    case "string":
      return typeof v === "string" ? undefined : "expected string";
    case "number":
      return typeof v === "number" && Number.isFinite(v) ? undefined : "expected number";
    case "integer":
      return typeof v === "number" && Number.isInteger(v) ? undefined : "expected integer";
    case "boolean":
      return typeof v === "boolean" ? undefined : "expected boolean";
    default:
      return assertNever(type, "parameter type");
  }
}

/** Converts a raw value (a `--param` string, or a JSON value from the API) to the parameter's type. */
function convert(type: ParamType, raw: unknown): { ok: true; value: ParamValue } | { ok: false; message: string } {
  let v = raw;
  if (typeof raw === "string" && type !== "string") {
    const s = raw.trim();
    if (type === "boolean") {
      const b = { true: true, false: false, yes: true, no: false, "1": true, "0": false }[s.toLowerCase()];
      v = b === undefined ? raw : b;
    } else if (s !== "" && Number.isFinite(Number(s))) {
      v = Number(s);
    }
  }
  if (type === "string" && (typeof raw === "number" || typeof raw === "boolean")) v = String(raw);
  const err = checkValue(type, v);
  if (err) return { ok: false, message: `${err}, got ${describeValue(raw)}` };
  return { ok: true, value: v as ParamValue };
}

/**
 * Checks supplied parameter values against the recipe's declarations and fills defaults.
 * @param raw values by name: strings from `--param`, or JSON values (schedules via the API).
 * @returns every declared parameter's value, typed.
 * @throws AirlockError `recipe_invalid` naming the parameter: unknown name, missing required one, or a
 *   value of the wrong type (`recipe x.yaml: parameters.count: expected number, got "ten"`).
 */
export function resolveParams(recipe: Recipe, raw: Readonly<Record<string, unknown>>, source: string): Record<string, ParamValue> {
  const label = `recipe ${source}`;
  const declared = recipe.parameters;
  const problems: string[] = [];
  for (const name of Object.keys(raw)) {
    if (!(name in declared)) {
      const known = Object.keys(declared);
      problems.push(`${label}: unknown parameter "${name}"; ${known.length ? `declared parameters: ${known.join(", ")}` : "this recipe declares no parameters"}`);
    }
  }
  const out: Record<string, ParamValue> = {};
  for (const [name, p] of Object.entries(declared)) {
    if (name in raw) {
      const c = convert(p.type, raw[name]);
      if (c.ok) out[name] = c.value;
      else problems.push(`${label}: parameters.${name}: ${c.message}`);
    } else if (p.default !== undefined) {
      out[name] = p.default;
    } else {
      problems.push(`${label}: missing required parameter "${name}" (${p.type}); pass --param ${name}=VALUE`);
    }
  }
  if (problems.length) throw new AirlockError("recipe_invalid", problems.join("\n"), { issues: problems });
  return out;
}

/** Replaces every `{{ name }}` in `text` with its value, in one pass (values are not expanded again). */
export function substitute(text: string, values: Readonly<Record<string, ParamValue>>): string {
  return text.replace(PLACEHOLDER, (whole, name: string) => (name in values ? String(values[name]) : whole));
}

/**
 * Substitutes a recipe's parameters into a prompt given in place of its instructions (`airlock run PROMPT
 * --recipe FILE`), with the same rules as the instructions: every `{{ name }}` must name a declared parameter.
 * @param params the values `prepareRecipe` resolved (`PreparedRecipe.params`).
 * @throws AirlockError `recipe_invalid`, e.g. `recipe x.yaml: prompt: {{ projct }} names no declared parameter; …`.
 */
export function substitutePrompt(prompt: string, recipe: Recipe, params: Readonly<Record<string, ParamValue>>, source: string): string {
  const bad = undeclaredPlaceholders(prompt, recipe.parameters);
  if (bad.length) {
    const problems = bad.map((name) => `recipe ${source}: prompt: ${undeclaredMessage(name)}`);
    throw new AirlockError("recipe_invalid", problems.join("\n"), { issues: problems });
  }
  return substitute(prompt, params);
}

/**
 * Applies parameters to a loaded recipe and derives this run's config overrides. A relative
 * `provider.script` and `workspace` resolve against the recipe's directory.
 * @throws AirlockError `recipe_invalid` (see `resolveParams`).
 */
export function prepareRecipe(loaded: LoadedRecipe, raw: Readonly<Record<string, unknown>>, source = loaded.path): PreparedRecipe {
  const { recipe, dir } = loaded;
  const params = resolveParams(recipe, raw, source);
  const overrides: ConfigOverrides = {};
  if (recipe.mode) overrides.mode = recipe.mode;
  if (recipe.sandbox) overrides.sandbox = recipe.sandbox;
  if (recipe.hooks) overrides.hooks = recipe.hooks;
  if (recipe.provider) {
    const p = { ...recipe.provider };
    if (p.script && !isAbsolute(p.script)) p.script = resolve(dir, p.script);
    overrides.provider = p as ConfigOverrides["provider"];
  }
  const out: PreparedRecipe = {
    name: recipe.name ?? source,
    prompt: substitute(recipe.instructions, params),
    params,
    overrides,
  };
  if (recipe.workspace) out.workspace = resolve(dir, recipe.workspace);
  return out;
}
