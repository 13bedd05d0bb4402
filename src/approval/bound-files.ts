/**
 * @module approval/bound-files
 * Binds an approval to what runs (issue 12 item 10): the workspace files a call names — the script
 * operand of a shell or interpreter command, a `source`d file, a `./x` command, the target of a
 * write/edit — and their content hashes (sha256). A card shows them; just before the allowed call
 * runs, the gate hashes them again and a change refuses the call as `approval_stale`.
 */
import { createHash } from "node:crypto";
import { constants as FS, type Stats } from "node:fs";
import { lstat, open, readlink } from "node:fs/promises";
import path from "node:path";
import { FileBinding } from "../bus/events.ts";
import { isInside, resolveRealPath } from "../launcher/resolve.ts";
import { floorCall } from "../gate/inspectors/security-floor.ts";
import { splitCommands, MAX_SHELL_DEPTH, type SimpleCommand } from "../gate/inspectors/shell-words.ts";

/** Largest file hashed, bytes (256 MiB). A bigger named file cannot be bound: the call is refused. */
export const BIND_MAX_BYTES = 256 * 1024 * 1024;
/** Bytes read per chunk while hashing (1 MiB); each chunk is an async read, so the event loop never blocks on a big file. */
export const BIND_CHUNK_BYTES = 1024 * 1024;
/** Most files bound per call (the first ones named). */
export const BIND_MAX_FILES = 16;

/** One named file as it was when hashed: its schema is with the card's, in bus/events.ts. */
export { FileBinding };

/** A file a call names: `rel` (workspace-relative, shown on the card) and `abs` (absolute, lexical: symlinks not followed). */
export interface NamedFile {
  rel: string;
  abs: string;
}

const SHELLS = new Set(["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish"]);
/** Interpreters that run a script file given as their first operand. */
const INTERPRETER = /^(python[0-9.]*|pypy[0-9.]*|node|nodejs|bun|deno|perl|ruby|php|lua[0-9.]*|Rscript|tclsh|osascript)$/;
/** Flags meaning "the program is inline or a module" for each interpreter family, so there is no script operand. */
function inlineFlags(name: string): Set<string> {
  if (/^(python|pypy)/.test(name)) return new Set(["-c", "-m"]);
  if (["node", "nodejs", "bun", "deno"].includes(name)) return new Set(["-e", "-p", "--eval", "--print"]);
  if (name === "perl") return new Set(["-e", "-E"]);
  if (name === "php") return new Set(["-r"]);
  return new Set(["-e"]);
}
/** Interpreter flags that take a value as the next word. */
const VALUE_FLAGS = new Set(["-W", "-X", "-o", "+o", "-O", "-r", "--require", "--import", "--loader", "-I", "--config", "--conditions", "--rcfile", "--init-file"]);
const WRAPPERS = new Set(["sudo", "doas", "command", "builtin", "exec", "nice", "nohup", "time", "stdbuf", "env", "timeout", "ionice", "setsid", "unbuffer"]);
const WRAPPER_VALUE_FLAGS = new Set(["-n", "-u", "-g", "-C", "-i", "-o", "-e", "-s", "-k", "-c", "-p"]);
const RESERVED = new Set(["{", "}", "!", "if", "then", "else", "elif", "fi", "do", "done", "while", "until"]);

