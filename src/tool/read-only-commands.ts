/**
 * @module tool/read-only-commands
 * Known read-only shell commands (SPEC §5, security-model.md "Read-only shell commands in smart mode"):
 * an allow-list of commands, each with an allow-list of flags, judged on the command parsed by the
 * floor's parser (src/shell/words.ts). `developer__shell`'s `readOnly` uses it so `smart` mode runs
 * `ls` or `git status` without asking. It removes only the mode's ask: the floor and hooks still judge.
 * Anything not understood — a redirect, substitution, expansion, glob, unknown flag or command — is an
 * ordinary call. Our own list, anchored on the idea of Codex's safe-command list.
 */
import { splitCommands, type SimpleCommand } from "../shell/words.ts";

/** How one command's flags are read (GNU getopt style: clusters `-la`, `-n5`, `--x=v`, `--x v`, `--`). */
interface FlagSpec {
  /** Short flags without a value, as one string of letters. */
  short?: string;
  /** Short flags that take a value (attached `-n5` or the next word). */
  shortValued?: string;
  /** Long flags (without `--`) without a value. */
  long?: readonly string[];
  /** Long flags that take a value (`--x=v` or the next word). */
  longValued?: readonly string[];
  /** Long flags whose value is optional: only `--x` or `--x=v` (a following word is never their value). */
  longOptional?: readonly string[];
  /** `-NUM` is a flag (head, tail: `-20`). */
  numeric?: boolean;
  /** Words starting with `-` are plain arguments (echo prints them). */
  noFlags?: boolean;
}

/** The words of one command after its flags were read. */
interface Parsed {
  /** Each flag seen, normalised: `-l`, `--list` (a long flag without its `=value`). */
  flags: string[];
  positionals: string[];
}

/** One entry of the list: its flags, and a check of the parsed words where the flags alone do not decide. */
interface Entry {
  flags: FlagSpec;
  check?: (p: Parsed) => boolean;
}

/**
 * Reads `args` with `spec`; null when a flag is not on the allow-list (the call is then an ordinary one).
 * Flags after positionals count too (GNU permutes them), until `--`.
 */
function readFlags(args: readonly string[], spec: FlagSpec): Parsed | null {
  const out: Parsed = { flags: [], positionals: [] };
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (spec.noFlags || a === "-" || !a.startsWith("-")) {
      out.positionals.push(a);
      continue;
    }
    if (a === "--") {
      out.positionals.push(...args.slice(i + 1));
      break;
    }
    if (a.startsWith("--")) {
      const eq = a.indexOf("=");
      const name = eq < 0 ? a.slice(2) : a.slice(2, eq);
      if (spec.long?.includes(name) && eq < 0) out.flags.push(`--${name}`);
      else if (spec.longOptional?.includes(name)) out.flags.push(`--${name}`);
      else if (spec.longValued?.includes(name)) {
        out.flags.push(`--${name}`);
        if (eq < 0) {
          if (i + 1 >= args.length) return null;
          i++;
        }
      } else return null;
      continue;
    }
    if (spec.numeric && /^-\d+$/.test(a)) {
      out.flags.push("-NUM");
      continue;
    }
    for (let j = 1; j < a.length; j++) {
      const c = a[j]!;
      if (spec.short?.includes(c)) {
        out.flags.push(`-${c}`);
        continue;
      }
      if (spec.shortValued?.includes(c)) {
        out.flags.push(`-${c}`);
        if (j === a.length - 1) {
          if (i + 1 >= args.length) return null;
          i++;
        }
        break; // the rest of the cluster (or the next word) is the value
      }
      return null;
    }
  }
  return out;
}

/** `sed -n` scripts that only print lines: `5p`, `1,20p`, `$p`, `10,$p`. */
const SED_PRINT = /^(\d+|\$)(,(\d+|\$))?p$/;

/**
 * The list. Every entry is read-only whatever its positional arguments name (paths are judged by the
 * floor); the reason for each is beside it. Absent on purpose: `cd` (it moves the later parts of a
 * compound, e.g. git into a repository whose config runs commands), `env`/`xargs`/`sudo`/`timeout`/
 * `nice`/`bash -c` (they run another command), `less`/`more` (LESSOPEN runs a preprocessor), `tee`,
 * `xxd` (writes its second file), `tail -f` (never ends), `file -z` (runs decompressors).
 */
