/**
 * @module gate/inspectors/security-floor
 * The security floor (`sensitive_ops`): judges a call's concrete arguments at call time — so a path
 * a script composed at run time is seen — and asks, with user proof, in every mode: recursive deletes
 * of broad targets, writes outside the workspace or to protected paths, reads of credential files.
 * Shell commands are split with `shell-quote` (./shell-words.ts); each simple command is judged.
 * Interpreter code cannot be parsed: no floor rule; the launcher's sandbox policy confines it.
 */
import { readdirSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { SandboxPolicyName } from "../../config/schema.ts";
import { credentialStoreKind, insideDataDir, procSecretKind } from "../../launcher/credentials.ts";
import { isInside, resolveExecutable, resolveRealPath } from "../../launcher/resolve.ts";
import type { Verdict } from "../verdict.ts";
import { splitCommands, MAX_SHELL_DEPTH, type SimpleCommand } from "./shell-words.ts";

/** Where the floor judges: the session's workspace (absolute), the policy the call runs under, HOME and PATH. */
export interface FloorEnv {
  workspace: string;
  policy: SandboxPolicyName;
  home?: string;
  PATH?: string;
  /** airlock's data dir (tokens, database): file tools touching it are denied (`data_dir_refused`), no card. */
  dataDir?: string;
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
  }
  return ctx.findings;
}

const SHELLS = new Set(["bash", "sh", "zsh", "dash", "ksh", "ash"]);
/** Commands that run a command string given with `-c` (like a shell, but never read commands from stdin). */
const C_STRING = new Set(["su", "runuser", "script"]);
const WRAPPERS = new Set(["sudo", "doas", "command", "builtin", "exec", "nice", "nohup", "time", "stdbuf", "xargs", "env", "timeout", "ionice", "chroot", "busybox"]);
/** Shell reserved words that may precede a command (`{ rm …; }`, `then rm …`, `! rm …`). */
const RESERVED = new Set(["{", "}", "!", "if", "then", "else", "elif", "fi", "do", "done", "while", "until"]);
const WRITE_ALL = new Set(["tee", "touch", "mkdir", "truncate", "shred", "unlink", "rmdir"]);
const WRITE_AFTER_FIRST = new Set(["chmod", "chown", "chgrp"]);
const COPY = new Set(["cp", "mv", "install", "ln", "rsync"]);
const RC_FILES = new Set([".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zprofile", ".zshenv", ".zlogin", ".kshrc", ".cshrc", ".tcshrc", ".inputrc"]);
const HARMLESS_SINKS = new Set(["/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero"]);
/**
 * Command names the floor looks for at every word of a simple command, not only at its head, so an
 * unlisted wrapper (`setsid rm -rf /`, `flock f rm …`, `find … -exec sh -c '…'`) hides nothing.
 */
const SCANNED = new Set(["rm", "find", ...SHELLS, ...C_STRING, ...WRITE_ALL, ...WRITE_AFTER_FIRST, ...COPY, "dd", "sed", "perl"]);
/** Most matches of one glob word checked for credential files. */
const MAX_GLOB_MATCHES = 256;

