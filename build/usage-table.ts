/**
 * @module build/usage-table
 * Reads the usage table of the compiled binary (src/cli/usage-error.ts) from the commander program of
 * `src/main.ts`: every command with its options (flags, long and short names, whether each takes a value,
 * and how commander checks it), its subcommands and the hint it prints after an error.
 */
import type { Command, Option } from "commander";
import type { UsageCheck, UsageCommand, UsageTable } from "../src/cli/usage-error.ts";

/** A value no choice list of the CLI holds, used to read the message a choices parser throws. */
const NOT_A_CHOICE = "\u0000not-a-choice";

/** How commander checks `opt`'s value: recognised by running its parser (the choices one) or by identity (`nonEmpty`). */
function checkOf(opt: Option, nonEmpty: (v: string) => string): UsageCheck {
  const parse = opt.parseArg as ((value: string, previous: unknown) => unknown) | undefined;
  if (!parse) return { kind: "any" };
  if (parse === nonEmpty) {
    try {
      nonEmpty(" ");
    } catch (e) {
      return { kind: "nonEmpty", message: (e as Error).message };
    }
    return { kind: "other" };
  }
  const choices = opt.argChoices;
  if (!choices || opt.variadic) return { kind: "other" };
  // the choices parser returns each choice as is and refuses anything else with "Allowed choices are …"
  if (!choices.every((c) => parse(c, undefined) === c)) return { kind: "other" };
  try {
    parse(NOT_A_CHOICE, undefined);
  } catch (e) {
    const message = (e as Error).message;
    if ((e as { code?: string }).code === "commander.invalidArgument" && message === `Allowed choices are ${choices.join(", ")}.`) return { kind: "choices", choices: [...choices], message };
  }
  return { kind: "other" };
}

/** The candidates commander's suggestSimilar is given for `cmd` (its own Help's visible options and commands), or `null` when it suggests nothing. */
function suggestOf(cmd: Command): { options: string[]; commands: string[] } | null {
  const c = cmd as unknown as { _showSuggestionAfterError: boolean; _enablePositionalOptions: boolean; parent: Command | null };
  if (!c._showSuggestionAfterError) return null;
  const options: string[] = [];
  for (let at: Command | null = cmd; at; ) {
    for (const o of at.createHelp().visibleOptions(at)) if (o.long) options.push(o.long);
    at = (at as unknown as typeof c).parent;
    if (at && (at as unknown as typeof c)._enablePositionalOptions) break;
  }
  const commands: string[] = [];
  for (const sub of cmd.createHelp().visibleCommands(cmd)) {
    commands.push(sub.name());
    if (sub.alias()) commands.push(sub.alias());
  }
  return { options, commands };
}

/**
 * Whether commander checks nothing of `cmd`'s own between reading its options and reporting an unknown option
 * or command: no mandatory, environment, implied or conflicting option, no unknown options allowed, no
 * positional or pass-through options, no default command, no `command:*` listener, no hook, and (with
 * subcommands) no action of its own.
 */
function plainOf(cmd: Command): boolean {
  const c = cmd as unknown as Record<string, unknown> & { listenerCount(e: string): number; commands: Command[] };
  for (const o of cmd.options) {
    const opt = o as unknown as Record<string, unknown>;
    if (o.mandatory || o.envVar !== undefined || opt.implied !== undefined || (Array.isArray(opt.conflictsWith) && opt.conflictsWith.length > 0)) return false;
  }
  const hooks = c._lifeCycleHooks as Record<string, unknown[]> | undefined;
  if (hooks && Object.values(hooks).some((h) => h.length > 0)) return false;
  if (c._allowUnknownOption || c._enablePositionalOptions || c._passThroughOptions || c._defaultCommandName) return false;
  if (c.listenerCount("command:*") > 0) return false;
  if (c.commands.length > 0 && c._actionHandler) return false;
  return true;
}

function commandOf(cmd: Command, nonEmpty: (v: string) => string): UsageCommand {
  const hint = (cmd as unknown as { _showHelpAfterError: string | boolean })._showHelpAfterError;
  const commands: Record<string, UsageCommand> = {};
  for (const sub of cmd.commands) {
    const entry = commandOf(sub, nonEmpty);
    for (const name of [sub.name(), ...sub.aliases()]) commands[name] = entry;
  }
  return {
    options: cmd.options.map((o) => ({
      flags: o.flags,
      long: o.long ?? null,
      short: o.short ?? null,
      value: o.required ? "required" : o.optional ? "optional" : "none",
      variadic: o.variadic,
      check: checkOf(o, nonEmpty),
    })),
    commands,
    parent: cmd.commands.length > 0,
    hint: typeof hint === "string" ? hint : hint ? { help: true } : null,
    suggest: suggestOf(cmd),
    plain: plainOf(cmd),
  };
}

/** The usage table of `src/main.ts`'s program (built in this process; loads commander and main.ts). */
export async function usageTable(): Promise<UsageTable> {
  const { buildProgram, nonEmpty } = await import("../src/main.ts");
  const { errorLine } = await import("../src/cli/output.ts");
  const { exitCodeFor } = await import("../src/errors.ts");
  const [before, after] = errorLine("usage", "\u0000").split("\u0000") as [string, string];
  return { program: commandOf(buildProgram(() => {}), nonEmpty), exitCode: exitCodeFor("usage"), before, after };
}
