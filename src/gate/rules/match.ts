/**
 * @module gate/rules/match
 * Matches one call's arguments against parsed rule specifiers. A shell call is split into its simple
 * commands with the security floor's parser (`splitCommands`); a path call is resolved against the
 * session's workspace, both as written and through its symlinks. Matching is asymmetric and fails
 * closed: an allow rule must match EVERY part of a shell command (and what the parser cannot read never
 * matches it), while a deny or ask rule matches when ANY part does.
 */
import { realpathSync } from "node:fs";
import path from "node:path";
import picomatch from "picomatch";
import { AirlockError } from "../../errors.ts";
import { resolveRealPath } from "../../launcher/resolve.ts";
import type { RealPaths } from "../inspectors/floor-paths.ts";
import { globComponent, type GlobMatcher } from "../inspectors/shell-args.ts";
import { splitCommands, type SimpleCommand } from "../../shell/words.ts";
import { RESERVED, WRAPPERS } from "../../shell/command-words.ts";
import type { PathPattern, ShellPattern } from "./parse.ts";

/** A compiled path pattern: its anchor and picomatch test. */
export interface PathMatcher {
  anchor: PathPattern["anchor"];
  glob: string;
  test: (p: string) => boolean;
  /**
   * What every path the glob matches starts with, so most calls skip its test: for `workspace` and
   * `absolute` anchors the glob's leading literal segments (`src/module7` for `Edit(src/module7/**)`;
   * a match is that or below it), for `anywhere` the glob itself when it is literal (`.env`: a segment
   * equal to it). Null when the glob starts with a wildcard (no shortcut).
   */
  literal: string | null;
}

/** A segment picomatch reads literally (no `*?[]{}()!+@\` and the like), and not `.` or `..`. */
const LITERAL_SEGMENT = /^[A-Za-z0-9_.-]+$/;

/** See {@link PathMatcher.literal}. */
export function literalPrefix(p: PathPattern): string | null {
  const segs = p.glob.split("/");
  const literal = (x: string) => LITERAL_SEGMENT.test(x) && x !== "." && x !== "..";
  switch (p.anchor) {
    case "anywhere":
      return segs.length === 1 && literal(p.glob) ? p.glob : null;
    case "workspace":
    case "absolute": {
      const from = p.anchor === "absolute" ? 1 : 0;
      if (p.anchor === "absolute" && segs[0] !== "") return null;
      let k = from;
      while (k < segs.length && literal(segs[k]!)) k++;
      return k === from ? null : segs.slice(0, k).join("/");
    }
    default:
      return p.anchor satisfies never;
  }
}

/** A glob of `*`, `?`, `[…]`, `\x` and literals only: no braces, extglobs or negation (those stay picomatch's). */
const SIMPLE_GLOB = /^(?:[^{}()!+@\\]|\\.)*$/;

/** Whether picomatch's expression for `glob` could backtrack far: a segment with more than 2 wildcards, or more than 2 `**`. */
function backtracks(glob: string): boolean {
  const segs = glob.split("/");
  return segs.filter((g) => g === "**").length > 2 || segs.some((g) => g !== "**" && (g.replace(/\\./g, "").match(/[*?]/g)?.length ?? 0) > 2);
}

/**
 * Compiles a path pattern (picomatch's meaning, dotfiles included: `**` covers `.env`). A simple glob
 * ({@link SIMPLE_GLOB}) that picomatch's expression could take minutes on ({@link backtracks}) is matched segment by segment with the floor's linear wildcard walk (shell-args.ts
 * `globComponent`) and `**` as zero or more segments (a table, path segments × pattern segments), never by a
 * backtracking regular expression: an untrusted repository's deny rule (`Read(./**\/*a*a*a*a*a*a*a*b)`)
 * tested against a model-written path did not finish in 30 s as picomatch's expression.
 */
export function compilePath(p: PathPattern): PathMatcher {
  if (SIMPLE_GLOB.test(p.glob) && backtracks(p.glob)) {
    const segs = p.glob.split("/").map((g): GlobMatcher | "**" => (g === "**" ? "**" : globComponent(g)));
    return { anchor: p.anchor, glob: p.glob, test: (s: string) => segmentsMatch(segs, s.split("/")), literal: literalPrefix(p) };
  }
  // picomatch's regular expression, tested directly: the paths given are already clean (absolute, or
  // relative with no `./`), so its matcher's own normalising (and per-call cost) is not needed
  const re = picomatch.makeRe(p.glob, { dot: true });
  return { anchor: p.anchor, glob: p.glob, test: (s: string) => re.test(s), literal: literalPrefix(p) };
}

