/**
 * @module gate/inspectors/security-floor
 * The security floor (`sensitive_ops`): judges a call's concrete arguments at call time — so a path
 * a script composed at run time is seen — and asks, with user proof, in every mode: recursive deletes
 * of broad targets, writes outside the workspace or to protected paths, reads of credential files.
 * Shell commands are split with `shell-quote` (src/shell/words.ts); each simple command is judged.
 * Interpreter code cannot be parsed: no floor rule; the launcher's sandbox policy confines it.
 */
import os from "node:os";
import path from "node:path";
import type { SandboxPolicyName } from "../../config/schema.ts";
import { credentialPaths, insideDataDir } from "../../launcher/credentials.ts";
import { isInside, PathListing, resolveExecutable } from "../../launcher/resolve.ts";
import type { Verdict } from "../verdict.ts";
import { repoMetadataWrite } from "./repo-metadata.ts";
import { splitCommands, MAX_SHELL_DEPTH, type SimpleCommand } from "../../shell/words.ts";
import { RESERVED, SHELLS, WRAPPERS } from "../../shell/command-words.ts";
import { consumingReadKind, credentialCandidates, credentialDirKind, credentialKind, isDir, procReadKind, protectedKind, safeReal, RealPaths } from "./floor-paths.ts";
import { BRACE_BUDGET, braceAlternatives, chdirFlag, clusterTarget, flagValue, globComponent, humanishName, listDir, oldStyleTar, shortAndLongOptions, splitOperands } from "./shell-args.ts";
import { assertNever } from "../../errors.ts";

/** Where the floor judges: the session's workspace (absolute), the policy the call runs under, HOME and PATH. */
export interface FloorEnv {
  workspace: string;
  policy: SandboxPolicyName;
  home?: string;
  PATH?: string;
  /** airlock's data dir (tokens, database): file tools touching it are denied (`data_dir_refused`), no card. */
  dataDir?: string;
  /** This judgement's resolved paths, shared with the permission rules (floor-paths.ts `judgementPaths`); absent: resolved here. */
  paths?: RealPaths;
}

/** The kind of a call, as the floor sees it (by Claude Code alias or airlock name). */
export type FloorCall = { kind: "shell"; command: string } | { kind: "read"; path: string } | { kind: "write"; path: string } | { kind: "none" };

/** Maps a tool to what the floor judges: Bash/developer__shell → command, Read → path read, Write/Edit → path write. */
export function floorCall(tool: { name: string; claude?: { name: string } }, args: unknown): FloorCall {
  const a = (typeof args === "object" && args !== null ? args : {}) as Record<string, unknown>;
  const alias = tool.claude?.name;
  const str = (k: string) => (typeof a[k] === "string" ? (a[k] as string) : undefined);
  if (alias === "Bash" || tool.name === "developer__shell") {
    const c = str("command");
    return c === undefined ? { kind: "none" } : { kind: "shell", command: c };
  }
  if (alias === "Read" || tool.name === "developer__read_file" || tool.name === "developer__list_dir") {
    const p = str("path") ?? str("file_path");
    return p === undefined ? { kind: "none" } : { kind: "read", path: p };
  }
  if (alias === "Write" || alias === "Edit" || tool.name === "developer__write_file" || tool.name === "developer__edit_file") {
    const p = str("path") ?? str("file_path");
    return p === undefined ? { kind: "none" } : { kind: "write", path: p };
  }
  return { kind: "none" };
}

/** Judges one call. Returns allow, an ask (user proof) whose reason lists what was found, or a deny (`data_dir_refused`) for a file tool in airlock's data dir. */
export function securityFloor(tool: { name: string; claude?: { name: string } }, args: unknown, env: FloorEnv): Verdict {
  const call = floorCall(tool, args);
  const refusal = dataDirRefusal(call, env);
  if (refusal) return { kind: "deny", inspector: "sensitive_ops", code: "data_dir_refused", reason: refusal };
  const findings = judgeCall(call, env);
  if (call.kind === "write") {
    const meta = repoMetadataWrite(call.path, env.workspace); // file tools; confined processes: launcher/git-meta.ts
    if (meta) findings.push(meta);
  }
  if (findings.length === 0) return { kind: "allow", inspector: "sensitive_ops" };
  const uniq = [...new Set(findings)];
  return { kind: "ask", inspector: "sensitive_ops", userProof: true, reason: uniq.slice(0, 5).join("; ") + (uniq.length > 5 ? `; and ${uniq.length - 5} more` : "") };
}

/** The floor's findings for one call (empty when nothing is sensitive). */
export function judgeCall(call: FloorCall, env: FloorEnv): string[] {
  if (call.kind === "none") return []; // nothing to judge: skip resolving the workspace and home (lstat per component)
  const ctx = new Judge(env);
  switch (call.kind) {
    case "shell":
      ctx.shell(call.command, 0);
      break;
    case "read":
      ctx.read(call.path, ctx.ws, true);
      break;
    case "write":
      ctx.write(call.path, ctx.ws, "writes");
      break;
    default:
      return assertNever(call, "call kind");
  }
  return ctx.findings;
}

/**
 * The literal absolute paths (no variable, `~`, glob or brace) a shell command writes for certain when the
 * part that names them runs: a redirect's target, and the targets of `tee`, `touch`, `truncate`, `cp`, `install`,
 * `mv` (its destination), `dd of=`, `sed -i`/`perl -i`, `curl -o`, `wget -O`/`-P` run as a command (behind
 * wrappers too), at any depth of `bash -c` / `eval`. As spelled, without duplicates; the floor's own
 * judgement (`judgeCall`) is unchanged by it. Used for a card's `will_fail` (gate/will-fail.ts).
 */
