/**
 * @module cli/run-argv
 * `airlock run`'s arguments read without commander, for the compiled binary's start path (src/boot.ts;
 * docs/performance.md, issue 20): loading commander and main.ts and building the command costs about as much
 * as a bare Bun start. Only the plain forms are read — `--name value` of an option the usage table
 * (cli/canned-usage.ts, recorded from the commander program at build time) lists with a required value and a
 * value check this module knows, boolean flags, and at most one PROMPT; the value must pass the check and
 * must not begin with `-`. Anything else (`--param`, `--name=value`, short options, `--`, help,
 * an unknown option, a refused value, a second PROMPT) gives `undefined`, and main.ts parses it with
 * commander as before. `test/e2e/run-argv.test.ts` holds the result equal to commander's.
 */
import { assertNever } from "../errors.ts";
import type { RunOptions } from "./run.ts";
import type { UsageOption, UsageTable } from "./usage-error.ts";

/** Options commander gives `run` without any flag (main.ts's defaults). */
const DEFAULTS = { param: {}, headless: false, outputFormat: "text" } as const;

/** `--output-format` → `outputFormat`: commander's attribute name of a long option. */
function attributeName(long: string): string {
  return long.replace(/^--/, "").replace(/-([a-z])/g, (_m, c: string) => c.toUpperCase());
}

/** Whether commander's check of `o` accepts `value` (`undefined`: only commander can tell). */
function accepts(o: UsageOption, value: string): boolean | undefined {
  switch (o.check.kind) {
    case "any":
      return true;
    case "choices":
      return o.check.choices.includes(value);
    case "nonEmpty":
      return value.trim() !== "";
    case "other":
      return undefined;
    default:
      return assertNever(o.check, "usage check");
  }
}

/**
 * Reads `argv` (user arguments, `run` first) as commander would for the plain forms (see the module note).
 * @returns the PROMPT (undefined when absent) and the options commander's action would get, or `undefined`
 *   when `argv` is not `run` or uses a form left to commander. Never throws.
 */
export function readRunArgv(argv: readonly string[], table: UsageTable): { prompt: string | undefined; opts: RunOptions } | undefined {
  if (argv[0] !== "run") return undefined;
  const command = table.program.commands.run;
  if (!command || typeof command.hint === "object") return undefined;
  const opts: Record<string, unknown> = { ...DEFAULTS, param: {} };
  let prompt: string | undefined;
  for (let i = 1; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg.length > 1 && arg[0] === "-") {
      const o = command.options.find((x) => x.long === arg);
      if (!o || o.variadic || !o.long) return undefined;
      if (o.value === "none") {
        if (typeof (DEFAULTS as Record<string, unknown>)[attributeName(o.long)] !== "boolean") return undefined;
        opts[attributeName(o.long)] = true;
        continue;
      }
      if (o.value !== "required") return undefined;
      const value = argv[++i];
      if (value === undefined || value.startsWith("-") || accepts(o, value) !== true) return undefined;
      opts[attributeName(o.long)] = value;
    } else {
      if (prompt !== undefined) return undefined;
      prompt = arg;
    }
  }
  return { prompt, opts: opts as unknown as RunOptions };
}