/** Whether path segments `parts` match glob segments `segs` (`**`: zero or more segments); dynamic programming. */
function segmentsMatch(segs: readonly (GlobMatcher | "**")[], parts: readonly string[]): boolean {
  // can[j]: the first i glob segments match the first j path segments (rolled over i)
  let can = new Array<boolean>(parts.length + 1).fill(false);
  can[0] = true;
  for (const seg of segs) {
    const next = new Array<boolean>(parts.length + 1).fill(false);
    if (seg === "**") {
      let any = false;
      for (let j = 0; j <= parts.length; j++) {
        any ||= can[j]!;
        next[j] = any;
      }
    } else {
      for (let j = 1; j <= parts.length; j++) next[j] = can[j - 1]! && seg.test(parts[j - 1]!);
    }
    can = next;
  }
  return can[parts.length]!;
}

/** `s` is `prefix` or lies below it (segment-wise). */
function under(s: string, prefix: string): boolean {
  return s.length === prefix.length ? s === prefix : s.startsWith(prefix) && s[prefix.length] === "/";
}

/** One simple command as rules see it: its words and their space-joined text, as written and unwrapped. */
interface CommandForms {
  /** `forms[0]` is the command as written; the rest with assignments and wrappers stripped (deny and ask rules try them all). */
  forms: { words: readonly string[]; text: string }[];
}

/** A shell command as rules see it, parsed once per call. */
export interface ShellView {
  /** Every simple command (substitutions' included), or null when the parser cannot read the command. */
  commands: CommandForms[] | null;
  /** The commands a `bash -c '…'`, `sh -c`, `eval …` among them runs (deny and ask rules look inside too). */
  nested: CommandForms[];
  /** True when an allow rule may match at all: parsed, no substitution (`$(…)`, backticks, `<(…)`) or `${…}`/`$[…]` expansion, no write redirection. */
  allowable: boolean;
  /** The raw command split on blanks (what deny and ask rules fall back to when it cannot be parsed). */
  raw: CommandForms;
}

/**
 * Redirections that write a file; to /dev/null or an fd duplicate (`2>&1`) they write nothing. Claude
 * Code lets `Bash(python:*)` match `python x.py > out.txt` (changelog 1.0.123; anthropics/claude-code#13137
 * asks the same for `2>&1`); airlock's allow rules never cover a command that writes a file by redirection.
 */
const WRITE_REDIRECTS = new Set([">", ">>", ">|", "&>", "&>>", "<>", ">&"]);

function formsOf(words: readonly string[]): CommandForms {
  return { forms: strippedForms(words).map((w) => ({ words: w, text: w.join(" ") })) };
}

/** Shells whose `-c SCRIPT` runs SCRIPT as a command line. */
const SHELLS = new Set(["bash", "sh", "zsh", "dash", "ksh", "ash", "mksh"]);

/** How deep deny and ask rules look into `bash -c` / `eval` scripts. */
const NESTED_DEPTH = 4;

/**
 * The command line a simple command runs as a script, if it is one: `bash -c SCRIPT` (any flag cluster
 * with `c`, also after wrappers) or `eval ARGS…`. Claude Code's deny rules did not look inside these
 * (anthropics/claude-code#39601); airlock's deny and ask rules do.
 */
function scriptOf(c: CommandForms): string | null {
  for (const f of c.forms) {
    const w = f.words;
    const name = path.basename(w[0] ?? "");
    if (name === "eval" && w.length > 1) return w.slice(1).join(" ");
    if (SHELLS.has(name)) {
      const k = w.findIndex((x, i) => i > 0 && /^-[A-Za-z]*c[A-Za-z]*$/.test(x));
      // `bash -c -- 'script'`: `--` ends the options, the script is the word after it
      const script = w[k + 1] === "--" ? w[k + 2] : w[k + 1];
      if (k > 0 && script !== undefined) return script;
    }
  }
  return null;
}

