/**
 * @module gate/rules/match
 * Matches one call's arguments against parsed rule specifiers. A shell call is split into its simple
 * commands with the security floor's parser (`splitCommands`); a path call is resolved against the
 * session's workspace, both as written and through its symlinks. Matching is asymmetric and fails
 * closed: an allow rule must match EVERY part of a shell command (and what the parser cannot read never
 * matches it), while a deny or ask rule matches when ANY part does.
 */
import path from "node:path";
import picomatch from "picomatch";
import { resolveRealPath } from "../../launcher/resolve.ts";
import { splitCommands, type SimpleCommand } from "../inspectors/shell-words.ts";
import type { PathPattern, ShellPattern } from "./parse.ts";

/** A compiled path pattern: its anchor and picomatch test. */
export interface PathMatcher {
  anchor: PathPattern["anchor"];
  glob: string;
  test: (p: string) => boolean;
}

/** Compiles a path pattern (picomatch, dotfiles included: `**` covers `.env`). */
export function compilePath(p: PathPattern): PathMatcher {
  const isMatch = picomatch(p.glob, { dot: true });
  // one argument only: picomatch's second parameter returns a (truthy) result object
  return { anchor: p.anchor, glob: p.glob, test: (s: string) => isMatch(s) };
}

/** A shell command as rules see it, parsed once per call. */
export interface ShellView {
  /** Every simple command (substitutions' included), or null when the parser cannot read the command. */
  commands: SimpleCommand[] | null;
  /** True when an allow rule may match at all: parsed, no substitution (`$(…)`, backticks, `<(…)`), no write redirection. */
  allowable: boolean;
  /** The raw command's words split on blanks (what deny and ask rules fall back to when it cannot be parsed). */
  rawWords: string[];
}

/** Redirections that write a file; to /dev/null or an fd duplicate (`2>&1`) they write nothing. */
const WRITE_REDIRECTS = new Set([">", ">>", ">|", "&>", "&>>", "<>", ">&"]);

