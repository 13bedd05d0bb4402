/**
 * @module shell/words
 * Splits a shell command into simple commands for the security floor and the read-only command
 * list (src/tool/read-only-commands.ts), using `shell-quote`'s
 * parser: every segment of a pipeline or list (`|`, `||`, `&&`, `;`, `&`, subshells, `$(…)`,
 * backticks, newlines) becomes one {@link SimpleCommand} with its words and its redirections. A command the
 * parser cannot read faithfully (unbalanced quotes, a parser error) or one longer than {@link MAX_COMMAND_CHARS} yields `{ok: false}` so the
 * floor can fail closed.
 */
import { parse } from "shell-quote";

/** One redirection: the operator (`>`, `>>`, `<`, `>|`, `&>`, `>&`, `<<` …) and its target word. */
export interface Redirect {
  op: string;
  target: string;
  /** True when the target was an unquoted glob pattern (`> l?nk/f`): the shell expands it before opening. */
  glob?: boolean;
}

/** One simple command: words (globs kept as their pattern text) and redirections. */
export interface SimpleCommand {
  words: string[];
  /** Indices into `words` that were unquoted glob patterns (`*`, `?`, `[…]`). */
  globs: Set<number>;
  redirects: Redirect[];
}

export type ShellParse = { ok: true; commands: SimpleCommand[] } | { ok: false; reason: string };

const SEPARATORS = new Set(["|", "||", "&&", ";", "&", ";;", "|&", "(", ")"]);
const REDIRECTS = new Set([">", ">>", "<", ">|", "&>", "&>>", ">&", "<&", "<>", "<<", "<<<", "<(", ">("]);

/** Nesting bound for `bash -c` / `$(…)` recursion (a deeper command is refused by the caller). */
export const MAX_SHELL_DEPTH = 8;

/**
 * Longest command read, in UTF-16 code units (512 Ki): judging is linear but runs on the gate's thread (about
 * 2 s for the bound), so a longer one is `{ok: false}` — the floor asks, no rule or read-only list allows it.
 */
export const MAX_COMMAND_CHARS = 512 * 1024;

/**
 * Parses `command` into simple commands. Variables are kept literally (`$HOME` stays `$HOME`) so
 * the floor can judge them; command substitutions inside words (`$(…)`, backticks) are parsed as
 * commands of their own and appended.
 */
export function splitCommands(command: string, depth = 0): ShellParse {
  if (depth > MAX_SHELL_DEPTH) return { ok: false, reason: `command nests shells deeper than ${MAX_SHELL_DEPTH} levels` };
  if (command.length > MAX_COMMAND_CHARS) {
    return { ok: false, reason: `the command is ${command.length} characters long, more than the ${MAX_COMMAND_CHARS} the floor reads (write long content with developer__write_file)` };
  }
  const pre = preprocess(command);
  if (!pre.ok) return pre;
  let entries: ReturnType<typeof parse>;
  try {
    entries = parse(pre.text, (name: string) => `$${name}`);
  } catch (e) {
    return { ok: false, reason: `the shell parser could not read the command (${(e as Error).message})` };
  }
  const out: SimpleCommand[] = [];
  let cur: SimpleCommand = { words: [], globs: new Set(), redirects: [] };
  const flush = () => {
    if (cur.words.length || cur.redirects.length) out.push(cur);
    cur = { words: [], globs: new Set(), redirects: [] };
  };
  // Open parentheses: a subshell, or a substitution (`$(…)`, `<(…)`, `>(…)`) whose command is parsed on
  // its own while the command around it keeps a placeholder word (its value is unknown to the floor).
  const parens: ({ kind: "subshell" } | { kind: "substitution"; outer: SimpleCommand })[] = [];
  const openSubstitution = (placeholder: string) => {
    cur.words.push(placeholder);
    parens.push({ kind: "substitution", outer: cur });
    cur = { words: [], globs: new Set(), redirects: [] };
  };
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i];
    if (typeof e === "string") {
      // `$(` (also `a$(`): a command substitution; the outer command sees the placeholder `$(…)`.
      if (e.endsWith("$") && isOp(entries[i + 1], "(")) {
        openSubstitution(`${e.slice(0, -1)}$(…)`);
        i++;
        continue;
      }
      // a digit right before a redirection is its fd number (`2>/dev/null`), not an argument
      if (e.startsWith(FD_MARK)) {
        if (isRedirectOp(entries[i + 1])) continue;
        cur.words.push(e.slice(FD_MARK.length));
        continue;
      }
      cur.words.push(e);
      continue;
    }
    if (!e || typeof e !== "object") continue;
    if ("comment" in e) continue;
    if ("pattern" in e) {
      cur.globs.add(cur.words.length);
      cur.words.push(String((e as { pattern: string }).pattern));
      continue;
    }
    const op = (e as { op: string }).op;
    if (op === "glob") continue;
    if (op === "(") {
      flush();
      parens.push({ kind: "subshell" });
      continue;
    }
    if (op === ")") {
      flush();
      const open = parens.pop();
      if (open?.kind === "substitution") cur = open.outer;
      continue;
    }
    if (SEPARATORS.has(op)) {
      flush();
      continue;
    }
    if (REDIRECTS.has(op)) {
      const next = entries[i + 1];
      if (op === "<(" || op === ">(") {
        openSubstitution(`${op}…)`); // process substitution: its body is a command of its own
        continue;
      }
      if (typeof next === "string") {
        cur.redirects.push({ op, target: next.startsWith(FD_MARK) ? next.slice(FD_MARK.length) : next });
        i++;
      } else if (next && typeof next === "object" && "pattern" in next) {
        cur.redirects.push({ op, target: String((next as { pattern: string }).pattern), glob: true });
        i++;
      } else {
        return { ok: false, reason: `redirection '${op}' without a target` };
      }
      continue;
    }
    return { ok: false, reason: `unsupported shell operator '${op}'` };
  }
  flush();
  while (parens.length) {
    const open = parens.pop()!;
    if (open.kind === "substitution") {
      cur = open.outer;
      flush();
    }
  }
  // command substitutions hidden inside words: `$(…)` in double quotes, backticks
  for (const c of [...out]) {
    for (const w of [...c.words, ...c.redirects.map((r) => r.target)]) {
      for (const inner of substitutions(w)) {
        const sub = splitCommands(inner, depth + 1);
        if (!sub.ok) return sub;
        out.push(...sub.commands);
      }
    }
  }
  return { ok: true, commands: out };
}

