/**
 * @module gate/named-files
 * Which workspace files a call names (issue 12 item 10), so an approval can be bound to their content
 * (card/bound-files.ts): the script operand of a shell or interpreter command, a `source`d file, a
 * `./x` command, the target of a write/edit. Uses the security floor's reading of the call and its shell parser.
 */
import path from "node:path";
import { isInside, resolveRealPath } from "../launcher/resolve.ts";
import { BIND_MAX_FILES, type NamedFile } from "../card/bound-files.ts";
import { floorCall } from "./inspectors/security-floor.ts";
import { splitCommands, MAX_COMMAND_CHARS, MAX_SHELL_DEPTH, type SimpleCommand } from "../shell/words.ts";
import { RESERVED, SHELLS, WRAPPERS } from "../shell/command-words.ts";
import { assertNever } from "../errors.ts";

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
const WRAPPER_VALUE_FLAGS = new Set(["-n", "-u", "-g", "-C", "-i", "-o", "-e", "-s", "-k", "-c", "-p"]);

/** True when a word's value is not known statically (variables, substitutions, `~`): such a word names nothing here. */
function dynamic(word: string): boolean {
  return /[$`]/.test(word) || word.startsWith("~") || word.includes("…");
}

/**
 * The workspace files a call names, in the order named, without duplicates, at most {@link BIND_MAX_FILES} + 1
 * (one more than can be bound: the gate refuses such a call, `payload_too_large`, rather than bind part of it).
 * Shell commands (`developer__shell`/`Bash`) are split with the floor's parser (src/shell/words.ts): a shell or
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
    default:
      return assertNever(call, "call kind");
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
  if (!parsed.ok) {
    // the floor asks for a command it cannot parse; one past the parser's bound is valid shell all the same,
    // and the approval of it must still be bound to the files it runs
    if (command.length > MAX_COMMAND_CHARS) rawNames(command, workspace, depth, out);
    return;
  }
  // a command line that runs code also runs what it feeds in: `cat x | sh`, `bash -c "$(cat x)"`, `source <(cat x)`
  const feeds = parsed.commands.some(runsCode);
  let cwd: string | null = workspace;
  for (const c of parsed.commands) cwd = simpleNames(c, cwd, workspace, depth, out, feeds);
}

/**
 * The files a command too long to parse names, read roughly: each stretch between operators, brackets and
 * quotes is a simple command of blank-separated words (`<` and `<FILE` its input), judged as a parsed one
 * (`./x`, `bash x.sh`, `source x`, `cat x | sh`). Linear; it may name more than bash runs (a `;` inside quotes
 * splits too), which only binds the approval to more files.
 */
function rawNames(command: string, workspace: string, depth: number, out: { word: string; cwd: string }[]): void {
  const commands: SimpleCommand[] = [];
  for (const part of command.split(/[\n\r;&|()`{}'"]/)) {
    const words: string[] = [];
    const redirects: SimpleCommand["redirects"] = [];
    const toks = part.split(/\s+/).filter(Boolean);
    for (let k = 0; k < toks.length; k++) {
      const t = toks[k]!;
      if (t === "<" && k + 1 < toks.length) redirects.push({ op: "<", target: toks[++k]! });
      else if (t.startsWith("<") && t.length > 1 && t[1] !== "<") redirects.push({ op: "<", target: t.slice(1) });
      else words.push(t);
    }
    if (words.length > 0 || redirects.length > 0) commands.push({ words, globs: new Set(), redirects });
  }
  const feeds = commands.some(runsCode);
  let cwd: string | null = workspace;
  for (const c of commands) cwd = simpleNames(c, cwd, workspace, depth, out, feeds);
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

