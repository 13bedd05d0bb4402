/**
 * @module gate/inspectors/security-floor
 * The security floor (`sensitive_ops`): judges a call's concrete arguments at call time — so a path
 * a script composed at run time is seen — and asks, with user proof, in every mode: recursive deletes
 * of broad targets, writes outside the workspace or to protected paths, reads of credential files.
 * Shell commands are split with `shell-quote` (./shell-words.ts); each simple command is judged.
 * Interpreter code cannot be parsed: no floor rule; the launcher's sandbox policy confines it.
 */
import os from "node:os";
import path from "node:path";
import type { SandboxPolicyName } from "../../config/schema.ts";
import { isInside, resolveExecutable, resolveRealPath } from "../../launcher/resolve.ts";
import type { Verdict } from "../verdict.ts";
import { splitCommands, MAX_SHELL_DEPTH, type SimpleCommand } from "./shell-words.ts";

/** Where the floor judges: the session's workspace (absolute), the policy the call runs under, HOME and PATH. */
export interface FloorEnv {
  workspace: string;
  policy: SandboxPolicyName;
  home?: string;
  PATH?: string;
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
  if (alias === "Read" || tool.name === "developer__read_file") {
    const p = str("path") ?? str("file_path");
    return p === undefined ? { kind: "none" } : { kind: "read", path: p };
  }
  if (alias === "Write" || alias === "Edit" || tool.name === "developer__write_file" || tool.name === "developer__edit_file") {
    const p = str("path") ?? str("file_path");
    return p === undefined ? { kind: "none" } : { kind: "write", path: p };
  }
  return { kind: "none" };
}

/** Judges one call. Returns allow, or an ask (user proof) whose reason lists what was found. */
export function securityFloor(tool: { name: string; claude?: { name: string } }, args: unknown, env: FloorEnv): Verdict {
  const call = floorCall(tool, args);
  const findings = judgeCall(call, env);
  if (findings.length === 0) return { kind: "allow", inspector: "sensitive_ops" };
  const uniq = [...new Set(findings)];
  return { kind: "ask", inspector: "sensitive_ops", userProof: true, reason: uniq.slice(0, 5).join("; ") + (uniq.length > 5 ? `; and ${uniq.length - 5} more` : "") };
}

/** The floor's findings for one call (empty when nothing is sensitive). */
export function judgeCall(call: FloorCall, env: FloorEnv): string[] {
  const ctx = new Judge(env);
  switch (call.kind) {
    case "shell":
      ctx.shell(call.command, 0);
      break;
    case "read":
      ctx.read(call.path, ctx.ws);
      break;
    case "write":
      ctx.write(call.path, ctx.ws, "writes");
      break;
    case "none":
      break;
  }
  return ctx.findings;
}

const SHELLS = new Set(["bash", "sh", "zsh", "dash", "ksh", "ash", "busybox"]);
const WRAPPERS = new Set(["sudo", "doas", "command", "builtin", "exec", "nice", "nohup", "time", "stdbuf", "xargs", "env", "timeout", "ionice", "chroot"]);
const WRITE_ALL = new Set(["tee", "touch", "mkdir", "truncate", "shred", "unlink", "rmdir"]);
const WRITE_AFTER_FIRST = new Set(["chmod", "chown", "chgrp"]);
const COPY = new Set(["cp", "mv", "install", "ln", "rsync"]);
const RC_FILES = new Set([".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zprofile", ".zshenv", ".zlogin", ".kshrc", ".cshrc", ".tcshrc", ".inputrc"]);
const HARMLESS_SINKS = new Set(["/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero"]);

