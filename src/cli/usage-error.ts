/**
 * @module cli/usage-error
 * Argument errors of the compiled binary without commander (docs/performance.md, cold start). The table is
 * read from the commander program at build time (build/usage-table.ts, embedded as cli/canned-usage.ts),
 * and `src/boot.ts` asks {@link usageError} before loading `main.ts`.
 * The decision follows commander 14's `parseOptions` (node_modules/commander/lib/command.js): only the
 * errors it throws while reading a leaf command's options are answered here — an option that needs a
 * value and has none (`option '--mode <mode>' argument missing`), and a value its choices or its
 * non-empty check refuse (`option '--mode <mode>' argument 'nope' is invalid. …`). Anything the table
 * cannot decide (an unknown option or command, help, `--`, an option with another parser, a short
 * option group, a variadic option, an ancestor's option) is left to commander: `usageError` returns
 * `undefined`.
 */

/** How an option's value is checked, as recorded from its commander `parseArg`. */
export type UsageCheck =
  /** no parser: any value */
  | { kind: "any" }
  /** one of `choices`; `message` is commander's "Allowed choices are …." */
  | { kind: "choices"; choices: string[]; message: string }
  /** main.ts's `nonEmpty`: refused when `value.trim() === ""`, with `message` */
  | { kind: "nonEmpty"; message: string }
  /** another parser: only commander can tell */
  | { kind: "other" };

/** One option of a command: commander's `flags` text, its long and short names, and whether it takes a value. */
export interface UsageOption {
  flags: string;
  long: string | null;
  short: string | null;
  /** `none`: a boolean flag; `required`: `<value>`; `optional`: `[value]` */
  value: "none" | "required" | "optional";
  variadic: boolean;
  check: UsageCheck;
}

/** One command: its options (the help option is not one), its subcommands by name and alias, its error hint. */
export interface UsageCommand {
  options: UsageOption[];
  commands: Record<string, UsageCommand>;
  /** the line commander prints after an error (`showHelpAfterError(text)`); `null` none; `"help"` the whole help (not decided here) */
  hint: string | null | { help: true };
}

/** The whole table: the program's command tree, the usage exit code and the error line's text around the message. */
export interface UsageTable {
  program: UsageCommand;
  /** exit code of a usage error (errors.ts `exitCodeFor("usage")`) */
  exitCode: number;
  /** the CLI's error line is `before + message + after` (cli/output.ts `errorLine("usage", message)`) */
  before: string;
  after: string;
}

/**
 * The stderr text and exit code commander (through main.ts) gives `argv` (user arguments only), when the
 * table can decide it is an argument error found while reading the leaf command's options; otherwise
 * `undefined` (main.ts decides: a valid invocation, or an error this table does not model).
 * A `run` invocation naming `--output-format` is never decided (main.ts also prints a result object then).
 */
export function usageError(argv: readonly string[], table: UsageTable): { stderr: string; exitCode: number } | undefined {
  // Plain loops, not Array.prototype.some/filter/find: those are JavaScript builtins JavaScriptCore compiles
  // on first use, ~0.15 ms of an argument error's start in the binary (docs/performance.md, 2026-12-02).
  const isOption = (a: string): boolean => a.length > 1 && a[0] === "-";
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--" || argv[i]!.startsWith("--output-format")) return undefined;
  }
  // the command path: consecutive command names from the start
  const path: UsageCommand[] = [table.program];
  let at = 0;
  for (let cmd = table.program; Object.keys(cmd.commands).length > 0; ) {
    const name = argv[at];
    const sub = name === undefined || !Object.hasOwn(cmd.commands, name) ? undefined : cmd.commands[name];
    if (!sub) return undefined;
    path.push(sub);
    cmd = sub;
    at++;
  }
  const leaf = path[path.length - 1]!;
  if (path.length < 2 || typeof leaf.hint === "object") return undefined;
  const args = argv.slice(at);
  // An ancestor reads every option-like argument it knows, wherever it stands (after an unknown one too, and as the
  // value of a leaf option: `run --mode --version` prints the version): if any is one of an ancestor's, bail.
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (!isOption(arg)) continue;
    const eq = arg.indexOf("=");
    const head = arg.startsWith("--") ? (eq === -1 ? arg : arg.slice(0, eq)) : arg.slice(0, 2);
    for (let p = 0; p < path.length - 1; p++) {
      if (named(path[p]!.options, arg, "long or short") || named(path[p]!.options, head, "long or short")) return undefined;
    }
  }
  const fail = (message: string): { stderr: string; exitCode: number } => {
    // as main.ts's outputError: commander passes `${message}\n`; the "error: " prefix and the newline are cut
    // (string tests, not regular expressions: a first regular expression costs the binary ~0.07 ms)
    const text = message.startsWith("error: ") ? message.slice("error: ".length) : message;
    return { stderr: `${table.before}${text}${table.after}${leaf.hint === null ? "" : `${leaf.hint}\n`}`, exitCode: table.exitCode };
  };
  // undefined: the value passes; null: only commander can tell; a string: commander's error message
  const judge = (o: UsageOption, value: string): string | undefined | null => {
    const invalid = `error: option '${o.flags}' argument '${value}' is invalid.`;
    switch (o.check.kind) {
      case "any":
        return undefined;
      case "choices":
        return o.check.choices.indexOf(value) !== -1 ? undefined : `${invalid} ${o.check.message}`;
      case "nonEmpty":
        return value.trim() === "" ? `${invalid} ${o.check.message}` : undefined;
      case "other":
        return null;
      default: {
        // Not errors.ts's assertNever: that module is a chunk of its own the binary would load for every
        // argument error (docs/performance.md, 2026-12-02). A check it does not know is left to commander.
        const unknown: never = o.check;
        void unknown;
        return null;
      }
    }
  };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (!isOption(arg)) continue;
    let option = named(leaf.options, arg, "long or short");
    let value: string | undefined;
    if (option) {
      if (option.variadic) return undefined;
      if (option.value === "none") continue;
      if (option.value === "optional") {
        const next = args[i + 1];
        if (next === undefined || (isOption(next) && !/^-[\d.]/.test(next))) continue;
        if (isOption(next)) return undefined; // a negative number: commander's rule depends on the tree
        value = next;
      } else {
        value = args[i + 1];
        if (value === undefined) return fail(`error: option '${option.flags}' argument missing`);
      }
      i++;
    } else {
      // a short option group, or `--name=value` of a known option; anything else is unknown
      if (arg[1] !== "-" || !/^--[^=]+=/.test(arg)) return undefined;
      const eq = arg.indexOf("=");
      option = named(leaf.options, arg.slice(0, eq), "long");
      if (!option || option.value === "none" || option.variadic) return undefined;
      value = arg.slice(eq + 1);
    }
    const verdict = judge(option, value);
    if (verdict === null) return undefined;
    if (verdict !== undefined) return fail(verdict);
  }
  return undefined;
}

/** The first of `options` whose long name (`which` "long") or long or short name is `name`, or `undefined`. */
function named(options: readonly UsageOption[], name: string, which: "long" | "long or short"): UsageOption | undefined {
  for (let i = 0; i < options.length; i++) {
    const o = options[i]!;
    switch (which) {
      case "long":
        if (o.long === name) return o;
        break;
      case "long or short":
        if (o.long === name || o.short === name) return o;
        break;
      default: {
        const unknown: never = which;
        void unknown;
        return undefined;
      }
    }
  }
  return undefined;
}