/** The commands the `bash -c` / `eval` scripts among `commands` run, recursively (bounded). */
function nestedCommands(commands: CommandForms[], depth: number): CommandForms[] {
  if (depth > NESTED_DEPTH) return [];
  const out: CommandForms[] = [];
  for (const c of commands) {
    const script = scriptOf(c);
    if (script === null) continue;
    const p = splitCommands(script, depth);
    const inner = p.ok ? p.commands.map((x) => formsOf(x.words)) : [formsOf(script.trim().split(/\s+/).filter(Boolean))];
    out.push(...inner, ...nestedCommands(inner, depth + 1));
  }
  return out;
}

/** Parses a shell command for matching (see {@link ShellView}). */
export function shellView(command: string): ShellView {
  const raw = formsOf(command.trim().split(/\s+/).filter(Boolean));
  const parsed = splitCommands(command);
  if (!parsed.ok) return { commands: null, nested: [], allowable: false, raw: rawForms(command, raw) };
  // `${…}` and `$[…]` too: `${x:=a[\$\(cmd\)]} ${y[x]}` assigns text that an array subscript then
  // evaluates as arithmetic, which runs `cmd` (bash's arithmetic expansion of variable values)
  const substitution = /`|\$\(|\$\{|\$\[|<\(|>\(/.test(command);
  const writes = parsed.commands.some((c: SimpleCommand) => c.redirects.some((r) => WRITE_REDIRECTS.has(r.op) && r.target !== "/dev/null" && !/^(\d+|-)$/.test(r.target)));
  const commands = parsed.commands.map((c) => formsOf(c.words));
  return { commands, nested: nestedCommands(commands, 1), allowable: !substitution && !writes && parsed.commands.length > 0, raw };
}

/**
 * The raw fallback of a command the parser does not read (past `MAX_COMMAND_CHARS`, unbalanced quotes): the
 * whole command split on blanks, and each stretch between shell operators, brackets and quotes split on blanks,
 * so a deny or ask rule hits `rm` in `echo <600 KB>; rm x` or `… bash -c 'rm x'`. Linear; it over-matches
 * (a `;` inside quotes splits too), which only makes a deny or ask rule fire more.
 */
function rawForms(command: string, whole: CommandForms): CommandForms {
  const forms = [...whole.forms];
  const seen = new Set<string>(); // a stretch repeated (`x; x; x; …`) is tried once
  for (const part of command.split(/[\n\r;&|()`'"{}]/)) {
    const text = part.trim();
    if (seen.has(text)) continue;
    seen.add(text);
    const words = text.split(/\s+/).filter(Boolean);
    if (words.length > 0) forms.push(...formsOf(words).forms);
  }
  return { forms };
}

function wordsMatch(p: ShellPattern, f: { words: readonly string[]; text: string }): boolean {
  const words = f.words;
  switch (p.kind) {
    case "exact":
      return words.length === p.words.length && p.words.every((w, i) => words[i] === w);
    case "prefix":
      return words.length >= p.words.length && p.words.every((w, i) => words[i] === w);
    case "wildcard":
      return p.regex.test(f.text);
    default:
      return p satisfies never;
  }
}

// Deny and ask rules look through the wrappers and reserved words of src/shell/command-words.ts (the floor's
// list, a superset of what Claude Code strips — `timeout time nice stdbuf nohup command builtin noglob` and
// leading `NAME=value`, anthropics/claude-code#92542). An allow rule must match the command as written, so a
// wrapper never smuggles a call under an allow.

/** Most word lists one simple command is tried as (a bound on the work a long wrapper chain costs). */
const MAX_FORMS = 32;

/**
 * The word lists a deny or ask rule is tried on for one simple command: as written, and with leading
 * `NAME=value` assignments and wrappers (`env`, `timeout 5`, `nice -n 5`, `sudo` …) stripped — so
 * `Bash(rm:*)` in deny also catches `FOO=1 timeout 5 rm -rf x`. A wrapper's options may take values
 * (`sudo -u root`, `timeout -s KILL 5`, `env -u X`) that cannot be told from the command without knowing
 * each wrapper, so every word up to the first plain word that does not follow a flag is tried as the
 * command. A program named by a path (`/bin/rm`, `./node_modules/.bin/x`) is also tried by its base name.
 */