const COMMANDS: Record<string, Entry> = {
  // lists directory entries; no ls flag writes or runs anything
  ls: {
    flags: {
      short: "aAbBcCdfFgGhHiklLmnNopqQrRsStuUvxXZ1",
      shortValued: "IwT",
      long: ["all", "almost-all", "human-readable", "recursive", "reverse", "directory", "classify", "inode", "size", "dereference", "numeric-uid-gid", "no-group", "group-directories-first", "full-time", "si"],
      longValued: ["ignore", "hide", "width", "tabsize", "time-style", "block-size"],
      longOptional: ["color", "sort", "format", "time", "indicator-style", "quoting-style"],
    },
  },
  // prints files to stdout
  cat: { flags: { short: "AbeEnstTuv", long: ["show-all", "number-nonblank", "show-ends", "number", "squeeze-blank", "show-tabs", "show-nonprinting"] } },
  // prints the first lines/bytes of files
  head: { flags: { short: "qvz", shortValued: "nc", numeric: true, long: ["quiet", "silent", "verbose", "zero-terminated"], longValued: ["lines", "bytes"] } },
  // prints the last lines/bytes; -f/-F (follow) are left out: they never end
  tail: { flags: { short: "qvz", shortValued: "nc", numeric: true, long: ["quiet", "silent", "verbose", "zero-terminated"], longValued: ["lines", "bytes"] } },
  // counts lines/words/bytes
  wc: { flags: { short: "clmwL", long: ["bytes", "chars", "lines", "words", "max-line-length"] } },
  // prints the working directory
  pwd: { flags: { short: "LP" } },
  // prints its arguments (every word is text to echo; -n/-e only shape the output)
  echo: { flags: { noFlags: true } },
  // prints formatted text; -v (assign a shell variable) is not allowed
  printf: { flags: { noFlags: true }, check: (p) => !p.positionals[0]?.startsWith("-") },
  // searches files; GNU grep has no flag that writes or runs a program
  grep: {
    flags: {
      short: "EFGPiywxvcLlnhHoqsrRabIuUzZT",
      shortValued: "efmABCd",
      long: ["extended-regexp", "fixed-strings", "basic-regexp", "perl-regexp", "ignore-case", "no-ignore-case", "word-regexp", "line-regexp", "invert-match", "count", "files-with-matches", "files-without-match", "line-number", "no-filename", "with-filename", "only-matching", "quiet", "silent", "no-messages", "recursive", "dereference-recursive", "text", "byte-offset", "null", "null-data", "initial-tab", "line-buffered"],
      longValued: ["regexp", "file", "max-count", "after-context", "before-context", "context", "include", "exclude", "exclude-dir", "exclude-from", "label", "directories", "binary-files"],
      longOptional: ["color", "colour"],
    },
  },
  // ripgrep; --pre (runs a program per file), -z/--search-zip (runs decompressors), --hostname-bin are not on the list
  rg: {
    flags: {
      short: "iSswxvclnNHoqLuF.aU",
      shortValued: "egtTABCmMjd",
      long: ["ignore-case", "smart-case", "case-sensitive", "word-regexp", "line-regexp", "invert-match", "count", "count-matches", "files-with-matches", "files-without-match", "line-number", "no-line-number", "with-filename", "no-filename", "only-matching", "quiet", "follow", "hidden", "no-ignore", "no-ignore-vcs", "fixed-strings", "files", "type-list", "no-heading", "heading", "json", "column", "vimgrep", "multiline", "text", "unrestricted", "no-messages", "stats", "trim", "pcre2", "null", "sort-files"],
      longValued: ["regexp", "glob", "iglob", "type", "type-not", "after-context", "before-context", "context", "max-count", "max-columns", "max-depth", "threads", "sort", "sortr", "max-filesize", "color", "colors", "replace"],
    },
  },
  // sed only as `sed -n SCRIPT FILE…` with a print-only script (no w/e/r commands, no -i)
  sed: {
    flags: { short: "n", long: ["quiet", "silent"] },
    check: (p) => p.flags.length > 0 && p.positionals.length >= 1 && SED_PRINT.test(p.positionals[0]!),
  },
  // sorts to stdout; -o/--output (writes a file) and --compress-program (runs one) are not on the list
  sort: {
    flags: { short: "bdfghiMnrRsuVzcC", shortValued: "ktS", long: ["reverse", "numeric-sort", "human-numeric-sort", "unique", "ignore-case", "version-sort", "stable", "zero-terminated", "general-numeric-sort", "month-sort", "ignore-leading-blanks", "dictionary-order", "random-sort"], longValued: ["key", "field-separator", "buffer-size"] },
  },
  // filters repeated lines; a second positional is an output file it writes, so at most one
  uniq: { flags: { short: "cdDiuz", shortValued: "fsw", long: ["count", "repeated", "ignore-case", "unique", "zero-terminated"], longValued: ["skip-fields", "skip-chars", "check-chars"] }, check: (p) => p.positionals.length <= 1 },
  // selects fields/columns of lines
  cut: { flags: { short: "sz", shortValued: "bcdf", long: ["complement", "only-delimited", "zero-terminated"], longValued: ["bytes", "characters", "delimiter", "fields", "output-delimiter"] } },
  // translates characters from stdin to stdout; reads no file
  tr: { flags: { short: "cCdst", long: ["complement", "delete", "squeeze-repeats", "truncate-set1"] } },
  // prints files with line numbers
  nl: { flags: { short: "p", shortValued: "bdfhilnsvw" } },
  // prints files in reverse line order
  tac: { flags: { short: "br", shortValued: "s" } },
  // reverses each line
  rev: { flags: {} },
  // joins lines of files side by side
  paste: { flags: { short: "sz", shortValued: "d" } },
  // prints a number sequence
  seq: { flags: { short: "w", shortValued: "fs" } },
  // encodes/decodes to stdout (GNU base64 has no output-file flag)
  base64: { flags: { short: "di", shortValued: "w", long: ["decode", "ignore-garbage"], longValued: ["wrap"] } },
  // prints file metadata
  stat: { flags: { short: "Lft", shortValued: "c", long: ["dereference", "file-system", "terse"], longValued: ["format", "printf"] } },
  // disk usage of files (reads metadata only)
  du: { flags: { short: "abchHkLmsSx", shortValued: "d", long: ["all", "apparent-size", "bytes", "total", "human-readable", "summarize", "si"], longValued: ["max-depth", "block-size"] } },
  // free space of file systems
  df: { flags: { short: "ahHiklPT", long: ["all", "human-readable", "inodes", "local", "portability", "print-type", "si"] } },
  // a directory tree; -o (writes a file) and -R/-H (write HTML) are not on the list
  tree: { flags: { short: "adfilqNpugsDFChrtUJ", shortValued: "LIP", long: ["noreport", "dirsfirst", "gitignore", "du", "prune"], longValued: ["filelimit", "sort"] } },
  // the type of files; -z (runs decompressors) and -C (compiles a magic file) are not on the list
  file: { flags: { short: "bLhiNk", long: ["brief", "mime", "mime-type", "mime-encoding", "dereference", "no-dereference"] } },
  // compares files (GNU diff writes only to stdout)
  diff: { flags: { short: "urNqwbBiayctsp", shortValued: "UC", long: ["unified", "recursive", "new-file", "brief", "ignore-all-space", "ignore-space-change", "ignore-blank-lines", "ignore-case", "text", "side-by-side", "report-identical-files", "minimal", "strip-trailing-cr"], longValued: ["exclude", "label"], longOptional: ["color"] } },
  // compares files byte by byte
  cmp: { flags: { short: "bls", long: ["print-bytes", "verbose", "quiet", "silent"] } },
  // path arithmetic, no file access beyond metadata
  basename: { flags: { short: "az", shortValued: "s", long: ["multiple", "zero"], longValued: ["suffix"] } },
  dirname: { flags: { short: "z" } },
  realpath: { flags: { short: "emsqLPz", long: ["canonicalize-existing", "canonicalize-missing", "strip", "no-symlinks", "quiet", "logical", "physical", "zero"], longValued: ["relative-to", "relative-base"] } },
  readlink: { flags: { short: "femnqsvz", long: ["canonicalize", "canonicalize-existing", "canonicalize-missing", "no-newline"] } },
  // the time; only a `+FORMAT` argument (a bare argument or -s would set the clock)
  date: { flags: { short: "uR", long: ["utc", "rfc-email"] }, check: (p) => p.positionals.every((w) => w.startsWith("+")) },
  // who am I, the system: print only
  whoami: { flags: {} },
  id: { flags: { short: "ugGnrz" } },
  uname: { flags: { short: "asnrvmpio" } },
  // finds a program on PATH (prints its path)
  which: { flags: { short: "a" } },
  // do nothing
  true: { flags: { noFlags: true } },
  false: { flags: { noFlags: true } },
  // reads JSON to stdout; jq has no flag that writes or runs a program. Its program's `import`/`include`
  // read any file (`import "config" as $c {search: "~/.docker"}`) that no word names for the floor, so a
  // program with either word is an ordinary call
  jq: {
    flags: { short: "rcSesnjaMC", long: ["raw-output", "compact-output", "sort-keys", "exit-status", "slurp", "null-input", "join-output", "ascii-output", "monochrome-output", "color-output", "tab"], longValued: ["indent"] },
    check: (p) => !p.positionals.some((w) => /import|include/.test(w)),
  },
};

