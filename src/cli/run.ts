/**
 * @module cli/run
 * `airlock run`: one turn from a prompt or a recipe, printed on stdout as text, one JSON result
 * object, or NDJSON events ending with the result (SPEC §2, §7). Logs go to stderr.
 */
import type { ConfigOverrides } from "../config/load.ts";
import type { Mode, ProviderName, SandboxPolicyName } from "../config/schema.ts";
import type { CommonOptions } from "./context.ts";

export const OUTPUT_FORMATS = ["text", "json", "stream-json"] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

/** Options of `airlock run` (parsed and validated by `main.ts`; enums are already checked). */
export interface RunOptions extends CommonOptions {
  /** `--recipe FILE`: a recipe (SPEC §8); its instructions are the prompt when PROMPT is absent. */
  recipe?: string;
  /** `--param KEY=VALUE` (repeatable): recipe parameters; later values win. Always an object. */
  param: Record<string, string>;
  /** `--headless`: no person can answer; an ask is refused at once (`no_human_surface`). */
  headless: boolean;
  /** `--output-format`: default `text`. */
  outputFormat: OutputFormat;
  /** `--mode`: overrides the config and the recipe. */
  mode?: Mode;
  /** `--sandbox`: overrides the config and the recipe. */
  sandbox?: SandboxPolicyName;
  /** `--workspace DIR`: the session's workspace; default the cwd. */
  workspace?: string;
  /** `--provider NAME`: overrides `provider.name`. */
  provider?: ProviderName;
  /** `--model NAME`: overrides `provider.model`. */
  model?: string;
}

/**
 * The config overrides the flags ask for, to apply with `mergeConfig(config, …, "command line")`
 * after the recipe's (flags win over the recipe, the recipe over `airlock.yaml`).
 */
export function flagOverrides(opts: RunOptions): ConfigOverrides {
  const o: ConfigOverrides = {};
  if (opts.mode) o.mode = opts.mode;
  if (opts.sandbox) o.sandbox = opts.sandbox;
  if (opts.provider || opts.model) {
    o.provider = {};
    if (opts.provider) o.provider.name = opts.provider;
    if (opts.model) o.provider.model = opts.model;
  }
  return o;
}

/**
 * Runs one turn.
 * TODO(agent-loop engineer): load the recipe (`recipe_invalid` → exit 2), merge overrides, open the store,
 * create a session (headless per flag), run the turn, print per `outputFormat` on stdout only
 * (`writeStdout` / `writeJsonLine` from ./output.ts), and map the outcome to the exit code:
 * 0 completed, 1 failed, 3 blocked (`no_human_surface` and the model could not go on), 130 on SIGINT.
 * PROMPT absent and no recipe: read stdin only when it is not a TTY, and never block on it.
 * @returns the exit code (SPEC §2).
 */
export async function run(prompt: string | undefined, opts: RunOptions): Promise<number> {
  const { resolveContext, notImplemented } = await import("./context.ts");
  const { mergeConfig } = await import("../config/load.ts");
  const ctx = await resolveContext(opts);
  mergeConfig(ctx.config, flagOverrides(opts), "command line");
  void prompt;
  return notImplemented("run");
}