/** Parses a shell command for matching (see {@link ShellView}). */
export function shellView(command: string): ShellView {
  const rawWords = command.trim().split(/\s+/).filter(Boolean);
  const parsed = splitCommands(command);
  if (!parsed.ok) return { commands: null, allowable: false, rawWords };
  const substitution = /`|\$\(|<\(|>\(/.test(command);
  const writes = parsed.commands.some((c) => c.redirects.some((r) => WRITE_REDIRECTS.has(r.op) && r.target !== "/dev/null" && !/^(\d+|-)$/.test(r.target)));
  return { commands: parsed.commands, allowable: !substitution && !writes && parsed.commands.length > 0, rawWords };
}

function wordsMatch(p: ShellPattern, words: readonly string[]): boolean {
  switch (p.kind) {
    case "exact":
      return words.length === p.words.length && p.words.every((w, i) => words[i] === w);
    case "prefix":
      return words.length >= p.words.length && p.words.every((w, i) => words[i] === w);
    case "wildcard":
      return p.regex.test(words.join(" "));
    default:
      return p satisfies never;
  }
}

/** Commands that run the rest of their words as a command (deny and ask rules look through them). */
const WRAPPERS = new Set(["env", "nohup", "nice", "time", "command", "exec", "sudo", "doas", "stdbuf", "ionice", "timeout"]);

/**
 * The word lists a deny or ask rule is tried on for one simple command: as written, and with leading
 * `NAME=value` assignments and wrappers (`env`, `timeout 5`, `nice -n 5`, `sudo` …) stripped — so
 * `Bash(rm:*)` in deny also catches `FOO=1 timeout 5 rm -rf x`.
 */
function strippedForms(words: readonly string[]): (readonly string[])[] {
  const out: (readonly string[])[] = [words];
  let i = 0;
  for (let guard = 0; guard < 16 && i < words.length; guard++) {
    const w = words[i]!;
    if (/^[A-Za-z_][A-Za-z0-9_]*=/.test(w)) i++;
    else if (WRAPPERS.has(path.basename(w))) {
      i++;
      // the wrapper's options and operands (`-n 5`, `-u`, `timeout`'s duration)
      while (i < words.length && (words[i]!.startsWith("-") || /^\d+(\.\d+)?[smhd]?$/.test(words[i]!) || /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[i]!))) i++;
    } else break;
    if (i < words.length) out.push(words.slice(i));
  }
  return out;
}

/**
 * Whether an allow rule's shell pattern covers the whole command: it must have been parsed, hold no
 * substitution or write redirection, and EVERY simple command must match (Claude Code: "a prefix match
 * rule like Bash(safe-cmd:*) won't give it permission to run the command safe-cmd && other-cmd").
 */
export function shellAllows(p: ShellPattern, v: ShellView): boolean {
  if (!v.allowable || !v.commands) return false;
  return v.commands.every((c) => wordsMatch(p, c.words));
}

/** Whether a deny or ask rule's shell pattern hits the command: ANY simple command (as written or unwrapped) matches; an unparsable command is tried on its raw words. */
export function shellHits(p: ShellPattern, v: ShellView): boolean {
  if (!v.commands) return strippedForms(v.rawWords).some((w) => wordsMatch(p, w));
  return v.commands.some((c) => strippedForms(c.words).some((w) => wordsMatch(p, w)));
}

/** A path call as rules see it: the absolute path as written (lexical) and its real path, with the workspace both ways. */
export interface PathView {
  lexical: string;
  workspace: string;
  /** Computed on first use (it follows symlinks on disk). */
  real(): { path: string; workspace: string };
}

/** Builds the {@link PathView} of `p` (absolute, or relative to `workspace`). */
export function pathView(p: string, workspace: string): PathView {
  const ws = path.resolve(workspace);
  let real: { path: string; workspace: string } | undefined;
  return {
    lexical: path.resolve(ws, p),
    workspace: ws,
    real() {
      if (!real) {
        const rws = resolveRealPath("/", ws);
        real = { path: resolveRealPath(rws, p), workspace: rws };
      }
      return real;
    },
  };
}

/** `rel` and each folder above it (`a/b/c`, `a/b`, `a`): a pattern naming a folder covers its subtree (gitignore). */
function selfAndAncestors(rel: string): string[] {
  const out = [rel];
  for (let i = rel.lastIndexOf("/"); i > 0; i = rel.lastIndexOf("/", i - 1)) out.push(rel.slice(0, i));
  return out;
}

function matchAt(m: PathMatcher, abs: string, workspace: string): boolean {
  switch (m.anchor) {
    case "absolute":
      return selfAndAncestors(abs).some(m.test);
    case "workspace":
    case "anywhere": {
      const rel = path.relative(workspace, abs);
      // the workspace folder itself: only a pattern for everything under it names it
      if (rel === "") return m.anchor === "workspace" && m.glob === "**";
      if (rel.startsWith("..") || path.isAbsolute(rel)) return false;
      if (m.anchor === "anywhere") return rel.split("/").some(m.test);
      return selfAndAncestors(rel).some(m.test);
    }
    default:
      return m.anchor satisfies never;
  }
}

/** Whether an allow rule's path pattern covers the call: the path as written AND its real path match. */
export function pathAllows(m: PathMatcher, v: PathView): boolean {
  if (!matchAt(m, v.lexical, v.workspace)) return false;
  const r = v.real();
  return matchAt(m, r.path, r.workspace);
}

/** Whether a deny or ask rule's path pattern hits the call: the path as written OR its real path matches. */
export function pathHits(m: PathMatcher, v: PathView): boolean {
  if (matchAt(m, v.lexical, v.workspace)) return true;
  const r = v.real();
  return matchAt(m, r.path, r.workspace);
}
