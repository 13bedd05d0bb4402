/**
 * @module cli/usage-error
 * Argument errors of the compiled binary without commander (docs/performance.md, cold start). The table is
 * read from the commander program at build time (build/usage-table.ts, embedded as cli/canned-usage.ts),
 * and `src/boot.ts` asks {@link usageError} before loading `main.ts`.
 * The decision follows commander 14's `parseOptions` (node_modules/commander/lib/command.js): only the
 * errors it throws while reading a leaf command's options are answered here — an option that needs a
 * value and has none (`option '--mode <mode>' argument missing`), and a value its choices or its
 * non-empty check refuse (`option '--mode <mode>' argument 'nope' is invalid. …`) — and, on commands the
 * table marks `plain`, an unknown option of the leaf (`unknown option '--bogus'`) or an unknown command
 * (`unknown command 'frobnicate'`), each with commander's "(Did you mean …?)" ({@link suggestion}). Anything
 * the table cannot decide (help, `--`, an option with another parser, a short option group of known
 * options, a variadic option, an ancestor's option, a negative number) is left to commander:
 * `usageError` returns `undefined`.
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
  /** whether it has subcommands (true even where a cut table, cli/canned-usage.ts, leaves `commands` empty) */
  parent: boolean;
  /** the line commander prints after an error (`showHelpAfterError(text)`); `null` none; `"help"` the whole help (not decided here) */
  hint: string | null | { help: true };
  /**
   * The names commander's suggestion (its "(Did you mean …?)") is chosen from, as its Help lists them: the
   * visible long options of this command and its ancestors, the visible commands with their first alias; `null`
   * when commander suggests nothing here.
   */
  suggest: { options: string[]; commands: string[] } | null;
  /**
   * Whether commander checks nothing of this command's own between reading its options and reporting an
   * unknown option or command (no mandatory, environment, implied or conflicting option, hook, default command…):
   * only then are unknown options and commands decided here.
   */
  plain: boolean;
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
 * First arguments `main.ts` takes before commander sees the argv (so commander's errors never apply to them):
 * the hidden `__script-exec` (src/cli/script-exec.ts).
 */
export const BEFORE_COMMANDER = "__script-exec";

/**
 * The stderr text and exit code commander (through main.ts) gives `argv` (user arguments only), when the
 * table can decide it is an argument error found while reading the leaf command's options; otherwise
 * `undefined` (main.ts decides: a valid invocation, or an error this table does not model).
 * A `run` invocation naming `--output-format` is never decided (main.ts also prints a result object then),
 * nor an argv main.ts answers before commander ({@link BEFORE_COMMANDER}).
 */
export function usageError(argv: readonly string[], table: UsageTable): { stderr: string; exitCode: number } | undefined {
  // Plain loops, not Array.prototype.some/filter/find: those are JavaScript builtins JavaScriptCore compiles
  // on first use, ~0.15 ms of an argument error's start in the binary (docs/performance.md, 2026-12-02).
  const isOption = (a: string): boolean => a.length > 1 && a[0] === "-";
  if (argv[0] === BEFORE_COMMANDER) return undefined;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--" || argv[i]!.startsWith("--output-format")) return undefined;
  }
  // the command path: consecutive command names from the start
  const path: UsageCommand[] = [table.program];
  let at = 0;
  // help, anywhere: commander prints it before any unknown option or command
  const helpLike = (a: string): boolean => a === "-h" || a.startsWith("-h") || a === "--help" || a.startsWith("--help=");
  for (let cmd = table.program; cmd.parent; ) {
    const name = argv[at];
    const sub = name === undefined || !Object.hasOwn(cmd.commands, name) ? undefined : cmd.commands[name];
    if (!sub) return name === undefined ? undefined : unknownCommand(argv, at, path, table, helpLike);
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
  const fail = (message: string): { stderr: string; exitCode: number } => errorOf(message, leaf, table);
  // the first option-like argument commander finds unknown (reported once the options are all read), if decidable here
  let unknown: string | undefined;
  let plain = true;
  for (let p = 0; p < path.length; p++) plain = plain && path[p]!.plain;
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
      const eq = arg.indexOf("=");
      option = arg[1] !== "-" || !/^--[^=]+=/.test(arg) ? undefined : named(leaf.options, arg.slice(0, eq), "long");
      if (option === undefined || option.value === "none") {
        // unknown to the leaf (ancestors' options were ruled out above); a group led by a known short option,
        // help, a negative number (an operand of a leaf), or where commander checks more, is left to commander
        if (!plain || helpLike(arg) || /^-[\d.]/.test(arg)) return undefined;
        if (arg[1] !== "-" && named(leaf.options, arg.slice(0, 2), "long or short") !== undefined) return undefined;
        if (unknown === undefined) unknown = arg;
        continue;
      }
      if (option.variadic) return undefined;
      value = arg.slice(eq + 1);
    }
    const verdict = judge(option, value);
    if (verdict === null) return undefined;
    if (verdict !== undefined) return fail(verdict);
  }
  if (unknown === undefined) return undefined;
  return fail(`error: unknown option '${unknown}'${leaf.suggest === null || !unknown.startsWith("--") ? "" : suggestion(unknown, leaf.suggest.options)}`);
}

