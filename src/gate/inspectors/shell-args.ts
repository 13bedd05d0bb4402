/**
 * @module gate/inspectors/shell-args
 * Reading a command's arguments the way the programs do, for the security floor: getopt-style short
 * and long options, old-style `tar` clusters, a copy's target, a wrapper's directory flag, `--` and
 * operands, brace expansion, and glob components.
 */
import { readdirSync } from "node:fs";

/** Long options whose value may follow as the next word (`--output FILE`); others take theirs after `=` or none. */
const LONG_WITH_VALUE = new Set(["--output", "--output-dir", "--dump-header", "--cookie-jar", "--trace", "--trace-ascii", "--stderr", "--etag-save", "--libcurl", "--hsts", "--alt-svc", "--output-document", "--output-file", "--append-output", "--directory-prefix", "--directory", "--file", "--separate-git-dir", "--branch", "--origin", "--upload-pack", "--reference", "--depth", "--template", "--config", "--filter", "--jobs", "--header", "--data", "--user-agent", "--user", "--request"]);

/**
 * Reads options the getopt way: short clusters (`-sSLo f`, `-Cdir`; a letter in `valueLetters` takes
 * the rest of the cluster or the next word), long options (`--name=v`, or `--name v` for the names in
 * {@link LONG_WITH_VALUE}), and operands as `{name: "", value}`. Everything after `--` is an operand.
 */
export function shortAndLongOptions(args: string[], valueLetters: string): { name: string; value?: string }[] {
  const out: { name: string; value?: string }[] = [];
  for (let k = 0; k < args.length; k++) {
    const a = args[k]!;
    if (a === "--") {
      for (const r of args.slice(k + 1)) out.push({ name: "", value: r });
      break;
    }
    if (a.startsWith("--")) {
      const eq = a.indexOf("=");
      if (eq > 0) out.push({ name: a.slice(0, eq), value: a.slice(eq + 1) });
      else if (LONG_WITH_VALUE.has(a)) out.push({ name: a, value: args[++k] });
      else out.push({ name: a });
      continue;
    }
    if (a.startsWith("-") && a.length > 1) {
      for (let j = 1; j < a.length; j++) {
        const letter = a[j]!;
        if (valueLetters.includes(letter)) {
          out.push({ name: letter, value: j + 1 < a.length ? a.slice(j + 1) : args[++k] });
          break;
        }
        out.push({ name: letter });
      }
      continue;
    }
    out.push({ name: "", value: a });
  }
  return out;
}

/**
 * `tar` old-style options (`tar xfC a.tar DIR`): each letter of the first word that takes a value takes
 * the next word, in order. Returns getopt-style words (`-x -f a.tar -C DIR …`).
 */
export function oldStyleTar(cluster: string, rest: string[], valueLetters: string): string[] {
  const out: string[] = [];
  const more = [...rest];
  for (const ch of cluster) {
    out.push(`-${ch}`);
    if (valueLetters.includes(ch) && more.length) out.push(more.shift()!);
  }
  return [...out, ...more];
}

/** The target folder of `cp`/`mv`/`install`/`ln` given as `-t` inside a cluster of short flags (`-at DIR`, `-at/etc`), or undefined. */
export function clusterTarget(args: string[]): string | undefined {
  for (let k = 0; k < args.length && args[k] !== "--"; k++) {
    const m = /^-([a-zA-Z]*?)t(.*)$/.exec(args[k]!);
    if (!m || args[k]!.startsWith("--") || /[SmogZ]/.test(m[1]!)) continue; // a letter before t that takes a value ate the rest
    return m[2] !== "" ? m[2] : args[k + 1];
  }
  return undefined;
}

/**
 * The folder a wrapper flag moves the command into: `env -C DIR`/`-CDIR`/`--chdir=DIR`/`--chdir DIR`,
 * `sudo -D DIR`/`--chdir=DIR`. `next`: the folder is the following word. Undefined for other flags.
 */
export function chdirFlag(wrapper: string, flag: string, following: string | undefined): { dir: string; next: boolean } | undefined {
  const short = wrapper === "env" ? "C" : "D";
  if (flag === `-${short}` || flag === "--chdir") return following === undefined ? undefined : { dir: following, next: true };
  if (flag.startsWith("--chdir=")) return { dir: flag.slice("--chdir=".length), next: false };
  if (flag.startsWith(`-${short}`)) return { dir: flag.slice(2), next: false };
  return undefined;
}

/** The folder `git clone SRC` creates when no DEST is given: the last path part of SRC without `.git`. */
export function humanishName(src: string): string {
  const trimmed = src.replace(/\/+$/, "").replace(/\/\.git$/, "");
  const last = trimmed.split(/[/:]/).pop() ?? trimmed;
  return last.replace(/\.git$/, "") || ".";
}

/** What tests one name against a glob path component ({@link globComponent}). */
export interface GlobMatcher {
  test(name: string): boolean;
}

/**
 * A matcher for one glob path component: `*`, `?`, `[…]`, `[!…]`/`[^…]`, `\x`; anything else literal.
 * Every token but `*` matches exactly one character, so `*` is matched by the classic two-pointer wildcard
 * walk (at most name length × pattern length steps), never by a backtracking regular expression: the
 * model writes both the glob and the file names, and `*a*a*a*a*a*a*a*b` against a 200-character name
 * backtracked for hours in airlock's own thread (the security floor judges every shell call there).
 */