function strippedForms(words: readonly string[]): (readonly string[])[] {
  const out: (readonly string[])[] = [];
  const seen = new Set<number>();
  const add = (i: number) => {
    if (i >= words.length || seen.has(i) || out.length >= MAX_FORMS) return;
    seen.add(i);
    const form = i === 0 ? words : words.slice(i);
    out.push(form);
    if (form[0]!.includes("/") && !form[0]!.endsWith("/")) out.push([path.basename(form[0]!), ...form.slice(1)]);
    queue.push(i);
  };
  const queue: number[] = [];
  add(0);
  while (queue.length && out.length < MAX_FORMS) {
    const i = queue.shift()!;
    const w = words[i]!;
    if (/^[A-Za-z_][A-Za-z0-9_]*=/.test(w) || RESERVED.has(w)) add(i + 1);
    else if (WRAPPERS.has(path.basename(w))) {
      // its options, their values and operands (`-n 5`, `-u root`, `timeout`'s duration): each next word may be the command
      for (let j = i + 1; j < words.length; j++) {
        add(j);
        const cur = words[j]!;
        const flagBefore = words[j - 1]!.startsWith("-") && j - 1 > i;
        if (!cur.startsWith("-") && !flagBefore && !/^\d+(\.\d+)?[smhd]?$/.test(cur) && !/^[A-Za-z_][A-Za-z0-9_]*=/.test(cur)) break;
      }
    }
  }
  return out;
}

/** Whether an allow rule's pattern covers one simple command as written. */
export function commandAllows(p: ShellPattern, c: CommandForms): boolean {
  return wordsMatch(p, c.forms[0]!);
}

/**
 * Whether an allow rule's shell pattern covers the whole command: it must have been parsed, hold no
 * substitution or write redirection, and EVERY simple command must match (Claude Code: "a prefix match
 * rule like Bash(safe-cmd:*) won't give it permission to run the command safe-cmd && other-cmd").
 */
export function shellAllows(p: ShellPattern, v: ShellView): boolean {
  if (!v.allowable || !v.commands) return false;
  return v.commands.every((c) => commandAllows(p, c));
}

/**
 * Whether a deny or ask rule's shell pattern hits the command: ANY simple command (as written or
 * unwrapped, or run by a `bash -c` / `eval` script in it) matches; an unparsable command is tried on its
 * raw words.
 */
export function shellHits(p: ShellPattern, v: ShellView): boolean {
  if (!v.commands) return v.raw.forms.some((f) => wordsMatch(p, f));
  return v.commands.some((c) => c.forms.some((f) => wordsMatch(p, f))) || v.nested.some((c) => c.forms.some((f) => wordsMatch(p, f)));
}

/** One absolute path prepared for matching: itself and its folders, and the same relative to the workspace (null outside it). */
export interface PathForms {
  /** The absolute path itself (`abs[0]`). */
  readonly path: string;
  /** It relative to the workspace (`rel[0]`; `""` for the workspace itself), or null when outside it. */
  readonly relPath: string | null;
  /** The path and its folders. */
  readonly abs: readonly string[];
  /** Relative to the workspace, self and folders (`""` for the workspace itself), or null when outside it. */
  readonly rel: readonly string[] | null;
  /** The relative path's segments (for patterns with no slash), or null outside the workspace. */
  readonly segments: readonly string[] | null;
}

/** A path call as rules see it: the path as written (lexical) and its real path, each prepared once. */
export interface PathView {
  lexical: PathForms;
  /** Computed on first use (it follows symlinks on disk). */
  real(): PathForms;
}

/** `p` and each folder above it (`/a/b/c`, `/a/b`, `/a`; `a/b`, `a`): a pattern naming a folder covers its subtree (gitignore). */
function selfAndAncestors(p: string): string[] {
  const out = [p];
  for (let i = p.lastIndexOf("/"); i > 0; i = p.lastIndexOf("/", i - 1)) out.push(p.slice(0, i));
  return out;
}

/** `abs` relative to `workspace` when inside it (`""` for the workspace itself), else null; both absolute and normalised. */
function relativeInside(abs: string, workspace: string): string | null {
  if (workspace === "/") return abs.slice(1);
  if (abs === workspace) return "";
  return abs.startsWith(workspace) && abs[workspace.length] === "/" ? abs.slice(workspace.length + 1) : null;
}