export function literalWriteTargets(command: string, env: FloorEnv): string[] {
  const j = new Judge(env);
  j.shell(command, 0);
  return [...new Set(j.literal)];
}

/** The words of `args` that are the value of one of `names`' {@link VALUE_FLAGS} (up to `--`). */
function flagValueWords(names: Set<string>, args: string[]): Set<string> {
  const out = new Set<string>();
  for (const n of names) {
    const f = VALUE_FLAGS[n];
    if (!f) continue;
    for (let k = 0; k + 1 < args.length && args[k] !== "--"; k++) {
      const a = args[k]!;
      if ((/^-[A-Za-z0-9]+$/.test(a) && f.letters.includes(a[a.length - 1]!)) || f.long.includes(a)) out.add(args[k + 1]!);
    }
  }
  return out;
}

/** Commands that run a command string given with `-c` (like a shell, but never read commands from stdin). */
const C_STRING = new Set(["su", "runuser", "script"]);
const WRITE_ALL = new Set(["tee", "touch", "mkdir", "truncate", "shred", "unlink", "rmdir"]);
const WRITE_AFTER_FIRST = new Set(["chmod", "chown", "chgrp"]);
const COPY = new Set(["cp", "mv", "install", "ln", "rsync"]);
const HARMLESS_SINKS = new Set(["/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero"]);
/**
 * Command names the floor looks for at every word of a simple command, not only at its head, so an
 * unlisted wrapper (`setsid rm -rf /`, `flock f rm …`, `find … -exec sh -c '…'`) hides nothing.
 */
const SCANNED = new Set(["rm", "find", ...SHELLS, ...C_STRING, ...WRITE_ALL, ...WRITE_AFTER_FIRST, ...COPY, "dd", "sed", "perl", "curl", "wget", "tar", "bsdtar", "unzip", "git", "patch"]);
/**
 * Commands that write their targets whenever they run (`tee`, `touch`, `cp` …, `dd of=`, `sed -i`, `curl -o`):
 * with a redirect's target, the writes {@link literalWriteTargets} reports. Not `mkdir -p` or `rm -f`, which
 * succeed without writing when there is nothing to do.
 */
const CERTAIN_WRITERS = new Set(["tee", "touch", "truncate", "cp", "install", "mv", "dd", "sed", "perl", "curl", "wget"]);
/**
 * The flags of {@link CERTAIN_WRITERS} whose value is the next word and is not a write target (`touch -r REF`,
 * `sed -e SCRIPT`, `install -m MODE`): short letters (last of a cluster) and long names. The floor's operand split
 * takes such a value for an operand; {@link literalWriteTargets} leaves it out.
 */
const VALUE_FLAGS: Record<string, { letters: string; long: string[] }> = {
  touch: { letters: "rdt", long: ["--reference", "--date"] },
  truncate: { letters: "rs", long: ["--reference", "--size"] },
  cp: { letters: "S", long: ["--suffix"] },
  mv: { letters: "S", long: ["--suffix"] },
  install: { letters: "mogS", long: ["--mode", "--owner", "--group", "--suffix"] },
  sed: { letters: "efl", long: ["--expression", "--file", "--line-length"] },
  perl: { letters: "eEIM", long: [] },
};
/** The verbs of {@link Judge.write} that are a write of the target itself (not a move's source, a link's source, a folder extracted into). */
const CERTAIN_VERBS = new Set(["redirects output to", "writes", "downloads to", "edits in place"]);
/** Distinct command words looked up on PATH by a `stat` per folder before the folders are listed instead (a long command: a heredoc's lines). */
const LISTED_AFTER = 32;
/** Most words one judgement judges again as the arguments of a command named later in a command's words (past it: an ask). */
const MAX_RESCANNED_WORDS = 10_000;
/** Most `ln -s` links one judgement follows by hand (past it: an ask). */
const MAX_LINKS = 256;
/** Most matches of one glob word checked for credential files. */
const MAX_GLOB_MATCHES = 256;

/** One simple command as the floor reads it, after its assignments and wrappers (see `Judge.simple`). */
interface Command {
  c: SimpleCommand;
  /** Index of the command word in `c.words`. */
  i: number;
  /** The command word's possible names (`/usr/bin/rm` → rm). */
  names: Set<string>;
  /** The words after the command word. */
  args: string[];
  cwd: string | null;
  depth: number;
  scan: boolean;
  /** `xargs` runs it: its operands come from standard input. */
  viaXargs: boolean;
  /** Whether argument `k` (an index into `args`) was an unquoted glob. */
  argGlob(k: number): boolean;
  has(...names: string[]): boolean;
}