/** True when a word's value is not known statically (variables, substitutions, `~`): such a word names nothing here. */
function dynamic(word: string): boolean {
  return /[$`]/.test(word) || word.startsWith("~") || word.includes("…");
}

/**
 * The workspace files a call names, in the order named, without duplicates, at most {@link BIND_MAX_FILES} + 1
 * (one more than can be bound: the gate refuses such a call, `payload_too_large`, rather than bind part of it).
 * Shell commands (`developer__shell`/`Bash`) are split with the floor's parser (shell-words.ts): a shell or
 * interpreter's script operand (`sh x.sh`, `python3 -u x.py`, `bun run x.ts`, `bash < x.sh`, also inside
 * `bash -c '…'`), `source x` / `. x`, and a command spelled with a slash (`./x.sh`). A write/edit names its target.
 * Words with variables, substitutions or globs name nothing (the floor judges those); paths outside the
 * workspace are left out. Pure: no filesystem access.
 * @param workspace the session's workspace, absolute.
 */
export function namedFiles(tool: { name: string; claude?: { name: string } }, args: unknown, workspace: string): NamedFile[] {
  const call = floorCall(tool, args);
  const words: { word: string; cwd: string }[] = [];
  switch (call.kind) {
    case "write":
      words.push({ word: call.path, cwd: workspace });
      break;
    case "shell":
      shellNames(call.command, workspace, 0, words);
      break;
    case "read":
    case "none":
      break;
  }
  const out: NamedFile[] = [];
  const seen = new Set<string>();
  for (const { word, cwd } of words) {
    if (dynamic(word)) continue;
    const abs = path.resolve(cwd, word);
    if (!isInside(abs, workspace) || abs === workspace || seen.has(abs)) continue;
    seen.add(abs);
    out.push({ rel: path.relative(workspace, abs), abs });
    if (out.length > BIND_MAX_FILES) break; // one more than can be bound: the gate refuses the call

  }
  return out;
}

function shellNames(command: string, workspace: string, depth: number, out: { word: string; cwd: string }[]): void {
  if (depth > MAX_SHELL_DEPTH) return;
  const parsed = splitCommands(command, depth);
  if (!parsed.ok) return; // the floor asks for a command it cannot parse
  // a command line that runs code also runs what it feeds in: `cat x | sh`, `bash -c "$(cat x)"`, `source <(cat x)`
  const feeds = parsed.commands.some(runsCode);
  let cwd: string | null = workspace;
  for (const c of parsed.commands) cwd = simpleNames(c, cwd, workspace, depth, out, feeds);
}

/** True when a simple command runs code from a file, a string or stdin: a shell, an interpreter, `eval`, `source`/`.` (any word: wrappers included). */
function runsCode(c: SimpleCommand): boolean {
  let i = 0;
  while (i < c.words.length && (/^[A-Za-z_][A-Za-z0-9_]*=/.test(c.words[i]!) || RESERVED.has(c.words[i]!))) i++;
  if (c.words[i] === ".") return true;
  return c.words.slice(i).some((w) => {
    const n = path.basename(w);
    return SHELLS.has(n) || INTERPRETER.test(n) || n === "eval" || n === "source";
  });
}

/** Collects the files one simple command runs; returns the working directory for the commands after it (null: unknown). */
function simpleNames(c: SimpleCommand, cwd: string | null, workspace: string, depth: number, out: { word: string; cwd: string }[], feeds = false): string | null {
  const w = c.words;
  if (feeds && cwd !== null) {
    // what this line feeds to the code it runs: `cat` operands and input redirections
    for (const r of c.redirects) if (r.op === "<") out.push({ word: r.target, cwd });
    if (path.basename(w[0] ?? "") === "cat") w.slice(1).forEach((a, k) => !a.startsWith("-") && !c.globs.has(k + 1) && out.push({ word: a, cwd }));
  }
  let i = 0;
  for (;;) {
    while (i < w.length && (/^[A-Za-z_][A-Za-z0-9_]*=/.test(w[i]!) || RESERVED.has(w[i]!))) i++;
    if (i >= w.length) return cwd;
    if (!WRAPPERS.has(path.basename(w[i]!))) break;
    const wrapper = path.basename(w[i]!);
    i++;
    while (i < w.length && (w[i]!.startsWith("-") || (wrapper === "env" && /^[A-Za-z_][A-Za-z0-9_]*=/.test(w[i]!)))) {
      // `nice -n 5`, `sudo -u x`, `timeout -s KILL`, `stdbuf -o L`: the flag's value is the next word
      if (wrapper !== "env" && WRAPPER_VALUE_FLAGS.has(w[i]!)) i++;
      i++;
    }
    if (wrapper === "timeout" && i < w.length) i++; // the duration
  }
  const cmd = w[i]!;
  const args = w.slice(i + 1);
  const add = (word: string | undefined, k?: number) => {
    if (word === undefined || cwd === null || (k !== undefined && c.globs.has(k))) return;
    out.push({ word, cwd });
  };
  const name = path.basename(cmd);
  if (name === "cd" || name === "pushd") {
    const t = args.find((a) => !a.startsWith("-"));
    if (t === undefined || dynamic(t) || cwd === null) return null;
    return path.resolve(cwd, t);
  }
  if (cmd.includes("/") && !c.globs.has(i)) add(cmd);
  if ((name === "source" || name === ".") && args.length) {
    add(args[0], i + 1);
    return cwd;
  }
  if (name === "eval") {
    shellNames(args.join(" "), cwd ?? workspace, depth + 1, out);
    return cwd;
  }
  const shell = SHELLS.has(name);
  if (!shell && !INTERPRETER.test(name)) {
    // an unlisted wrapper in front (`flock l sh x.sh`, `strace -f python3 x.py`): the shell or interpreter later in the words
    const k = w.findIndex((x, j) => j > i && (SHELLS.has(path.basename(x)) || INTERPRETER.test(path.basename(x))));
    if (k > i) {
      const globs = new Set([...c.globs].filter((g) => g >= k).map((g) => g - k));
      simpleNames({ words: w.slice(k), globs, redirects: c.redirects }, cwd, workspace, depth, out);
    }
    return cwd;
  }
  const inline = inlineFlags(name);
  let script: number | undefined;
  for (let k = 0; k < args.length; k++) {
    const a = args[k]!;
    if (shell && /^-[a-zA-Z]*c[a-zA-Z]*$/.test(a)) {
      const body = args[k + 1] === "--" ? args[k + 2] : args[k + 1];
      if (body !== undefined) shellNames(body, cwd ?? workspace, depth + 1, out);
      return cwd;
    }
    if (!shell && /^(python|pypy)/.test(name) && a.startsWith("-m")) {
      // `python3 -m mod`: runs mod.py, or mod/__main__.py when mod is a package (which wins)
      const mod = a === "-m" ? args[k + 1] : a.slice(2);
      if (mod !== undefined && /^[A-Za-z_][A-Za-z0-9_.]*$/.test(mod)) {
        const rel = mod.split(".").join("/");
        add(`${rel}.py`);
        add(`${rel}/__main__.py`);
      }
      return cwd;
    }
    if (!shell && (inline.has(a) || a.startsWith("--eval=") || a.startsWith("--print="))) return cwd;
    if (a === "--") {
      script = k + 1 < args.length ? k + 1 : undefined;
      break;
    }
    if (VALUE_FLAGS.has(a)) {
      k++;
      continue;
    }
    if (a.startsWith("-") || a.startsWith("+")) continue;
    if ((name === "bun" || name === "deno") && (a === "run" || a === "x")) continue;
    script = k;
    break;
  }
  if (script !== undefined) add(args[script], i + 1 + script);
  else for (const r of c.redirects) if (r.op === "<") add(r.target);
  return cwd;
}

/**
 * Hashes each named file as it is now (see {@link FileBinding}). Never follows a symlink swapped in for a
 * regular file unnoticed (lstat first; the open of a regular file uses `O_NOFOLLOW` and must be the same inode),
 * never opens a FIFO, device or socket, and reads in {@link BIND_CHUNK_BYTES} async chunks.
 * @param workspace the session's workspace, absolute (symlinked components on the way are resolved to its real path).
 * @param signal stops hashing between chunks (rejects with the signal's reason).
 */
export async function bindFiles(files: NamedFile[], workspace: string, signal?: AbortSignal): Promise<FileBinding[]> {
  const root = safeReal(workspace) ?? workspace;
  const out: FileBinding[] = [];
  for (const f of files) {
    const at = path.join(root, f.rel);
    const b = await bindOne(f, at, signal);
    // a folder on the way swapped for a symlink (`sub` → /etc) changes where the call lands, not the file's own entry
    const parent = safeReal(path.dirname(at));
    if (parent !== null && parent !== path.dirname(at)) b.parent = parent;
    out.push(b);
  }
  return out;
}

async function bindOne(f: NamedFile, at: string, signal?: AbortSignal): Promise<FileBinding> {
  let st: Stats;
  try {
    st = await lstat(at);
  } catch {
    return { path: f.rel, kind: "missing" };
  }
  if (st.isSymbolicLink()) {
    const link = await readlink(at).catch(() => "");
    const target = await hashOpen(at, false, undefined, signal);
    return { path: f.rel, kind: "symlink", link, ...(target.kind === "file" ? { size: target.size, sha256: target.sha256 } : {}) };
  }
  if (!st.isFile()) return { path: f.rel, kind: "other" };
  if (st.size > BIND_MAX_BYTES) return { path: f.rel, kind: "too_large", size: st.size };
  const h = await hashOpen(at, true, st, signal);
  switch (h.kind) {
    case "file":
      return { path: f.rel, kind: "file", size: h.size, sha256: h.sha256 };
    case "too_large":
      return { path: f.rel, kind: "too_large", size: h.size };
    case "other":
      return { path: f.rel, kind: "other" };
  }
}

type Hashed = { kind: "file"; size: number; sha256: string } | { kind: "too_large"; size: number } | { kind: "other" };

/** Opens without blocking on a FIFO, checks it is a regular file (and the lstat'd inode when `expect` is given), hashes it in chunks. */
async function hashOpen(at: string, noFollow: boolean, expect: Stats | undefined, signal?: AbortSignal): Promise<Hashed> {
  let fh;
  try {
    fh = await open(at, FS.O_RDONLY | FS.O_NONBLOCK | (noFollow ? FS.O_NOFOLLOW : 0));
  } catch {
    return { kind: "other" };
  }
  try {
    const st = await fh.stat();
    if (!st.isFile() || (expect && (st.ino !== expect.ino || st.dev !== expect.dev))) return { kind: "other" };
    if (st.size > BIND_MAX_BYTES) return { kind: "too_large", size: st.size };
    const hash = createHash("sha256");
    const buf = Buffer.allocUnsafe(BIND_CHUNK_BYTES);
    let size = 0;
    for (;;) {
      signal?.throwIfAborted();
      const { bytesRead } = await fh.read(buf, 0, buf.length, null);
      if (bytesRead === 0) break;
      size += bytesRead;
      if (size > BIND_MAX_BYTES) return { kind: "too_large", size };
      hash.update(buf.subarray(0, bytesRead));
    }
    return { kind: "file", size, sha256: hash.digest("hex") };
  } finally {
    await fh.close();
  }
}

function safeReal(p: string): string | null {
  try {
    return resolveRealPath("/", p);
  } catch {
    return null;
  }
}

/** The bindings that differ between two hashings of the same named files (by position), with a one-line description each. */
export function changedFiles(before: FileBinding[], after: FileBinding[]): string[] {
  const out: string[] = [];
  for (let k = 0; k < Math.max(before.length, after.length); k++) {
    const a = before[k];
    const b = after[k];
    if (a && b && sameBinding(a, b)) continue;
    out.push(`${(b ?? a)!.path}: ${describe(a)} → ${describe(b)}`);
  }
  return out;
}

function sameBinding(a: FileBinding, b: FileBinding): boolean {
  return a.path === b.path && a.kind === b.kind && a.sha256 === b.sha256 && a.size === b.size && a.link === b.link && a.parent === b.parent;
}

/** A binding in a few words, e.g. `sha256 3a7b…(12 bytes)`, `missing`, `symlink → /etc/passwd`. */
export function describe(b: FileBinding | undefined): string {
  if (!b) return "not named";
  if (b.parent !== undefined) return `${describe({ ...b, parent: undefined })} in ${b.parent}`;
  switch (b.kind) {
    case "file":
      return `sha256 ${b.sha256!.slice(0, 12)}… (${b.size} bytes)`;
    case "missing":
      return "missing";
    case "symlink":
      return `symlink → ${b.link}${b.sha256 ? ` (sha256 ${b.sha256.slice(0, 12)}…)` : ""}`;
    case "other":
      return "not a regular file";
    case "too_large":
      return `too large to hash (${b.size} bytes)`;
  }
}