/**
 * `find`: options `-H -L -P`, then paths, then an expression of allow-listed tests and actions that only
 * print. `-exec`, `-execdir`, `-ok`, `-okdir` (run programs), `-delete`, `-fprint*`, `-fls` (write files)
 * are not on the list, so they make the call an ordinary one.
 */
const FIND_NO_VALUE = new Set([
  "-depth", "-mount", "-xdev", "-noleaf", "-follow", "-empty", "-readable", "-writable", "-executable", "-nouser", "-nogroup",
  "-true", "-false", "-print", "-print0", "-ls", "-prune", "-quit", "-not", "-a", "-o", "-and", "-or", "!", ",", "(", ")", "-daystart",
]);
const FIND_VALUED = new Set([
  "-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex", "-regextype", "-lname", "-ilname", "-type", "-xtype",
  "-size", "-mtime", "-mmin", "-atime", "-amin", "-ctime", "-cmin", "-newer", "-anewer", "-cnewer", "-perm", "-user", "-group", "-uid",
  "-gid", "-links", "-inum", "-samefile", "-maxdepth", "-mindepth", "-printf", "-used", "-fstype",
]);
function findIsReadOnly(args: readonly string[]): boolean {
  let i = 0;
  while (i < args.length && ["-H", "-L", "-P"].includes(args[i]!)) i++;
  while (i < args.length && !/^[-(!,)]/.test(args[i]!)) i++; // the starting paths
  for (; i < args.length; i++) {
    const a = args[i]!;
    if (FIND_NO_VALUE.has(a)) continue;
    if (FIND_VALUED.has(a)) {
      if (++i >= args.length) return false;
      continue;
    }
    return false;
  }
  return true;
}