class Judge {
  readonly findings: string[] = [];
  readonly ws: string;
  readonly home: string;
  /** Symlinks this command creates (`ln -s`) before later words use them: [link path, real target]. */
  readonly links: [string, string][] = [];
  /** Literal absolute write targets of redirects and {@link CERTAIN_WRITERS} run as commands (not words scanned in another's): see {@link literalWriteTargets}. */
  readonly literal: string[] = [];
  /** Whether the writes judged now are certain ones (set around a command's redirects and its writes). */
  private certain = false;
  /** The words of the command judged now that are a flag's value ({@link VALUE_FLAGS}), never a certain write. */
  private flagValues = new Set<string>();
  /** This judgement's resolved paths: the gate's (`env.paths`) or one of its own, so a path many commands name is resolved once. */
  private readonly paths: RealPaths;
  /** This judgement's {@link resolveExecutable} answers by command word: a PATH walk (a stat per folder) once per name. */
  private readonly executables = new Map<string, string | null>();
  /** PATH folders' listings, read once this judgement looks up more than {@link LISTED_AFTER} command words. */
  private listing: PathListing | undefined;
  /** The words {@link readWord} judged, keyed by glob flag, links recorded so far, folder and word. */
  private readonly wordsRead = new Set<string>();
  /** Words judged again as the arguments of a command named later in a command's words (see `simple`), this judgement. */
  private rescanned = 0;
  /** Whether a link past {@link MAX_LINKS} was left unrecorded (and asked for). */
  private tooManyLinks = false;
  constructor(readonly env: FloorEnv) {
    this.paths = env.paths ?? new RealPaths();
    this.ws = safeReal("/", env.workspace, this.paths) ?? path.resolve(env.workspace);
    const h = env.home ?? os.homedir();
    this.home = safeReal("/", h, this.paths) ?? h;
  }

  /** Expands `~`, `$HOME`, `$PWD` and resolves against `cwd`; null when the word depends on another variable. */
  resolve(word: string, cwd: string | null): string | null {
    let w = word;
    if (w === "~" || w.startsWith("~/")) w = this.home + w.slice(1);
    else if (w.startsWith("~")) return null; // ~user
    w = w.replace(/\$\{HOME\}|\$HOME\b/g, this.home);
    if (cwd) w = w.replace(/\$\{PWD\}|\$PWD\b/g, cwd);
    if (/\$/.test(w)) return null;
    if (!path.isAbsolute(w) && cwd === null) return null;
    const real = safeReal(cwd ?? "/", w, this.paths);
    if (real === null) return null;
    // a link an earlier part of this command creates does not exist yet on disk: follow it by hand
    for (const [link, target] of this.links) {
      if (real === link || real.startsWith(link + "/")) return safeReal("/", target + real.slice(link.length));
    }
    return real;
  }

  /** `byAirlock`: a file tool reads, so `/proc/self` is airlock itself (its provider keys). */
  read(word: string, cwd: string | null, byAirlock = false): void {
    const p = this.resolve(word, cwd);
    const hit =
      credentialKind(word, this.home) ?? (p ? (credentialKind(p, this.home) ?? credentialDirKind(p)) : null) ?? procReadKind(word, cwd, p, byAirlock);
    if (hit) this.findings.push(`reads credential file ${word} (${hit})`);
    const spelled = path.isAbsolute(word) ? word : cwd ? path.posix.join(cwd, word) : null;
    const taken = (spelled ? consumingReadKind(spelled) : null) ?? (p ? consumingReadKind(p) : null);
    if (taken) this.findings.push(`reads ${word}, a kernel file whose reads consume what they return (${taken})`);
  }