/** Commander's error text for `message` thrown by `cmd` (through main.ts's outputError), with `cmd`'s hint. */
function errorOf(message: string, cmd: UsageCommand, table: UsageTable): { stderr: string; exitCode: number } {
  // as main.ts's outputError: commander passes `${message}\n`; the "error: " prefix and the newline are cut
  // (string tests, not regular expressions: a first regular expression costs the binary ~0.07 ms)
  const text = message.startsWith("error: ") ? message.slice("error: ".length) : message;
  const hint = typeof cmd.hint === "string" ? `${cmd.hint}\n` : "";
  return { stderr: `${table.before}${text}${table.after}${hint}`, exitCode: table.exitCode };
}

/**
 * `argv[at]` names no command of `path`'s last (which has commands): commander's `unknown command` error,
 * when that command and its ancestors are `plain`, the name is no option and not `help`, and nothing after it
 * is help, `--` or an option of the path (commander would read it first); otherwise `undefined`.
 */
function unknownCommand(argv: readonly string[], at: number, path: readonly UsageCommand[], table: UsageTable, helpLike: (a: string) => boolean): { stderr: string; exitCode: number } | undefined {
  const cmd = path[path.length - 1]!;
  const name = argv[at]!;
  if (name === "help" || name.startsWith("-") || (typeof cmd.hint === "object" && cmd.hint !== null)) return undefined;
  for (let p = 0; p < path.length; p++) if (!path[p]!.plain) return undefined;
  for (let i = at + 1; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg.length < 2 || arg[0] !== "-") continue;
    if (helpLike(arg)) return undefined;
    const eq = arg.indexOf("=");
    const head = arg.startsWith("--") ? (eq === -1 ? arg : arg.slice(0, eq)) : arg.slice(0, 2);
    for (let p = 0; p < path.length; p++) {
      if (named(path[p]!.options, arg, "long or short") || named(path[p]!.options, head, "long or short")) return undefined;
    }
  }
  return errorOf(`error: unknown command '${name}'${cmd.suggest === null ? "" : suggestion(name, cmd.suggest.commands)}`, cmd, table);
}

/**
 * Commander's suggestion after an unknown `word` among `candidates` (its suggestSimilar, written anew): the
 * candidates (the leading `--` dropped when `word` has it, one-character ones never) whose optimal string
 * alignment distance to `word` is least and below 3 and whose similarity `(length − distance) / length` is
 * above 0.4, sorted by `localeCompare`: `"\n(Did you mean X?)"`, `"\n(Did you mean one of X, Y?)"`, or `""`.
 */
export function suggestion(word: string, candidates: readonly string[]): string {
  const options = word.startsWith("--");
  const w = options ? word.slice(2) : word;
  let best = 3;
  let found: string[] = [];
  const seen = new Set<string>();
  for (let i = 0; i < candidates.length; i++) {
    const c = options ? candidates[i]!.slice(2) : candidates[i]!;
    if (seen.has(c)) continue;
    seen.add(c);
    if (c.length <= 1) continue;
    const d = distance(w, c);
    const longest = Math.max(w.length, c.length);
    if ((longest - d) / longest <= 0.4) continue;
    if (d < best) {
      best = d;
      found = [c];
    } else if (d === best) found.push(c);
  }
  found.sort((a, b) => a.localeCompare(b));
  const names = options ? found.map((c) => `--${c}`) : found;
  if (names.length === 0) return "";
  return names.length === 1 ? `\n(Did you mean ${names[0]}?)` : `\n(Did you mean one of ${names.join(", ")}?)`;
}

/** Optimal string alignment distance of `a` and `b` (UTF-16 units); past a length gap of 3, the longer length. */
function distance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 3) return Math.max(a.length, b.length);
  let before: number[] = [];
  let row: number[] = [];
  for (let j = 0; j <= b.length; j++) row.push(j);
  for (let i = 1; i <= a.length; i++) {
    const next: number[] = [i];
    for (let j = 1; j <= b.length; j++) {
      let d = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, before[j - 2]! + 1);
      next.push(d);
    }
    before = row;
    row = next;
  }
  return row[b.length]!;
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