class Judge {
  readonly findings: string[] = [];
  readonly ws: string;
  readonly home: string;
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
    return safeReal(cwd ?? "/", w);
  }

  read(word: string, cwd: string | null): void {
    const p = this.resolve(word, cwd);
    const hit = credentialKind(word, this.home) ?? (p ? credentialKind(p, this.home) : null);
    if (hit) this.findings.push(`reads credential file ${word} (${hit})`);
  }

  write(word: string, cwd: string | null, verb: string): void {
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
  simple(c: SimpleCommand, cwd: string | null, depth: number): string | null {
    for (const r of c.redirects) {
      if ([">", ">>", ">|", "&>", "&>>", "<>"].includes(r.op)) this.write(r.target, cwd, "redirects output to");
      else if (r.op === ">&" && !/^(\d+|-)$/.test(r.target)) this.write(r.target, cwd, "redirects output to");
      else if (r.op === "<" || r.op === "<&") {
        if (!/^(\d+|-)$/.test(r.target)) this.read(r.target, cwd);
      }
    }
    // every word may name a credential file (`cat`, `cp`, `curl -d @file`, `--file=…`)
    for (const w of c.words) {
      for (const cand of credentialCandidates(w)) this.read(cand, cwd);
    }
    let i = 0;
    const w = c.words;
    // leading assignments and wrappers (`FOO=1 sudo -E env X=1 nice -n 5 rm …`)
    for (;;) {
      while (i < w.length && /^[A-Za-z_][A-Za-z0-9_]*=/.test(w[i]!)) i++;
      if (i >= w.length) return cwd;
      const name = this.names(w[i]!);
      if (![...name].some((n) => WRAPPERS.has(n))) break;
      const wrapper = [...name].find((n) => WRAPPERS.has(n))!;
      i++;
      while (i < w.length && w[i]!.startsWith("-")) {
        const flag = w[i]!;
        i++;
        if (["-n", "-u", "-g", "-C", "-i", "-o", "-e", "-I", "-s", "-k", "-d", "-P"].includes(flag) && wrapper !== "env") i++; // flag takes a value
      }
      if (wrapper === "timeout" && i < w.length) i++; // the duration
    }
    const names = this.names(w[i]!);
    const args = w.slice(i + 1);
    const argGlob = (k: number) => c.globs.has(i + 1 + k);
    const has = (...ns: string[]) => ns.some((n) => names.has(n));

    if (has(...SHELLS)) {
      const ci = args.findIndex((a) => /^-[a-zA-Z]*c[a-zA-Z]*$/.test(a));
      if (ci >= 0 && args[ci + 1] !== undefined) {
        if (depth + 1 > MAX_SHELL_DEPTH) this.findings.push("the command nests shells too deeply to judge");
        else this.shell(args[ci + 1]!, depth + 1);
      }
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
      const t = operands.flags.find((f) => f.startsWith("--target-directory="))?.split("=")[1] ?? flagValue(args, "-t");
      const list = operands.list.map((o) => o.word);
      const dest = t ?? (list.length >= 2 ? list[list.length - 1] : undefined);
      if (dest !== undefined) this.write(dest, cwd, "writes");
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

/** A word and the paths it may carry: itself, after `=` (`--file=x`, `if=x`), after a leading `@` (curl). */
function credentialCandidates(w: string): string[] {
  const out = [w];
  const eq = w.indexOf("=");
  if (eq >= 0) out.push(w.slice(eq + 1));
  if (w.startsWith("@")) out.push(w.slice(1));
  return out;
}

/** Why `p` (spelled or real) is a credential file, or null. Rules: `~/.ssh/id_*` (not `.pub`), `~/.aws/credentials`, `.netrc`, `.env`/`.env.*`. */
export function credentialKind(p: string, home: string): string | null {
  const norm = p.replace(/^~(?=\/)/, home);
  const base = path.basename(norm);
  if (/(^|\/)\.ssh\/id_[^/]*$/.test(norm) && !base.endsWith(".pub")) return "SSH private key";
  if (/(^|\/)\.aws\/credentials$/.test(norm)) return "AWS credentials";
  if (base === ".netrc" || base === "_netrc") return "netrc credentials";
  if (base === ".env" || (/^\.env\.[^/]+$/.test(base) && !/\.(example|sample|template|dist)$/.test(base))) return "environment secrets file";
  return null;
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