/** {@link PathForms}, its lists built on first use (most rules are decided on `path` / `relPath` alone). */
class Forms implements PathForms {
  private absList?: string[];
  private relList?: string[] | null;
  private segList?: string[] | null;
  constructor(
    readonly path: string,
    readonly relPath: string | null,
  ) {}
  get abs(): readonly string[] {
    return (this.absList ??= selfAndAncestors(this.path));
  }
  get rel(): readonly string[] | null {
    if (this.relList === undefined) this.relList = this.relPath === null ? null : this.relPath === "" ? [""] : selfAndAncestors(this.relPath);
    return this.relList;
  }
  get segments(): readonly string[] | null {
    if (this.segList === undefined) this.segList = this.relPath === null ? null : this.relPath === "" ? [] : this.relPath.split("/");
    return this.segList;
  }
}

function formsOfPath(abs: string, workspace: string): PathForms {
  return new Forms(abs, relativeInside(abs, workspace));
}

/** Real paths of workspaces, resolved once each (a workspace does not move under a running session). */
const realWorkspaces = new Map<string, string>();

/** The real path of `abs`: realpath(3) when it exists, else component by component (missing tail kept). */
function realPathOf(abs: string): string {
  try {
    return realpathSync.native(abs);
  } catch {
    return resolveRealPath("/", abs);
  }
}

/** The real path `paths` holds for `p` from `base`; a symlink loop fails the call closed (the gate refuses it). */
function memoReal(paths: RealPaths, base: string, p: string): string {
  const r = paths.of(base, p);
  if (r === null) throw new AirlockError("internal", `too many symbolic links while resolving ${p}`);
  return r;
}

/**
 * Builds the {@link PathView} of `p` (absolute, or relative to `workspace`).
 * @param paths this judgement's resolved paths (shared with the security floor, which resolves the same
 *   path first); without it the real path is resolved here
 * @throws AirlockError `internal` from `real()` when the path loops through symlinks
 */
export function pathView(p: string, workspace: string, paths?: RealPaths): PathView {
  const ws = path.resolve(workspace);
  const lexical = formsOfPath(path.resolve(ws, p), ws);
  let real: PathForms | undefined;
  return {
    lexical,
    real() {
      if (!real && paths) {
        // as the floor resolves it: the same start path, so the same memo entry
        const rws = memoReal(paths, "/", ws);
        const abs = memoReal(paths, rws, p);
        // no symlink on the way (the common case): the real forms are the lexical ones, built once
        real = abs === lexical.path && rws === ws ? lexical : formsOfPath(abs, rws);
      }
      if (!real) {
        let rws = realWorkspaces.get(ws);
        if (rws === undefined) {
          rws = resolveRealPath("/", ws);
          if (realWorkspaces.size > 256) realWorkspaces.clear();
          realWorkspaces.set(ws, rws);
        }
        // `..` is applied after the links it crosses are followed, as the file tools do
        real = formsOfPath(realPathOf(path.isAbsolute(p) ? p : `${rws}/${p}`), rws);
      }
      return real;
    },
  };
}

function matchAt(m: PathMatcher, f: PathForms): boolean {
  // `f.abs[0]` / `f.rel[0]` is the path itself, its folders are prefixes of it: none of them can match a
  // glob whose literal prefix the path is not under
  switch (m.anchor) {
    case "absolute":
      if (m.literal !== null && !under(f.path, m.literal)) return false;
      return f.abs.some(m.test);
    case "workspace":
      if (f.relPath === null) return false;
      // the workspace folder itself: only a pattern for everything under it names it
      if (f.relPath === "") return m.glob === "**";
      if (m.literal !== null && !under(f.relPath, m.literal)) return false;
      return f.rel!.some(m.test);
    case "anywhere":
      if (f.segments === null) return false;
      if (m.literal !== null) return f.segments.includes(m.literal);
      return f.segments.some(m.test);
    default:
      return m.anchor satisfies never;
  }
}

/** Whether an allow rule's path pattern covers the call: the path as written AND its real path match. */
export function pathAllows(m: PathMatcher, v: PathView): boolean {
  if (!matchAt(m, v.lexical)) return false;
  const real = v.real();
  return real === v.lexical || matchAt(m, real);
}

/** Whether a deny or ask rule's path pattern hits the call: the path as written OR its real path matches. */
export function pathHits(m: PathMatcher, v: PathView): boolean {
  if (matchAt(m, v.lexical)) return true;
  const real = v.real();
  return real !== v.lexical && matchAt(m, real);
}
