/**
 * @module gate/rules/suggest
 * The narrowest permission rule that covers one call, in Claude Code's syntax: what a card offers as
 * "Allow for this session" (`suggested_rule`). A shell command gets `Bash(<words>:*)` — its command
 * words up to the first flag or operand that varies (`npm run test -- --watch` → `Bash(npm run test:*)`);
 * a compound command gets one only when one rule covers every part. A file read gets `Read(//abs/path)` (a folder listing none: its rule would cover every file below), a write
 * `Edit(//abs/path)` — absolute, since a session rule holds for the whole tree and a child may have another
 * workspace, where `./rel` would name another file — and an MCP tool `mcp__server__tool`.
 * Every suggestion is parsed with the rules parser and must allow the call itself; else there is none.
 */
import { statSync } from "node:fs";
import path from "node:path";
import { splitCommands } from "../../shell/words.ts";
import { RESERVED, SHELLS, WRAPPERS } from "../../shell/command-words.ts";
import type { ToolDef } from "../../tool/tool.ts";
import { claudeToolName } from "../inspectors/hooks.ts";
import { compileRules } from "./index.ts";

/** Most command words a shell suggestion keeps (`docker compose up`, `npm run test`). */
export const SUGGEST_MAX_WORDS = 3;

/**
 * Longest rule offered, characters. The rule is shown on the card (`a` stores it) and made of model-chosen
 * words or a path of any length: a longer one would fill the person's screen and push the card's tool, reason
 * and arguments out of sight of its question (a card cannot cut it: `a` would store what was not shown).
 */
export const SUGGEST_MAX_CHARS = 512;

/** Commands whose words after them are another command or a script: a prefix rule on them would allow anything. */
const RUNS_OTHERS = new Set([
  "eval", "source", ".", "exec", "xargs", "find", "awk", "sed", "perl", "python", "python3", "node", "bun", "deno", "ruby", "php", "lua",
  // run the command after their own options, as the wrappers do (`watch rm -rf x`, `flock f rm x`)
  "watch", "flock", "strace", "ltrace", "taskset", "unshare", "nsenter", "fakeroot", "chrt", "prlimit", "parallel", "runuser", "su",
  "script", "systemd-run", "firejail", "proot", "gdb", "valgrind", "expect", "gawk", "mawk", "nawk", "npx", "bunx", "pnpx",
]);

/** Versioned interpreters (`python3.12`, `node22`, `perl5.36`): a prefix rule on them would allow any script. */
const INTERPRETER = /^(python|pypy|node|nodejs|perl|ruby|php|lua|luajit|tclsh|wish|Rscript|java|jshell|deno|bun|pwsh|osascript)[0-9.]*$/;

/**
 * Programs whose global options, given before the subcommand, can run any command (`git -c alias.x='!sh'`,
 * `git -c core.pager=…`, `npm --script-shell=…`): a rule on the bare program would allow that, so a call
 * that puts an option before the subcommand (`git -C sub log`) gets no suggestion.
 */
const SUBCOMMAND_PROGRAMS = new Set(["git", "npm", "pnpm", "yarn", "cargo", "docker", "podman", "kubectl", "go", "pip", "pip3", "uv"]);

/** A word a suggestion may keep: a plain subcommand-like word (no path, flag, glob, quote or assignment). */
const SUBCOMMAND = /^[A-Za-z][A-Za-z0-9_:-]*$/;

/** A program word a suggestion may start with: a name or a path with no shell or glob characters. */
const PROGRAM = /^[A-Za-z0-9_./+-]+$/;

/** The `Bash(…:*)` rule for one simple command's words, or null when none is safe to offer. */
function shellSuggestion(words: readonly string[]): string | null {
  const prog = words[0];
  if (prog === undefined || !PROGRAM.test(prog) || prog.startsWith("-") || prog.includes("=")) return null;
  const base = path.basename(prog);
  if (WRAPPERS.has(base) || RESERVED.has(base) || SHELLS.has(base) || RUNS_OTHERS.has(base) || INTERPRETER.test(base)) return null;
  const kept = [prog];
  for (let i = 1; i < words.length && kept.length < SUGGEST_MAX_WORDS; i++) {
    const w = words[i]!;
    if (!SUBCOMMAND.test(w) || w.endsWith(":")) break;
    kept.push(w);
  }
  if (kept.length === 1 && SUBCOMMAND_PROGRAMS.has(base)) return null;
  return `Bash(${kept.join(" ")}:*)`;
}

/** A path written in a rule, absolute (`//abs/path`); null when it has glob or rule characters. */
function pathSpec(p: string, workspace: string): string | null {
  const abs = path.resolve(workspace, p);
  if (/[*?[\]{}()!+@\\\s]/.test(abs)) return null;
  return `/${abs}`;
}

/**
 * Whether `abs` is a folder now (links followed): a Read or Edit rule on it would cover every file below it,
 * so a read_file or write_file call pointed at a folder (it fails, but its card offers `a`) gets no rule.
 */
function isFolder(abs: string): boolean {
  try {
    return statSync(abs).isDirectory();
  } catch {
    return false;
  }
}

/** The suggestion before validation. */
function candidate(def: Pick<ToolDef, "name" | "claude">, args: unknown, workspace: string): string | null {
  const a = (args ?? {}) as { command?: unknown; path?: unknown };
  switch (def.name) {
    case "developer__shell": {
      if (typeof a.command !== "string") return null;
      const parsed = splitCommands(a.command);
      if (!parsed.ok || parsed.commands.length === 0) return null;
      let rule: string | null = null;
      for (const c of parsed.commands) {
        const r = shellSuggestion(c.words);
        if (r === null || (rule !== null && r !== rule)) return null;
        rule = r;
      }
      return rule;
    }
    case "developer__list_dir":
      // a Read rule on a folder covers every file below it (at any depth): no rule covers the listing alone
      return null;
    case "developer__read_file":
    case "developer__write_file":
    case "developer__edit_file": {
      if (typeof a.path !== "string" || a.path === "") return null;
      const spec = pathSpec(a.path, workspace);
      if (spec === null || isFolder(path.resolve(workspace, a.path))) return null;
      return `${def.name === "developer__read_file" ? "Read" : "Edit"}(${spec})`;
    }
    default: {
      const claude = claudeToolName(def);
      return claude.startsWith("mcp__") && claude.split("__").length === 3 ? claude : null;
    }
  }
}

/**
 * The narrowest rule (Claude Code's syntax) that covers this call, for "Allow for this session"; null
 * when there is none worth offering (a compound command no one rule covers, a wrapper or interpreter
 * that runs other commands, a path with glob characters, a folder listing (its Read rule would cover every
 * file below the folder), a tool with no rule form, a rule longer than
 * {@link SUGGEST_MAX_CHARS}). The rule is checked:
 * it parses, and as the only allow rule it allows this very call.
 * @param def the tool (`name`; `claude` names MCP tools)
 * @param args the parsed arguments (`command` for the shell, `path` for file tools)
 * @param workspace the session's workspace (absolute path)
 */
export function suggestRule(def: Pick<ToolDef, "name" | "claude">, args: unknown, workspace: string): string | null {
  const rule = candidate(def, args, workspace);
  if (rule === null || rule.length > SUGGEST_MAX_CHARS) return null;
  try {
    const set = compileRules({ allow: [rule], ask: [], deny: [] });
    const m = set.judge(def, args, workspace);
    return m?.list === "allow" && m.rule === rule ? rule : null;
  } catch {
    return null;
  }
}