/**
 * `git`: only `--no-pager` before the subcommand — `-c`/`--config-env` (set a pager, an external diff,
 * an fsmonitor: each runs a program), `-C`/`--git-dir`/`--work-tree` (another repository, with its own
 * config) and `-p`/`--paginate` make it an ordinary call. The subcommands read the repository.
 * `--output`, `--ext-diff`, `--textconv`, `--exec` and abbreviations of them are not on any list, nor
 * `--show-signature` (runs gpg) or `--remerge-diff` (writes temporary objects).
 */
const GIT_DIFF_FLAGS = {
  short: "pusRzawbWM",
  shortValued: "UO",
  long: ["patch", "no-patch", "raw", "patch-with-raw", "patch-with-stat", "stat", "shortstat", "numstat", "compact-summary", "summary", "name-only", "name-status", "no-color", "no-ext-diff", "no-textconv", "no-renames", "minimal", "patience", "histogram", "ignore-all-space", "ignore-space-change", "ignore-blank-lines", "ignore-space-at-eol", "ignore-cr-at-eol", "full-index", "binary", "text", "check", "exit-code", "quiet", "relative", "irreversible-delete", "function-context", "no-prefix", "cumulative"],
  longValued: ["diff-filter", "unified", "src-prefix", "dst-prefix", "word-diff-regex", "stat-width", "stat-count", "diff-algorithm"],
  longOptional: ["color", "word-diff", "color-words", "dirstat", "find-renames", "find-copies", "abbrev", "ignore-submodules", "submodule", "color-moved"],
} as const;
const GIT_LOG_EXTRA = {
  short: "g",
  shortValued: "nLSG",
  long: ["oneline", "graph", "all", "branches", "tags", "remotes", "reverse", "follow", "no-merges", "merges", "first-parent", "abbrev-commit", "no-abbrev-commit", "topo-order", "date-order", "author-date-order", "left-right", "cherry-pick", "cherry-mark", "source", "walk-reflogs", "full-history", "simplify-by-decoration", "no-decorate", "boundary", "log-size", "regexp-ignore-case", "all-match", "invert-grep", "extended-regexp", "fixed-strings", "perl-regexp", "no-walk", "do-walk", "full-diff", "no-notes", "show-linear-break", "parents", "children", "relative-date", "mailmap", "use-mailmap", "no-mailmap"],
  longValued: ["max-count", "skip", "since", "after", "until", "before", "author", "committer", "grep", "grep-reflog", "date", "min-parents", "max-parents"],
  longOptional: ["decorate", "pretty", "format", "notes", "exclude"],
} as const;
function merge(...specs: FlagSpec[]): FlagSpec {
  const cat = (k: "long" | "longValued" | "longOptional") => specs.flatMap((s) => s[k] ?? []);
  return {
    short: specs.map((s) => s.short ?? "").join(""),
    shortValued: specs.map((s) => s.shortValued ?? "").join(""),
    long: cat("long"),
    longValued: cat("longValued"),
    longOptional: cat("longOptional"),
    numeric: specs.some((s) => s.numeric),
  };
}
const GIT: Record<string, Entry> = {
  // the working tree's state (may refresh the index's stat cache, as every git read does)
  status: {
    flags: {
      short: "sbvz",
      long: ["short", "branch", "long", "verbose", "show-stash", "ahead-behind", "no-ahead-behind", "no-column", "no-renames", "renames"],
      longOptional: ["porcelain", "untracked-files", "ignored", "ignore-submodules", "column", "find-renames"],
    },
  },
  // history
  log: { flags: merge(GIT_DIFF_FLAGS, GIT_LOG_EXTRA, { numeric: true }) },
  // changes
  diff: { flags: merge(GIT_DIFF_FLAGS, { long: ["cached", "staged", "merge-base", "no-index"] }) },
  // one object
  show: { flags: merge(GIT_DIFF_FLAGS, GIT_LOG_EXTRA, { numeric: true }) },
  // lists branches only: a positional creates a branch unless --list is given; -d/-D/-m/-M/-c/-C/-u/-f are not on the list
  branch: {
    flags: {
      short: "arv",
      long: ["list", "all", "remotes", "verbose", "show-current", "no-color", "no-column", "ignore-case", "omit-empty"],
      longValued: ["format", "sort"],
      longOptional: ["color", "column", "abbrev"],
    },
    check: (p) => p.positionals.length === 0 || p.flags.includes("--list"),
  },
};
function gitIsReadOnly(args: readonly string[]): boolean {
  let i = 0;
  while (args[i] === "--no-pager") i++;
  const sub = args[i];
  if (sub === undefined || !Object.hasOwn(GIT, sub)) return false;
  return entryAllows(GIT[sub]!, args.slice(i + 1));
}