  /**
   * One word that may name a file read: its brace alternatives (`~/.{ssh,x}/id_rsa`) each, then
   * `--opt=FILE`/`@FILE` candidates, a glob word by what it matches.
   */
  readWord(word: string, glob: boolean, cwd: string | null): void {
    // the same word read from the same folder through the same links finds the same: a word judged again as
    // an argument of a command named later in the words (`SCANNED`) or a long command's repeated word, once
    const key = `${glob ? 1 : 0}\0${this.links.length}\0${cwd}\0${word}`;
    if (this.wordsRead.has(key)) return;
    this.wordsRead.add(key);
    const alts = braceAlternatives(word);
    if (alts && alts.length >= BRACE_BUDGET) this.findings.push(`reads ${word}, a brace expansion too large for the floor to judge`);
    for (const w of alts ?? [word]) {
      if (glob || (alts && /[*?[]/.test(w))) this.readGlob(w, cwd);
      else for (const cand of credentialCandidates(w)) this.read(cand, cwd);
    }
  }

  /** A glob word (`~/.ssh/*`, `.env*`): every existing path it matches may be read. */
  readGlob(word: string, cwd: string | null): void {
    this.read(word, cwd);
    let w = word;
    if (w === "~" || w.startsWith("~/")) w = this.home + w.slice(1);
    w = w.replace(/\$\{HOME\}|\$HOME\b/g, this.home);
    if (/\$/.test(w)) return;
    const parts = w.split("/");
    const firstGlob = parts.findIndex((c) => /[*?[]/.test(c));
    if (firstGlob < 0) return;
    const fixed = parts.slice(0, firstGlob).join("/") || (path.isAbsolute(w) ? "/" : ".");
    const base = this.resolve(fixed, cwd);
    if (base === null) return;
    let n = 0;
    try {
      for (const m of new Bun.Glob(parts.slice(firstGlob).join("/")).scanSync({ cwd: base, dot: true, onlyFiles: false, absolute: true })) {
        const hit = credentialKind(m, this.home) ?? credentialDirKind(m);
        if (hit) {
          this.findings.push(`reads credential file ${m} through the pattern ${word} (${hit})`);
          return;
        }
        const taken = consumingReadKind(m);
        if (taken) {
          this.findings.push(`reads ${m} through the pattern ${word}, a kernel file whose reads consume what they return (${taken})`);
          return;
        }
        if (++n >= MAX_GLOB_MATCHES) return;
      }
    } catch {
      // unreadable directory: nothing to match
    }
  }

  /**
   * Judges a write target with the shell's own expansions: braces (lists and `{a..z}` sequences),
   * `~`/`$HOME`/`$PWD`, then globs (`glob`: the word was an unquoted pattern; a `[…]` bracket always
   * counts, since the parser keeps no quoting for it). Every path the pattern matches on disk (or
   * through a link this command creates) is judged, and so is the word as spelled (what the shell
   * passes when nothing matches). A target the floor cannot expand statically asks.
   */
  write(word: string, cwd: string | null, verb: string, glob = false): void {
    const alts = braceAlternatives(word);
    if (alts) {
      if (alts.length >= BRACE_BUDGET) this.findings.push(`${verb} ${word}, a brace expansion too large for the floor to judge`);
      return alts.forEach((a) => this.write(a, cwd, verb, glob));
    }
    if (glob || /\[[^\]]+\]/.test(word)) {
      const matches = this.expandGlob(word, cwd);
      if (matches === null) {
        this.findings.push(`${verb} ${word}, a pattern the floor cannot expand statically`);
        return;
      }
      for (const m of matches) this.writePath(m, cwd, verb, word);
    }
    this.writePath(word, cwd, verb, word);
  }

  /**
   * The paths a glob word matches now, component by component (`*`, `?`, `[…]`, `[!…]`; dot names
   * included), through symlinks and the links this command creates; the unmatched tail is kept as
   * spelled. Null when a variable or an unknown cwd is involved, or past {@link MAX_GLOB_MATCHES}.
   */
  expandGlob(word: string, cwd: string | null): string[] | null {
    let w = word;
    if (w === "~" || w.startsWith("~/")) w = this.home + w.slice(1);
    else if (w.startsWith("~")) return null;
    w = w.replace(/\$\{HOME\}|\$HOME\b/g, this.home);
    if (cwd) w = w.replace(/\$\{PWD\}|\$PWD\b/g, cwd);
    if (/\$/.test(w)) return null;
    if (!path.isAbsolute(w) && cwd === null) return null;
    let bases = [path.isAbsolute(w) ? "" : cwd!];
    for (const comp of w.split("/").filter((c) => c !== "")) {
      if (!/[*?[]/.test(comp)) {
        bases = bases.map((b) => `${b}/${comp}`);
        continue;
      }
      const re = globComponent(comp);
      const next: string[] = [];
      for (const b of bases) {
        const dir = safeReal("/", b || "/");
        if (dir === null) continue;
        const names = new Set(listDir(dir));
        for (const [link] of this.links) if (path.dirname(link) === dir) names.add(path.basename(link));
        for (const n of names) if (re.test(n)) next.push(`${b}/${n}`);
        if (next.length > MAX_GLOB_MATCHES) return null;
      }
      bases = next;
    }
    return bases.map((b) => b || "/");
  }

  writePath(word: string, cwd: string | null, verb: string, spelled: string): void {
    if (this.certain && word === spelled && CERTAIN_VERBS.has(verb) && word.startsWith("/") && !/[*?[\]$~{}]/.test(word) && !this.flagValues.has(word)) this.literal.push(word);
    if (HARMLESS_SINKS.has(word) || /^\/dev\/fd\/\d+$/.test(word)) return;
    const p = this.resolve(word, cwd);
    if (p === null) {
      this.findings.push(`${verb} ${spelled}, a path that depends on a variable the floor cannot see`);
      return;
    }
    if (HARMLESS_SINKS.has(p) || /^\/(dev|proc\/self)\/fd\/\d+$/.test(p)) return;
    const prot = protectedKind(p, this.home);
    if (prot) {
      this.findings.push(`${verb} protected path ${spelled} (${prot})`);
      return;
    }
    if (isInside(p, this.ws)) return;
    if (this.env.policy !== "danger-full-access" && isInside(p, "/tmp")) return; // private /tmp under bwrap (SPEC §9)
    this.findings.push(`${verb} ${spelled} outside the workspace (${p})`);
  }

  recursiveDelete(word: string, isGlob: boolean, cwd: string | null): void {
    const alts = braceAlternatives(word);
    if (alts) return alts.forEach((a) => this.recursiveDelete(a, isGlob, cwd));
    const broad = this.broad(word, isGlob, cwd);
    if (broad) this.findings.push(`recursive delete of broad target ${word} (${broad})`);
    else this.write(word, cwd, "deletes", isGlob);
  }

  /** Why a delete target is broad, or null. */
  broad(word: string, isGlob: boolean, cwd: string | null): string | null {
    if (["/", "~", "$HOME", "${HOME}", ".", "..", "*", "/*", "~/*", "./*", "../*", ".*"].includes(word)) return "a root, home, workspace or wildcard";
    let target = word;
    if (isGlob) {
      const base = path.basename(word);
      if (!/^\.?\*$/.test(base) && base !== "*.*") return null; // `build/*.o` is not broad
      target = path.dirname(word);
    }
    const p = this.resolve(target, cwd);
    if (p === null) return "its value depends on a variable the floor cannot see";
    if (p === "/") return "the filesystem root";
    if (p === this.home || isInside(this.home, p)) return "the home directory or above";
    if (p === this.ws || isInside(this.ws, p)) return "the workspace root or above";
    if (path.dirname(p) === "/") return "a top-level system directory";
    return null;
  }

  shell(command: string, depth: number): void {
    const parsed = splitCommands(command, depth);
    if (!parsed.ok) {
      this.findings.push(`the command could not be parsed safely (${parsed.reason})`);
      return;
    }
    let cwd: string | null = this.ws;
    for (const c of parsed.commands) cwd = this.simple(c, cwd, depth);
  }

  /** Judges one simple command; returns the working directory for the commands after it. */
  /**
   * Judges one simple command (its redirects, then the words): which command it is behind assignments and
   * wrappers, what code it runs (shells, `eval`, `trap`, `source`), what it writes, and where it leaves the
   * working directory for the commands after it (returned; null: unknown).
   */
  simple(c: SimpleCommand, cwd: string | null, depth: number, scan = true): string | null {
    this.certain = scan;
    this.redirects(c, cwd);
    this.certain = false;
    // every word may name a credential file (`cat`, `cp`, `curl -d @file`, `--file=…`)
    c.words.forEach((w, j) => this.readWord(w, c.globs.has(j), cwd));
    const lead = this.skipWrappers(c, cwd, depth, scan);
    if ("done" in lead) return lead.done;
    const { i, viaXargs } = lead;
    const w = c.words;
    const names = this.names(w[i]!);
    const args = w.slice(i + 1);
    const cmd: Command = { c, i, names, args, cwd, depth, scan, viaXargs, argGlob: (k) => c.globs.has(i + 1 + k), has: (...ns) => ns.some((n) => names.has(n)) };
    if (scan) {
      // the same command names later in the words: an unlisted wrapper in front hides nothing
      for (let k = 1; k < w.length; k++) {
        if (k === i || ![...this.names(w[k]!)].some((n) => SCANNED.has(n))) continue;
        // each such name judges the words after it again: `echo rm rm rm …` is quadratic, so it is bounded
        this.rescanned += w.length - k;
        if (this.rescanned > MAX_RESCANNED_WORDS) {
          this.findings.push(`the command names commands (${path.basename(w[k]!)} …) among its words so often that judging each with its arguments passes the floor's bound of ${MAX_RESCANNED_WORDS} words: too complex to judge`);
          break;
        }
        const globs = new Set([...c.globs].filter((g) => g >= k).map((g) => g - k));
        this.simple({ words: w.slice(k), globs, redirects: [] }, cwd, depth, false);
      }
    }

    if (this.runsCode(cmd)) return cwd;
    if (cmd.has("cd", "pushd")) {
      const t = args.find((a) => !a.startsWith("-"));
      if (t === undefined) return this.home;
      return this.resolve(t, cwd);
    }
    this.recursiveReads(cmd);
    this.certain = scan && [...names].some((n) => CERTAIN_WRITERS.has(n));
    this.flagValues = this.certain ? flagValueWords(names, args) : new Set();
    this.writes(cmd);
    this.certain = false;
    return cwd;
  }

  /**
   * Under `danger-full-access` no sandbox hides the credential stores, so a recursive read of a folder that
   * holds one (or airlock's data dir), or lies in one — `grep -r token ~`, `rg -uu key /`, `grep -R x ~/.config`,
 * `diff -rN ~ empty/`, `git diff --no-index ~ empty/` —
   * asks: it prints whatever those files hold. Every operand is taken as a folder it may search (a pattern
   * that names an existing folder asks too); none means the working directory.
   */
  private recursiveReads(cmd: Command): void {
    if (this.env.policy !== "danger-full-access") return;
    const { args, has, cwd } = cmd;
    const recursive =
      has("rg") ||
      (has("grep", "egrep", "fgrep") &&
        args.some((a) => a === "--recursive" || a === "--dereference-recursive" || a === "--directories=recurse" || (/^-[a-zA-Z]+$/.test(a) && /[rR]/.test(a)))) ||
      // `diff -rN ~ empty/` and `git diff --no-index ~ empty/` print every file under the folder
      (has("diff") && args.some((a) => a === "--recursive" || (/^-[a-zA-Z]+$/.test(a) && a.includes("r")))) ||
      (has("git") && args.includes("--no-index"));
    if (!recursive) return;
    const words = splitOperands(args).list.map((o) => o.word);
    const stores = credentialPaths(this.home);
    const secrets = [...stores.dirs, ...stores.files, ...(this.env.dataDir ? [this.env.dataDir] : [])].map((p) => safeReal("/", p) ?? p);
    for (const word of words.length ? words : ["."]) {
      const dir = this.resolve(word, cwd);
      if (dir === null) {
        if (/\$/.test(word)) this.findings.push(`reads every file under ${word} recursively, a folder that depends on a variable the floor cannot see`);
        continue;
      }
      if (!isDir(dir)) continue;
      const hit = secrets.find((s) => isInside(s, dir) || isInside(dir, s));
      if (hit) this.findings.push(`reads every file under ${word} recursively, credential store ${hit} included`);
    }
  }

  /** The redirects of a simple command: writes (`>`, `>>`, `&>`, …) and reads (`<`, `<&`). */
  private redirects(c: SimpleCommand, cwd: string | null): void {
    for (const r of c.redirects) {
      if ([">", ">>", ">|", "&>", "&>>", "<>"].includes(r.op)) this.write(r.target, cwd, "redirects output to", r.glob);
      else if (r.op === ">&" && !/^(\d+|-)$/.test(r.target)) this.write(r.target, cwd, "redirects output to", r.glob);
      else if (r.op === "<" || r.op === "<&") {
        if (!/^(\d+|-)$/.test(r.target)) for (const t of braceAlternatives(r.target) ?? [r.target]) this.read(t, cwd);
      }
    }
  }

  /**
   * Skips leading assignments, reserved words and wrappers (`FOO=1 sudo -E env X=1 nice -n 5 rm …`,
   * `then rm …`): the index of the command word and whether `xargs` feeds it, or `{done}` with the working
   * directory when the wrapper itself ran the rest (`env -C DIR …`, `env -S '…'`) or no command is left.
   */
  private skipWrappers(c: SimpleCommand, cwd: string | null, depth: number, scan: boolean): { i: number; viaXargs: boolean } | { done: string | null } {
    let i = 0;
    const w = c.words;
    let viaXargs = false;
    // leading assignments, reserved words and wrappers (`FOO=1 sudo -E env X=1 nice -n 5 rm …`, `then rm …`)
    for (;;) {
      while (i < w.length && (/^[A-Za-z_][A-Za-z0-9_]*=/.test(w[i]!) || RESERVED.has(w[i]!))) i++;
      if (i >= w.length) return { done: cwd };
      const name = this.names(w[i]!);
      if (![...name].some((n) => WRAPPERS.has(n))) break;
      const wrapper = [...name].find((n) => WRAPPERS.has(n))!;
      if (wrapper === "xargs") viaXargs = true;
      i++;
      while (i < w.length && w[i]!.startsWith("-")) {
        const flag = w[i]!;
        i++;
        // `env -S 'cmd args'` / `--split-string=…` runs a command line the floor must read too
        const chdir = wrapper === "env" || wrapper === "sudo" ? chdirFlag(wrapper, flag, w[i]) : undefined;
        if (chdir !== undefined) {
          // `env -C DIR cmd`, `sudo -D DIR cmd`: the rest runs in DIR (redirects above stay in the shell's cwd)
          const rest = w.slice(i + (chdir.next ? 1 : 0));
          const off = w.length - rest.length;
          const globs = new Set([...c.globs].filter((g) => g >= off).map((g) => g - off));
          const dir = this.resolve(chdir.dir, cwd);
          if (dir === null) this.findings.push(`runs a command in ${chdir.dir}, a folder that depends on a variable the floor cannot see`);
          // judged again from the wrapper's name, so its remaining flags (`env -C /etc -i touch x`) are read too
          if (rest.length) this.simple({ words: [wrapper, ...rest], globs: new Set([...globs].map((g) => g + 1)), redirects: [] }, dir, depth, scan);
          return { done: cwd };
        }
        if (wrapper === "env" && (flag === "-S" || flag.startsWith("--split-string") || /^-S./.test(flag))) {
          const line = flag === "-S" || flag === "--split-string" ? w[i] : flag.startsWith("-S") ? flag.slice(2) : flag.slice(flag.indexOf("=") + 1);
          if (line !== undefined) this.shell(line, depth + 1);
          return { done: cwd };
        }
        if (["-n", "-u", "-g", "-C", "-i", "-o", "-e", "-I", "-s", "-k", "-d", "-P"].includes(flag) && wrapper !== "env") i++; // flag takes a value
      }
      if (wrapper === "timeout" && i < w.length) i++; // the duration
    }
    return { i, viaXargs };
  }

  /** A command that runs code the floor must read too (a shell, `-c` strings, `source`, `trap`, `eval`); true when it was one. */
  private runsCode(cmd: Command): boolean {
    const { c, i, args, depth, scan, has } = cmd;
    const w = c.words;
    if (has(...SHELLS, ...C_STRING)) {
      const ci = args.findIndex((a) => /^-[a-zA-Z]*c[a-zA-Z]*$/.test(a));
      if (ci >= 0) {
        const script = args[ci + 1] === "--" ? args[ci + 2] : args[ci + 1];
        if (script === undefined) return true;
        if (depth + 1 > MAX_SHELL_DEPTH) this.findings.push("the command nests shells too deeply to judge");
        else this.shell(script, depth + 1);
        return true;
      }
      if (!scan || !has(...SHELLS) || args.some((a) => a === "--version" || a === "--help")) return true;
      // no -c: the shell runs a script file, or reads its commands from stdin, which the floor cannot see
      const script = args.find((a, k) => !a.startsWith("-") && !a.startsWith("+") && !/^[-+]o$/.test(args[k - 1] ?? ""));
      const hereString = c.redirects.find((r) => r.op === "<<<");
      if (script !== undefined && !args.includes("-s")) {
        if (script.startsWith("<(")) this.findings.push(`${w[i]} runs commands from a process substitution the floor cannot read`);
        return true;
      }
      if (hereString) this.shell(hereString.target, depth + 1);
      else if (!c.redirects.some((r) => r.op === "<")) this.findings.push(`${w[i]} reads the commands it runs from standard input, which the floor cannot read; use ${w[i]} -c '…'`);
      return true;
    }
    if (has("source", ".") && args[0]?.startsWith("<(")) {
      this.findings.push(`${w[i]} runs commands from a process substitution the floor cannot read`);
      return true;
    }
    if (has("trap") && args[0] !== undefined && !args[0].startsWith("-")) {
      // `trap 'cmd' EXIT` runs cmd later in this shell, like eval
      if (depth + 1 > MAX_SHELL_DEPTH) this.findings.push("the command nests trap too deeply to judge");
      else this.shell(args[0], depth + 1);
      return true;
    }
    if (has("eval")) {
      if (depth + 1 > MAX_SHELL_DEPTH) this.findings.push("the command nests eval too deeply to judge");
      else this.shell(args.join(" "), depth + 1);
      return true;
    }
    return false;
  }

  /** What a command writes, moves, deletes or links (`rm`, `find -delete`, `cp`, `mv`, `ln`, `dd`, `sed -i`, fetchers). */
  private writes(cmd: Command): void {
    const { c, i, names, args, cwd, viaXargs, argGlob, has } = cmd;
    const w = c.words;
    const operands = splitOperands(args);
    if (viaXargs && this.env.policy === "danger-full-access" && has("rm", ...WRITE_ALL, ...WRITE_AFTER_FIRST, ...COPY, "dd", "sed", "perl")) {
      // no sandbox: a write whose targets xargs reads from standard input cannot be judged
      this.findings.push(`${w[i]} writes to targets read from standard input through xargs, which the floor cannot see`);
    }
    if (has("rm")) {
      const recursive = operands.flags.some((f) => f === "--recursive" || (/^-[a-zA-Z]+$/.test(f) && /[rR]/.test(f)));
      operands.list.forEach(({ word, index }) => {
        if (recursive) this.recursiveDelete(word, argGlob(index), cwd);
        else this.write(word, cwd, "deletes", argGlob(index));
      });
      if (recursive && viaXargs) this.findings.push("recursive delete of targets read from standard input (xargs rm -r), which the floor cannot see");
      return;
    }
    if (has("find")) {
      const del = args.includes("-delete") || args.some((a, k) => (a === "-exec" || a === "-execdir") && /(^|\/)rm$/.test(args[k + 1] ?? ""));
      if (del) {
        const starts = args.slice(0, Math.max(0, args.findIndex((a) => /^[-(!]/.test(a)))).filter(Boolean);
        for (const s of starts.length ? starts : ["."]) this.recursiveDelete(s, false, cwd);
      }
      return;
    }
    if (has(...WRITE_ALL)) {
      for (const { word, index } of operands.list) this.write(word, cwd, "writes", argGlob(index));
      return;
    }
    if (has(...WRITE_AFTER_FIRST)) {
      for (const { word, index } of operands.list.slice(1)) this.write(word, cwd, "changes", argGlob(index));
      return;
    }
    if (has(...COPY)) {
      const t =
        operands.flags.find((f) => f.startsWith("--target-directory="))?.split("=")[1] ??
        flagValue(args, "--target-directory") ??
        flagValue(args, "-t") ??
        operands.flags.find((f) => /^-t./.test(f))?.slice(2) ??
        (has("rsync") ? undefined : clusterTarget(args));
      const list = operands.list.map((o) => o.word);
      const last = operands.list[operands.list.length - 1];
      const dest = t ?? (list.length >= 2 ? list[list.length - 1] : undefined);
      if (dest !== undefined) this.write(dest, cwd, "writes", t === undefined && last !== undefined && argGlob(last.index));
      if (has("ln") && t === undefined && list.length >= 1 && operands.flags.some((f) => f === "--symbolic" || /^-[a-zA-Z]*s/.test(f))) this.noteLink(list, cwd);
      if (has("mv")) for (const o of operands.list.filter((x) => x.word !== dest)) this.write(o.word, cwd, "moves", argGlob(o.index));
      // a hard link (`ln SRC DEST` without -s, `cp -l`) makes SRC writable through DEST: judged as a write of SRC
      const symbolic = operands.flags.some((f) => f === "--symbolic" || /^-[a-zA-Z]*s/.test(f));
      const hardLink = (has("ln") && !symbolic) || (has("cp") && operands.flags.some((f) => f === "--link" || /^-[a-zA-Z]*l/.test(f)));
      if (hardLink) for (const o of operands.list.filter((x) => t !== undefined || dest === undefined || x !== last)) this.write(o.word, cwd, "hard-links (so writes through the link change)", argGlob(o.index));
      return;
    }
    if (has("dd")) {
      for (const a of args) if (a.startsWith("of=")) this.write(a.slice(3), cwd, "writes");
      return;
    }
    if (has("sed", "perl") && args.some((a) => /^-[a-zA-Z]*i/.test(a) || a.startsWith("--in-place"))) {
      const files = operands.list.slice(args.some((a) => a === "-e" || a.startsWith("--expression")) ? 0 : 1);
      for (const { word, index } of files) this.write(word, cwd, "edits in place", argGlob(index));
      return;
    }
    if (has("curl", "wget", "tar", "bsdtar", "unzip", "git", "patch")) this.fetchWrites(names, args, cwd);
  }

  fetchWrites(names: Set<string>, args: string[], cwd: string | null): void {
    const opts = (valueLetters: string, a: string[]) => shortAndLongOptions(a, valueLetters);
    if (names.has("curl")) {
      let remoteName = false;
      let outputDir: string | undefined;
      for (const o of opts("AbcCdDeEFHKmoPQrTtuUwxXyYz", args)) {
        if (["o", "--output", "D", "--dump-header", "c", "--cookie-jar", "--trace", "--trace-ascii", "--stderr", "--etag-save", "--libcurl", "--hsts", "--alt-svc"].includes(o.name)) {
          if (o.value !== undefined && o.value !== "-") this.write(o.value, cwd, "downloads to");
        } else if (o.name === "--output-dir" && o.value !== undefined) outputDir = o.value;
        else if (o.name === "O" || o.name === "--remote-name" || o.name === "--remote-name-all") remoteName = true;
      }
      if (remoteName || outputDir !== undefined) this.write(outputDir ?? ".", cwd, "downloads into");
      return;
    }
    if (names.has("wget")) {
      let named = false;
      for (const o of opts("OoaPeiBtTwQUlARDIXY", args)) {
        if (["O", "--output-document", "o", "--output-file", "a", "--append-output", "P", "--directory-prefix"].includes(o.name)) {
          if (o.name === "O" || o.name === "--output-document" || o.name === "P" || o.name === "--directory-prefix") named = true;
          if (o.value !== undefined && o.value !== "-") this.write(o.value, cwd, "downloads to");
        }
      }
      if (!named) this.write(".", cwd, "downloads into");
      return;
    }
    if (names.has("tar") || names.has("bsdtar")) {
      // old style `tar xzf a.tar -C dir`: the first word is a cluster of letters without a dash
      const first = args[0];
      const oldStyle = first !== undefined && /^[A-Za-z]+$/.test(first);
      const a = oldStyle ? oldStyleTar(first, args.slice(1), "fCTXbgHIKLNVF") : args;
      const o = opts("fCTXbgHIKLNVF", a);
      const modes = new Set(o.map((x) => x.name));
      const extract = modes.has("x") || modes.has("--extract") || modes.has("--get");
      const create = ["c", "r", "u", "A", "--create", "--append", "--update", "--concatenate", "--catenate", "--delete"].some((m) => modes.has(m));
      if (extract) {
        const dirs = o.filter((x) => x.name === "C" || x.name === "--directory").map((x) => x.value);
        for (const d of dirs.length ? dirs : ["."]) this.write(d ?? ".", cwd, "extracts into");
        for (const x of o) if (x.name === "--one-top-level" && x.value !== undefined) this.write(x.value, dirs.length ? this.resolve(dirs[dirs.length - 1] ?? ".", cwd) : cwd, "extracts into");
        if (modes.has("P") || modes.has("--absolute-names")) this.findings.push("extracts an archive with absolute member names (tar -P), which may write anywhere");
      }
      if (create) for (const f of o.filter((x) => x.name === "f" || x.name === "--file")) if (f.value !== undefined && f.value !== "-") this.write(f.value, cwd, "writes the archive");
      return;
    }
    if (names.has("unzip")) {
      const o = opts("dx", args);
      if (o.some((x) => ["l", "t", "v", "p", "Z", "z"].includes(x.name))) return; // list, test, pipe: no files written
      const d = o.find((x) => x.name === "d");
      this.write(d?.value ?? ".", cwd, "extracts into");
      if (o.some((x) => x.name === ":")) this.findings.push("extracts an archive keeping ../ in member names (unzip -:), which may write anywhere");
      return;
    }
    if (names.has("patch")) {
      // patch writes the file it is given, -o OUT, or the files its input names under -d DIR (or the cwd)
      const o = opts("bBdDFgiopVYzr", args);
      const dir = o.find((x) => x.name === "d" || x.name === "--directory")?.value;
      for (const x of o) if ((x.name === "o" || x.name === "--output" || x.name === "r" || x.name === "--reject-file") && x.value !== undefined && x.value !== "-") this.write(x.value, cwd, "patches");
      const file = o.find((x) => x.name === "")?.value;
      if (file !== undefined) this.write(file, cwd, "patches");
      this.write(dir ?? ".", cwd, "patches files under");
      return;
    }
    if (names.has("git")) {
      let j = 0;
      let gcwd = cwd;
      while (j < args.length && args[j]!.startsWith("-")) {
        const f = args[j++]!;
        if (f === "-C") gcwd = gcwd === null ? null : this.resolve(args[j++] ?? "", gcwd);
        else if (["-c", "--git-dir", "--work-tree", "--namespace", "--config-env"].includes(f)) j++;
      }
      if (args[j] !== "clone") return;
      const rest = args.slice(j + 1);
      const o = opts("obucj", rest);
      for (const x of o) if (x.name === "--separate-git-dir" && x.value !== undefined) this.write(x.value, gcwd, "clones into");
      const positional = o.filter((x) => x.name === "").map((x) => x.value!);
      const src = positional[0];
      const dest = positional[1] ?? (src === undefined ? undefined : humanishName(src));
      if (dest !== undefined) this.write(dest, gcwd, "clones into");
    }
  }

  /** Records `ln -s TARGET [LINK]` so later words of this command resolve through the new link. */
  noteLink(list: string[], cwd: string | null): void {
    const target = list[0]!;
    let link = this.resolve(list.length >= 2 ? list[list.length - 1]! : path.basename(target), cwd);
    if (link === null) return;
    if (list.length >= 2 && isDir(link)) link = path.join(link, path.basename(target));
    const real = this.resolve(target, path.dirname(link));
    if (real === null) return;
    if (this.links.length >= MAX_LINKS) {
      // every later path is resolved through every link recorded: unbounded, that is quadratic
      if (!this.tooManyLinks) this.findings.push(`the command creates more than ${MAX_LINKS} symlinks, too many for the floor to follow`);
      this.tooManyLinks = true;
      return;
    }
    this.links.push([link, real]);
  }

  /** The names a command word goes by: its spelling's basename and the basename of the executable it resolves to. */
  names(word: string): Set<string> {
    const out = new Set([path.basename(word)]);
    let real = this.executables.get(word);
    if (real === undefined) {
      if (!this.listing && this.executables.size >= LISTED_AFTER) this.listing = new PathListing();
      this.executables.set(word, (real = resolveExecutable(word, this.env.PATH ?? process.env.PATH, this.listing)));
    }
    if (real) out.add(path.basename(real));
    return out;
  }
}

/**
 * Why a file-tool call is refused outright (no card): its real path lies in airlock's data dir
 * (`env.dataDir`), or null. Shell commands are not judged here: confined ones cannot see the data
 * dir, and a token read under `danger-full-access` asks through {@link credentialKind}.
 */
export function dataDirRefusal(call: FloorCall, env: FloorEnv): string | null {
  if ((call.kind !== "read" && call.kind !== "write") || !env.dataDir) return null;
  const ws = safeReal("/", env.workspace, env.paths) ?? path.resolve(env.workspace);
  const dataDir = safeReal("/", env.dataDir, env.paths) ?? path.resolve(env.dataDir);
  const real = safeReal(ws, call.path, env.paths);
  const spelled = path.resolve(ws, call.path);
  if ((real !== null && insideDataDir(real, dataDir, ws)) || insideDataDir(spelled, dataDir, ws)) {
    return `${call.path} is in airlock's data dir (${dataDir}: its tokens and every session's messages); file tools never read, list or write it`;
  }
  return null;
}