function isOp(e: unknown, op: string): boolean {
  return typeof e === "object" && e !== null && (e as { op?: string }).op === op;
}

function isRedirectOp(e: unknown): boolean {
  return typeof e === "object" && e !== null && REDIRECTS.has((e as { op?: string }).op ?? "");
}

/** The bodies of `$(…)` and `` `…` `` found inside one word. */
function substitutions(word: string): string[] {
  const found: string[] = [];
  let i = word.indexOf("$(");
  while (i >= 0) {
    let depth = 0;
    let j = i + 1;
    for (; j < word.length; j++) {
      if (word[j] === "(") depth++;
      else if (word[j] === ")" && --depth === 0) break;
    }
    const body = word.slice(i + 2, j);
    if (body !== "…") found.push(body); // "$(…)" is the placeholder of a substitution already parsed
    i = word.indexOf("$(", j);
  }
  return found;
}

/** Marks, in the preprocessed text, a redirection's fd number (`2` of `2>/dev/null`). */
const FD_MARK = "\u0001";

/**
 * Normalises the raw text before parsing, outside quotes: comments are dropped (a `#` inside a word is
 * kept as a character, as bash does), a backslash-newline is removed (joining the words around it, as
 * bash does), `$"…"` is read as `"…"`, a newline separates commands (`;`), and backticks become `$(…)`. Unbalanced quotes or
 * backticks are reported (shell-quote would silently accept them).
 */
function preprocess(s: string): { ok: true; text: string } | { ok: false; reason: string } {
  if (s.includes(FD_MARK)) return { ok: false, reason: "the command holds a control character (U+0001)" };
  // the text is built in parts and only its last two characters are kept at hand: testing a regex
  // against the end of the growing string made the whole pass quadratic (24 s for a 4,000-line heredoc)
  const parts: string[] = [];
  let last = ""; // the output's last two characters ("" at the start)
  const emit = (t: string) => {
    if (t === "") return;
    parts.push(t);
    last = (last + t).slice(-2);
  };
  let q: '"' | "'" | null = null;
  let inTick = false;
  for (let i = 0; i < s.length; i++) {
    const ch = s[i]!;
    if (q === "'") {
      emit(ch);
      if (ch === "'") q = null;
      continue;
    }
    if (ch === "\\") {
      if (s[i + 1] === "\n") {
        // bash removes a backslash-newline outright (`tr\<newline>uncate` is `truncate`), it splits no word
        i++;
        continue;
      }
      emit(ch + (s[i + 1] ?? ""));
      i++;
      continue;
    }
    if (q === '"') {
      if (ch === '"') q = null;
      if (ch === "`") {
        emit(inTick ? ")" : "$(");
        inTick = !inTick;
        continue;
      }
      emit(ch);
      continue;
    }
    if (ch === "$" && s[i + 1] === '"') {
      // `$"…"` is a locale-translated string: bash runs `$"rm"` as `rm` (the `$` is not a variable)
      continue;
    }
    if (ch === "'" || ch === '"') {
      q = ch;
      emit(ch);
      continue;
    }
    if (ch === "`") {
      emit(inTick ? ")" : "$(");
      inTick = !inTick;
      continue;
    }
    if (ch === "#" && (last === "" || /[\s;&|()]$/.test(last))) {
      while (i + 1 < s.length && s[i + 1] !== "\n") i++;
      continue;
    }
    if (ch === "#") {
      // inside a word `#` is a plain character to bash (`ls a#; rm x` runs rm); shell-quote would read a
      // comment there and drop the rest of the line, so it is escaped
      emit("\\#");
      continue;
    }
    if (ch === "\n" || ch === "\r") {
      emit(" ; ");
      continue;
    }
    if (ch >= "0" && ch <= "9" && (last === "" || /(?:[\s;|()]|(?<![<>])&)$/.test(last))) {
      // a word of digits right before `<` / `>` is the redirection's fd (`2>/dev/null`); with a blank
      // between (`rm x 1 >/dev/null`) it is an argument: shell-quote's tokens no longer tell them apart
      let j = i;
      while (j < s.length && s[j]! >= "0" && s[j]! <= "9") j++;
      if (s[j] === ">" || s[j] === "<") {
        emit(FD_MARK + s.slice(i, j));
        i = j - 1;
        continue;
      }
    }
    emit(ch);
  }
  if (q) return { ok: false, reason: `unbalanced ${q === "'" ? "single" : "double"} quote` };
  if (inTick) return { ok: false, reason: "unbalanced backtick" };
  return { ok: true, text: parts.join("") };
}