function entryAllows(e: Entry, args: readonly string[]): boolean {
  const p = readFlags(args, e.flags);
  return p !== null && (e.check?.(p) ?? true);
}

/** One simple command of the parse: on the list, with listed flags, no redirect, no glob. */
function simpleIsReadOnly(c: SimpleCommand): boolean {
  if (c.redirects.length > 0 || c.globs.size > 0 || c.words.length === 0) return false;
  const [name, ...args] = c.words as [string, ...string[]];
  if (name === "find") return findIsReadOnly(args);
  if (name === "git") return gitIsReadOnly(args);
  if (!Object.hasOwn(COMMANDS, name)) return false;
  return entryAllows(COMMANDS[name]!, args);
}

/**
 * True when the raw text has a construct the list does not judge: outside single quotes a `$`
 * (variables, `$(…)`, `$'…'`, arithmetic) or a backtick; outside any quotes a brace (`{a,b}`
 * expansion), a glob character, `<`/`>` (redirects, process substitution); anywhere a whitespace
 * character other than space, tab and newline (JavaScript and bash split words differently on them) or NUL.
 */
function hasUnjudgedSyntax(command: string): boolean {
  if (/[^\S \t\n]|\0/.test(command)) return true;
  let q: "'" | '"' | null = null;
  for (let i = 0; i < command.length; i++) {
    const ch = command[i]!;
    if (q === "'") {
      if (ch === "'") q = null;
      continue;
    }
    if (ch === "\\") {
      i++; // an escaped character is literal
      continue;
    }
    if (ch === "$" || ch === "`") return true;
    if (q === '"') {
      if (ch === '"') q = null;
      continue;
    }
    if (ch === "'" || ch === '"') q = ch;
    else if ("{}*?[]<>".includes(ch)) return true;
  }
  return false;
}

/**
 * Whether `command` (a `bash -c` command line) is a known read-only command: every simple command of
 * it (across `&&`, `||`, `;`, `|`, `&`, subshells) is on the list with listed flags, and it has no
 * redirect, substitution, variable, brace expansion or glob. False for anything else, including a
 * command the parser cannot read. Pure; never throws.
 */
export function isKnownReadOnlyCommand(command: string): boolean {
  if (typeof command !== "string" || hasUnjudgedSyntax(command)) return false;
  const parsed = splitCommands(command);
  if (!parsed.ok || parsed.commands.length === 0) return false;
  return parsed.commands.every(simpleIsReadOnly);
}