class Judge {
  readonly findings: string[] = [];
  readonly ws: string;
  readonly home: string;
  /** Symlinks this command creates (`ln -s`) before later words use them: [link path, real target]. */
  readonly links: [string, string][] = [];
  constructor(readonly env: FloorEnv) {
    this.ws = safeReal("/", env.workspace) ?? path.resolve(env.workspace);
    const h = env.home ?? os.homedir();
    this.home = safeReal("/", h) ?? h;
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
    const real = safeReal(cwd ?? "/", w);
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
        if (++n >= MAX_GLOB_MATCHES) return;
      }
    } catch {
      // unreadable directory: nothing to match
    }
  }

  write(word: string, cwd: string | null, verb: string): void {
    const alts = braceAlternatives(word);
    if (alts) return alts.forEach((a) => this.write(a, cwd, verb));
    if (HARMLESS_SINKS.has(word) || /^\/dev\/fd\/\d+$/.test(word)) return;
    const p = this.resolve(word, cwd);
    if (p === null) {
      this.findings.push(`${verb} ${word}, a path that depends on a variable the floor cannot see`);
      return;
    }
    if (HARMLESS_SINKS.has(p) || /^\/(dev|proc\/self)\/fd\/\d+$/.test(p)) return;
    const prot = protectedKind(p, this.home);
    if (prot) {
      this.findings.push(`${verb} protected path ${word} (${prot})`);
      return;
    }
    if (isInside(p, this.ws)) return;
    if (this.env.policy !== "danger-full-access" && isInside(p, "/tmp")) return; // private /tmp under bwrap (SPEC §9)
    this.findings.push(`${verb} ${word} outside the workspace (${p})`);
  }

  recursiveDelete(word: string, isGlob: boolean, cwd: string | null): void {
    const alts = braceAlternatives(word);
    if (alts) return alts.forEach((a) => this.recursiveDelete(a, isGlob, cwd));
    const broad = this.broad(word, isGlob, cwd);
    if (broad) this.findings.push(`recursive delete of broad target ${word} (${broad})`);
    else if (!isGlob) this.write(word, cwd, "deletes");
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
  simple(c: SimpleCommand, cwd: string | null, depth: number, scan = true): string | null {
    for (const r of c.redirects) {
      if ([">", ">>", ">|", "&>", "&>>", "<>"].includes(r.op)) this.write(r.target, cwd, "redirects output to");
      else if (r.op === ">&" && !/^(\d+|-)$/.test(r.target)) this.write(r.target, cwd, "redirects output to");
      else if (r.op === "<" || r.op === "<&") {
        if (!/^(\d+|-)$/.test(r.target)) this.read(r.target, cwd);
      }
    }
    // every word may name a credential file (`cat`, `cp`, `curl -d @file`, `--file=…`)
    c.words.forEach((w, j) => {
      if (c.globs.has(j)) this.readGlob(w, cwd);
      else for (const cand of credentialCandidates(w)) this.read(cand, cwd);
    });
    let i = 0;
    const w = c.words;
    let viaXargs = false;
    // leading assignments, reserved words and wrappers (`FOO=1 sudo -E env X=1 nice -n 5 rm …`, `then rm …`)
    for (;;) {
      while (i < w.length && (/^[A-Za-z_][A-Za-z0-9_]*=/.test(w[i]!) || RESERVED.has(w[i]!))) i++;
      if (i >= w.length) return cwd;
      const name = this.names(w[i]!);
      if (![...name].some((n) => WRAPPERS.has(n))) break;
      const wrapper = [...name].find((n) => WRAPPERS.has(n))!;
      if (wrapper === "xargs") viaXargs = true;
      i++;
      while (i < w.length && w[i]!.startsWith("-")) {
        const flag = w[i]!;
        i++;
        // `env -S 'cmd args'` / `--split-string=…` runs a command line the floor must read too
        if (wrapper === "env" && (flag === "-S" || flag.startsWith("--split-string") || /^-S./.test(flag))) {
          const line = flag === "-S" || flag === "--split-string" ? w[i] : flag.startsWith("-S") ? flag.slice(2) : flag.slice(flag.indexOf("=") + 1);
          if (line !== undefined) this.shell(line, depth + 1);
          return cwd;
        }
        if (["-n", "-u", "-g", "-C", "-i", "-o", "-e", "-I", "-s", "-k", "-d", "-P"].includes(flag) && wrapper !== "env") i++; // flag takes a value
      }
      if (wrapper === "timeout" && i < w.length) i++; // the duration
    }
    const names = this.names(w[i]!);
    const args = w.slice(i + 1);
    const argGlob = (k: number) => c.globs.has(i + 1 + k);
    const has = (...ns: string[]) => ns.some((n) => names.has(n));

    if (scan) {
      // the same command names later in the words: an unlisted wrapper in front hides nothing
      for (let k = 1; k < w.length; k++) {
        if (k === i || ![...this.names(w[k]!)].some((n) => SCANNED.has(n))) continue;
        const globs = new Set([...c.globs].filter((g) => g >= k).map((g) => g - k));
        this.simple({ words: w.slice(k), globs, redirects: [] }, cwd, depth, false);
      }
    }

    if (has(...SHELLS, ...C_STRING)) {
      const ci = args.findIndex((a) => /^-[a-zA-Z]*c[a-zA-Z]*$/.test(a));
      if (ci >= 0) {
        const script = args[ci + 1] === "--" ? args[ci + 2] : args[ci + 1];
        if (script === undefined) return cwd;
        if (depth + 1 > MAX_SHELL_DEPTH) this.findings.push("the command nests shells too deeply to judge");
        else this.shell(script, depth + 1);
        return cwd;
      }
      if (!scan || !has(...SHELLS) || args.some((a) => a === "--version" || a === "--help")) return cwd;
      // no -c: the shell runs a script file, or reads its commands from stdin, which the floor cannot see
      const script = args.find((a, k) => !a.startsWith("-") && !a.startsWith("+") && !/^[-+]o$/.test(args[k - 1] ?? ""));
      const hereString = c.redirects.find((r) => r.op === "<<<");
      if (script !== undefined && !args.includes("-s")) {
        if (script.startsWith("<(")) this.findings.push(`${w[i]} runs commands from a process substitution the floor cannot read`);
        return cwd;
      }
      if (hereString) this.shell(hereString.target, depth + 1);
      else if (!c.redirects.some((r) => r.op === "<")) this.findings.push(`${w[i]} reads the commands it runs from standard input, which the floor cannot read; use ${w[i]} -c '…'`);
      return cwd;
    }
    if (has("source", ".") && args[0]?.startsWith("<(")) {
      this.findings.push(`${w[i]} runs commands from a process substitution the floor cannot read`);
      return cwd;
    }
    if (has("eval")) {
      if (depth + 1 > MAX_SHELL_DEPTH) this.findings.push("the command nests eval too deeply to judge");
      else this.shell(args.join(" "), depth + 1);
      return cwd;
    }
    if (has("cd", "pushd")) {
      const t = args.find((a) => !a.startsWith("-"));
      if (t === undefined) return this.home;
      return this.resolve(t, cwd);
    }
    const operands = splitOperands(args);
    if (has("rm")) {
      const recursive = operands.flags.some((f) => f === "--recursive" || (/^-[a-zA-Z]+$/.test(f) && /[rR]/.test(f)));
      operands.list.forEach(({ word, index }) => {
        if (recursive) this.recursiveDelete(word, argGlob(index), cwd);
        else if (!argGlob(index)) this.write(word, cwd, "deletes");
      });
      if (recursive && viaXargs) this.findings.push("recursive delete of targets read from standard input (xargs rm -r), which the floor cannot see");
      return cwd;
    }
    if (has("find")) {
      const del = args.includes("-delete") || args.some((a, k) => (a === "-exec" || a === "-execdir") && /(^|\/)rm$/.test(args[k + 1] ?? ""));
      if (del) {
        const starts = args.slice(0, Math.max(0, args.findIndex((a) => /^[-(!]/.test(a)))).filter(Boolean);
        for (const s of starts.length ? starts : ["."]) this.recursiveDelete(s, false, cwd);
      }
      return cwd;
    }
    if (has(...WRITE_ALL)) {
      for (const { word, index } of operands.list) if (!argGlob(index)) this.write(word, cwd, "writes");
      return cwd;
    }
    if (has(...WRITE_AFTER_FIRST)) {
      for (const { word, index } of operands.list.slice(1)) if (!argGlob(index)) this.write(word, cwd, "changes");
      return cwd;
    }
    if (has(...COPY)) {
      const t =
        operands.flags.find((f) => f.startsWith("--target-directory="))?.split("=")[1] ??
        flagValue(args, "--target-directory") ??
        flagValue(args, "-t") ??
        operands.flags.find((f) => /^-t./.test(f))?.slice(2);
      const list = operands.list.map((o) => o.word);
      const dest = t ?? (list.length >= 2 ? list[list.length - 1] : undefined);
      if (dest !== undefined) this.write(dest, cwd, "writes");
      if (has("ln") && t === undefined && list.length >= 1 && operands.flags.some((f) => f === "--symbolic" || /^-[a-zA-Z]*s/.test(f))) this.noteLink(list, cwd);
      if (has("mv")) for (const s of list.filter((x) => x !== dest)) this.write(s, cwd, "moves");
      return cwd;
    }
    if (has("dd")) {
      for (const a of args) if (a.startsWith("of=")) this.write(a.slice(3), cwd, "writes");
      return cwd;
    }
    if (has("sed", "perl") && args.some((a) => /^-[a-zA-Z]*i/.test(a) || a.startsWith("--in-place"))) {
      const files = operands.list.slice(args.some((a) => a === "-e" || a.startsWith("--expression")) ? 0 : 1);
      for (const { word, index } of files) if (!argGlob(index)) this.write(word, cwd, "edits in place");
      return cwd;
    }
    return cwd;
  }

  /** Records `ln -s TARGET [LINK]` so later words of this command resolve through the new link. */
  noteLink(list: string[], cwd: string | null): void {
    const target = list[0]!;
    let link = this.resolve(list.length >= 2 ? list[list.length - 1]! : path.basename(target), cwd);
    if (link === null) return;
    if (list.length >= 2 && isDir(link)) link = path.join(link, path.basename(target));
    const real = this.resolve(target, path.dirname(link));
    if (real !== null) this.links.push([link, real]);
  }

  /** The names a command word goes by: its spelling's basename and the basename of the executable it resolves to. */
  names(word: string): Set<string> {
    const out = new Set([path.basename(word)]);
    const real = resolveExecutable(word, this.env.PATH ?? process.env.PATH);
    if (real) out.add(path.basename(real));
    return out;
  }
}

/** Splits arguments into flags and operands (everything after `--` is an operand); operands keep their index. */
function splitOperands(args: string[]): { flags: string[]; list: { word: string; index: number }[] } {
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

function flagValue(args: string[], flag: string): string | undefined {
  const i = args.indexOf(flag);
  return i >= 0 ? args[i + 1] : undefined;
}

/**
 * The words a brace expansion makes (`{/,x}` → `/`, `x`; `a{b,c}d` → `abd`, `acd`), or null when
 * `word` has none. Only comma lists are expanded (at most 64 words); `{a..z}` sequences are left as is.
 */
export function braceAlternatives(word: string, budget = 64): string[] | null {
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
    if (commas.length === 0) continue;
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

/** A word and the paths it may carry: itself, after `=` (`--file=x`, `if=x`), after a leading `@` (curl). */
function credentialCandidates(w: string): string[] {
  const out = [w];
  const eq = w.indexOf("=");
  if (eq >= 0) out.push(w.slice(eq + 1));
  if (w.startsWith("@")) out.push(w.slice(1));
  return out;
}

/** Why `p` (spelled or real) is a credential file, or null. Rules: `~/.ssh/id_*` (not `.pub`), `~/.aws/credentials`, `.netrc`, `.env`/`.env.*`, airlock's tokens, and every store on the one credential list (src/launcher/credentials.ts). */
export function credentialKind(p: string, home: string): string | null {
  const norm = p.replace(/^~(?=\/)/, home);
  const base = path.basename(norm);
  if (/(^|\/)\.ssh\/id_[^/]*$/.test(norm) && !base.endsWith(".pub")) return "SSH private key";
  if (/(^|\/)\.aws\/credentials$/.test(norm)) return "AWS credentials";
  if (base === ".netrc" || base === "_netrc") return "netrc credentials";
  if (base === ".env" || (/^\.env\.[^/]+$/.test(base) && !/\.(example|sample|template|dist)$/.test(base))) return "environment secrets file";
  if (base === "approver-token" || base === "api-token") return "airlock API or approver token";
  return credentialStoreKind(norm, home);
}

/**
 * Why reading `word` (in `cwd`; `real` its resolved path) reads another process's `/proc/<pid>/environ`
 * or `mem`, or null. The spelling is judged lexically (`$PPID`, globs, `self/../N`); the real path too
 * (a link to it), except where the spelling names the reading process itself (`/proc/self/…` of a
 * shell) — unless `byAirlock` (a file tool: the reader is airlock).
 */
function procReadKind(word: string, cwd: string | null, real: string | null, byAirlock: boolean): string | null {
  const spelled = word.startsWith("/") ? word : cwd ? path.posix.join(cwd, word) : null;
  const hit = spelled ? procSecretKind(spelled) : null;
  if (hit || real === null) return hit;
  if (!byAirlock && spelled && /^\/proc\/(self|thread-self)(\/|$)/.test(path.posix.normalize(spelled))) return null;
  return procSecretKind(real);
}

/**
 * Why a file-tool call is refused outright (no card): its real path lies in airlock's data dir
 * (`env.dataDir`), or null. Shell commands are not judged here: confined ones cannot see the data
 * dir, and a token read under `danger-full-access` asks through {@link credentialKind}.
 */
export function dataDirRefusal(call: FloorCall, env: FloorEnv): string | null {
  if ((call.kind !== "read" && call.kind !== "write") || !env.dataDir) return null;
  const ws = safeReal("/", env.workspace) ?? path.resolve(env.workspace);
  const dataDir = safeReal("/", env.dataDir) ?? path.resolve(env.dataDir);
  const real = safeReal(ws, call.path);
  const spelled = path.resolve(ws, call.path);
  if ((real !== null && insideDataDir(real, dataDir, ws)) || insideDataDir(spelled, dataDir, ws)) {
    return `${call.path} is in airlock's data dir (${dataDir}: its tokens and every session's messages); file tools never read, list or write it`;
  }
  return null;
}

/** Why the existing directory `p` holds credentials, or null: `.ssh`, `.aws`, airlock's data dir (its tokens). */
export function credentialDirKind(p: string): string | null {
  if (!isDir(p)) return null;
  const base = path.basename(p);
  if (base === ".ssh") return "directory of SSH private keys";
  if (base === ".aws") return "directory of AWS credentials";
  try {
    if (readdirSync(p).some((n) => n === "approver-token" || n === "api-token")) return "airlock data dir with its API and approver tokens";
  } catch {
    // unreadable: nothing to say
  }
  return null;
}

function isDir(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/** Why writing `p` (a real path) is protected, or null: `.git/hooks`, `.git/config`, shell rc files, `~/.ssh`, `/etc`. */
export function protectedKind(p: string, home: string): string | null {
  if (/(^|\/)\.git\/hooks(\/|$)/.test(p)) return "git hooks run code on the next git command";
  if (/(^|\/)\.git\/config$/.test(p)) return "git config can run commands";
  if (RC_FILES.has(path.basename(p)) || /\/\.config\/fish\/config\.fish$/.test(p)) return "shell startup file";
  if (isInside(p, path.join(home, ".ssh")) || /(^|\/)\.ssh(\/|$)/.test(p)) return "SSH configuration and keys";
  if (isInside(p, "/etc")) return "system configuration";
  return null;
}

function safeReal(base: string, p: string): string | null {
  try {
    return resolveRealPath(base, p);
  } catch {
    return null;
  }
}