export function globComponent(comp: string): GlobMatcher {
  const tokens: (((c: string) => boolean) | "*")[] = [];
  for (let i = 0; i < comp.length; i++) {
    const ch = comp[i]!;
    if (ch === "*") {
      if (tokens[tokens.length - 1] !== "*") tokens.push("*");
    } else if (ch === "?") tokens.push((c) => c !== "/");
    else if (ch === "\\" && i + 1 < comp.length) {
      const lit = comp[++i]!;
      tokens.push((c) => c === lit);
    } else if (ch === "[") {
      const close = comp.indexOf("]", i + 2);
      if (close < 0) {
        tokens.push((c) => c === "[");
        continue;
      }
      let body = comp.slice(i + 1, close);
      const negate = body.startsWith("!") || body.startsWith("^");
      if (negate) body = body.slice(1);
      let cls: RegExp;
      try {
        cls = new RegExp(`^[${negate ? "^" : ""}${body.replace(/[\\\]^]/g, "\\$&")}]$`, "s"); // one character: no backtracking
      } catch {
        return { test: () => true }; // a class the RegExp engine rejects: match every name (judge them all)
      }
      tokens.push((c) => cls.test(c));
      i = close;
    } else tokens.push((c) => c === ch);
  }
  return { test: (name) => wildcardMatch(tokens, [...name]) };
}

/** The two-pointer wildcard walk: on a mismatch, the last `*` takes one more character. */
function wildcardMatch(tokens: readonly (((c: string) => boolean) | "*")[], chars: readonly string[]): boolean {
  let t = 0;
  let c = 0;
  let star = -1;
  let mark = 0;
  while (c < chars.length) {
    const tok = tokens[t];
    if (tok !== undefined && tok !== "*" && tok(chars[c]!)) {
      t++;
      c++;
    } else if (tok === "*") {
      star = t++;
      mark = c;
    } else if (star >= 0 && chars[mark] !== "/") {
      t = star + 1;
      c = ++mark;
    } else return false;
  }
  while (tokens[t] === "*") t++;
  return t === tokens.length;
}

export function escapeRe(ch: string): string {
  return ch.replace(/[.*+?^${}()|[\]\\\/-]/g, "\\$&");
}

export function listDir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** Splits arguments into flags and operands (everything after `--` is an operand); operands keep their index. */
export function splitOperands(args: string[]): { flags: string[]; list: { word: string; index: number }[] } {
  const flags: string[] = [];
  const list: { word: string; index: number }[] = [];
  let endOfFlags = false;
  args.forEach((a, index) => {
    if (!endOfFlags && a === "--") endOfFlags = true;
    else if (!endOfFlags && a.startsWith("-") && a !== "-") flags.push(a);
    else list.push({ word: a, index });
  });
  return { flags, list };
}

export function flagValue(args: string[], flag: string): string | undefined {
  const i = args.indexOf(flag);
  return i >= 0 ? args[i + 1] : undefined;
}

/** Most words one brace expansion yields; a word that reaches it is too large to judge. */
export const BRACE_BUDGET = 64;

/**
 * The words a brace expansion makes (`{/,x}` → `/`, `x`; `a{b,c}d` → `abd`, `acd`; `l{h..j}nk` →
 * `lhnk`, `link`, `ljnk`; `{1..3}`, `{01..10..2}`), or null when `word` has none. At most `budget` words.
 */
export function braceAlternatives(word: string, budget = BRACE_BUDGET): string[] | null {
  for (let open = word.indexOf("{"); open >= 0; open = word.indexOf("{", open + 1)) {
    let depth = 0;
    const commas: number[] = [];
    let close = -1;
    for (let j = open; j < word.length; j++) {
      const ch = word[j];
      if (ch === "{") depth++;
      else if (ch === "}" && --depth === 0) {
        close = j;
        break;
      } else if (ch === "," && depth === 1) commas.push(j);
    }
    if (close < 0) return null;
    if (commas.length === 0) {
      const seq = braceSequence(word.slice(open + 1, close), budget);
      if (seq === null) continue;
      const out: string[] = [];
      for (const item of seq) {
        const w = word.slice(0, open) + item + word.slice(close + 1);
        for (const x of braceAlternatives(w, budget) ?? [w]) if (out.length < budget) out.push(x);
      }
      return out;
    }
    const cuts = [open, ...commas, close];
    const out: string[] = [];
    for (let k = 0; k + 1 < cuts.length; k++) {
      const w = word.slice(0, open) + word.slice(cuts[k]! + 1, cuts[k + 1]) + word.slice(close + 1);
      for (const x of braceAlternatives(w, budget) ?? [w]) if (out.length < budget) out.push(x);
    }
    return out;
  }
  return null;
}

/** The items of a `{a..e}` / `{1..10..2}` / `{01..10}` sequence (at most `budget`), or null when `body` is none. */
export function braceSequence(body: string, budget: number): string[] | null {
  const num = /^([-+]?\d+)\.\.([-+]?\d+)(?:\.\.([-+]?\d+))?$/.exec(body);
  const chr = /^([A-Za-z])\.\.([A-Za-z])(?:\.\.([-+]?\d+))?$/.exec(body);
  const m = num ?? chr;
  if (!m) return null;
  const from = num ? Number(m[1]) : m[1]!.charCodeAt(0);
  const to = num ? Number(m[2]) : m[2]!.charCodeAt(0);
  const step = Math.abs(Number(m[3] ?? 1)) || 1;
  const width = num && (/^[-+]?0\d/.test(m[1]!) || /^[-+]?0\d/.test(m[2]!)) ? Math.max(m[1]!.length, m[2]!.length) : 0;
  const out: string[] = [];
  for (let v = from; from <= to ? v <= to : v >= to; v += from <= to ? step : -step) {
    if (out.length >= budget) break;
    out.push(num ? (v < 0 ? "-" + String(-v).padStart(width - 1, "0") : String(v).padStart(width, "0")) : String.fromCharCode(v));
  }
  return out;
}

