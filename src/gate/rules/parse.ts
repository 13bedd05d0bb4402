/**
 * @module gate/rules/parse
 * Parses one permission rule in Claude Code's syntax (`Tool` or `Tool(specifier)`) into what it selects:
 * which airlock tools (`Bash` → developer__shell, `Read` → read_file and list_dir, `Edit` → write_file
 * and edit_file, `mcp__server[__tool]` → the MCP server's `server__tool` tools, airlock's own names as
 * they are) and what the specifier means for them (a shell command pattern, a gitignore-style path).
 * Pure: no file system, no registry (tool names are checked against the registry at start).
 */
import { splitCommands } from "../../shell/words.ts";

/** Which tools a rule selects. */
export type ToolSelector =
  /** airlock tool names, exactly (built-ins and `server__tool` MCP names). */
  | { kind: "names"; names: readonly string[] }
  /** Claude Code's MCP forms: every tool of `server` (`mcp__server`, `mcp__server__*`), or one (`mcp__server__tool`). */
  | { kind: "mcp"; server: string; tool?: string };

/** A shell command pattern (Claude Code's "Bash" specifiers). */
export type ShellPattern =
  /** `Bash(npm run build)`: the command's words equal these. */
  | { kind: "exact"; words: readonly string[] }
  /** `Bash(npm run test:*)` (legacy `:*`): the command's words start with these. */
  | { kind: "prefix"; words: readonly string[] }
  /** `Bash(git * main)`: `*` matches any text in the space-joined words; a trailing ` *` also matches nothing (`git *` matches `git`). */
  | { kind: "wildcard"; regex: TextMatcher };

/** Where a path pattern is anchored. */
export type PathAnchor =
  /** `./x`, `x/y`: relative to the session's workspace. */
  | "workspace"
  /** `x` with no slash (gitignore): any file or folder named like it at any depth under the workspace. */
  | "anywhere"
  /** `//abs`, `~/x` (home resolved at parse), `/x` once resolved against its settings folder. */
  | "absolute";

/** A gitignore-style path pattern (Claude Code's Read/Edit specifiers); `glob` is a picomatch pattern. */
export interface PathPattern {
  anchor: PathAnchor;
  glob: string;
}

/** What a rule's specifier constrains. */
export type Specifier = { kind: "any" } | { kind: "shell"; pattern: ShellPattern } | { kind: "path"; pattern: PathPattern };

/** One parsed rule. `text` is the rule as written (shown on cards and refusals). */
export interface ParsedRule {
  text: string;
  tools: ToolSelector;
  spec: Specifier;
}

/**
 * Why a rule could not be parsed. `unsupported: true` when it is well-formed Claude Code but names a tool
 * airlock does not have (`WebFetch`, `Grep` …) or a form airlock does not apply (`Write(path)`): an
 * imported settings file skips those (listed once at start); airlock.yaml refuses them.
 */
export type RuleParseError = {
  text: string;
  why: string;
  unsupported?: boolean;
  /** The tool name when it may be misspelt (unknown, or given a specifier it does not take): start-up suggests a close name. */
  unknownTool?: string;
};

export type RuleParse = { ok: true; rule: ParsedRule } | { ok: false; error: RuleParseError };

/** What a tool alias or name takes as specifier. */
type SpecKind = "shell" | "path" | "none";

/**
 * Claude Code's tool names airlock maps onto its own tools. Claude Code: "Read rules apply to all
 * built-in tools that read files", "Edit rules apply to all built-in tools that edit files"; airlock's
 * readers are read_file and list_dir, its editors write_file and edit_file.
 */
const CLAUDE_ALIASES: Record<string, { names: string[]; spec: SpecKind }> = {
  Bash: { names: ["developer__shell"], spec: "shell" },
  Read: { names: ["developer__read_file", "developer__list_dir"], spec: "path" },
  Edit: { names: ["developer__write_file", "developer__edit_file"], spec: "path" },
  // Claude Code checks paths only in Read and Edit rules (Write(path) is accepted there but never consulted)
  Write: { names: ["developer__write_file"], spec: "none" },
};

/** airlock's own tools that take a specifier, and which kind. */
const AIRLOCK_SPEC: Record<string, SpecKind> = {
  developer__shell: "shell",
  developer__read_file: "path",
  developer__list_dir: "path",
  developer__write_file: "path",
  developer__edit_file: "path",
};

/** Claude Code tools airlock has no counterpart for: their rules cannot apply here. */
export const CLAUDE_ONLY_TOOLS: readonly string[] = [
  "WebFetch",
  "WebSearch",
  "Grep",
  "Glob",
  "LS",
  "Task",
  "Agent",
  "NotebookEdit",
  "NotebookRead",
  "MultiEdit",
  "TodoWrite",
  "BashOutput",
  "KillShell",
  "KillBash",
  "ExitPlanMode",
  "SlashCommand",
  "Skill",
];

/** Names worth suggesting for a misspelt rule: Claude Code's tools, and airlock's tools that take a specifier. */
export const CLAUDE_RULE_NAMES: readonly string[] = [...Object.keys(CLAUDE_ALIASES), ...CLAUDE_ONLY_TOOLS, ...Object.keys(AIRLOCK_SPEC)];

/** Options of {@link parseRule}. `home`: the folder `~/` means (absolute path). */
export interface ParseOptions {
  home: string;
}

/**
 * Parses one rule. Forms (Claude Code, "Permission rule syntax" and "Tool-specific permission rules"):
 * - `Tool` and `Tool(*)` match every use of the tool.
 * - `Bash(cmd)` exact; `Bash(prefix:*)` prefix on word boundaries (legacy form); `*` anywhere is a
 *   wildcard, and a trailing ` *` keeps a word boundary (`Bash(ls *)` matches `ls -la`, `ls`, not `lsof`).
 * - `Read(path)` / `Edit(path)`: gitignore-style; `//abs` is absolute, `~/x` under home, `/x` relative
 *   to the settings file's folder (see {@link resolveSettingsRelative}; unresolved it means the
 *   workspace), `./x` and `x/y` relative to the workspace, a bare `x` (no slash) matches at any depth; a
 *   pattern naming a folder covers everything under it. In airlock.yaml `/x` is the workspace, as in a
 *   project's `.claude/settings.json` (the project root).
 * - `mcp__server`, `mcp__server__*` (every tool of the server), `mcp__server__tool`.
 * - airlock's names: `developer__shell(git status)`, `interpreter__python`, `fs__read_text_file`.
 * @returns the parsed rule, or why it is malformed (never throws).
 */
export function parseRule(text: string, opts: ParseOptions): RuleParse {
  const fail = (why: string, extra: Partial<RuleParseError> = {}): RuleParse => ({ ok: false, error: { text, why, ...extra } });
  if (typeof text !== "string") return fail("a rule is a string");
  const m = /^([A-Za-z0-9_*-]+)(?:\((.*)\))?$/s.exec(text.trim());
  if (!m) return fail('not a rule: write Tool or Tool(specifier), e.g. Bash(npm run test:*), Read(./.env), mcp__github');
  const name = m[1]!;
  const raw = m[2];
  if (raw !== undefined && raw.trim() === "") return fail("empty specifier: write the tool name alone to match every use of it");
  const whole = raw === undefined || raw.trim() === "*";

  if (name.startsWith("mcp__")) {
    const rest = name.slice(5);
    const sep = rest.indexOf("__");
    const server = sep < 0 ? rest : rest.slice(0, sep);
    const tool = sep < 0 ? undefined : rest.slice(sep + 2);
    if (!/^[A-Za-z0-9-]+$/.test(server)) return fail(`"${server}" is not an MCP server name (letters, digits and '-')`);
    if (tool !== undefined && !/^[A-Za-z0-9_.-]+$|^\*$/.test(tool)) return fail(`"${tool}" is not an MCP tool name; write mcp__${server} or mcp__${server}__* for all its tools`);
    if (!whole) return fail("MCP rules take no specifier (Claude Code matches MCP tools by name only)");
    return { ok: true, rule: { text, tools: { kind: "mcp", server, ...(tool && tool !== "*" ? { tool } : {}) }, spec: { kind: "any" } } };
  }
  if (name.includes("*")) return fail("a tool name has no wildcard (except mcp__server__*)");

  let names: string[];
  let kind: SpecKind;
  const alias = CLAUDE_ALIASES[name];
  if (alias) {
    names = alias.names;
    kind = alias.spec;
  } else if (CLAUDE_ONLY_TOOLS.includes(name)) {
    return fail(`airlock has no ${name} tool, so this rule could never apply`, { unsupported: true });
  } else if (/^[a-z0-9-]+__[A-Za-z0-9_.-]+$/i.test(name)) {
    names = [name];
    kind = AIRLOCK_SPEC[name] ?? "none";
  } else {
    return fail(`unknown tool "${name}"`, { unknownTool: name });
  }
  if (whole) return { ok: true, rule: { text, tools: { kind: "names", names }, spec: { kind: "any" } } };
  const spec = raw!.trim();
  switch (kind) {
    case "none":
      if (name === "Write") return fail("Claude Code checks paths only in Read(…) and Edit(…) rules (Write(path) is never consulted); write Edit(path), which covers developer__write_file", { unsupported: true });
      return fail(`${name} takes no specifier; write ${name} alone to match every call of it`, { unknownTool: name });
    case "shell": {
      const pattern = parseShellPattern(spec);
      if (typeof pattern === "string") return fail(pattern);
      return { ok: true, rule: { text, tools: { kind: "names", names }, spec: { kind: "shell", pattern } } };
    }
    case "path": {
      const pattern = parsePathPattern(spec, opts.home);
      if (typeof pattern === "string") return fail(pattern);
      return { ok: true, rule: { text, tools: { kind: "names", names }, spec: { kind: "path", pattern } } };
    }
    default:
      return kind satisfies never;
  }
}

/** The words of one simple command written in a rule, or why it is not one. */
function ruleWords(spec: string): string[] | string {
  const p = splitCommands(spec);
  if (!p.ok) return `the command cannot be parsed (${p.reason})`;
  if (p.commands.length !== 1 || p.commands[0]!.redirects.length) {
    return "a shell rule names one simple command (no &&, ;, |, redirections or $(…)); write one rule per command — a compound command is allowed when every part of it is";
  }
  return p.commands[0]!.words;
}

/**
 * A shell specifier as a pattern. Claude Code: `:*` at the end is the legacy prefix form (word
 * boundary: `npm run test:*` matches `npm run test` and `npm run test --watch`, not `npm run testing`);
 * any other `*` is a wildcard over the command text (`\*` is a literal star); else an exact command.
 * `Bash(ls *)` also matches a bare `ls` (the docs' word-boundary form; anthropics/claude-code#18160 shows
 * users rely on `ls *` covering `ls -la`).
 * @returns the pattern, or why it is malformed.
 */
export function parseShellPattern(spec: string): ShellPattern | string {
  if (spec.endsWith(":*") && !hasWildcard(spec.slice(0, -2))) {
    const words = ruleWords(spec.slice(0, -2));
    if (typeof words === "string") return words;
    if (words.length === 0) return "empty command before :*";
    return { kind: "prefix", words };
  }
  if (hasWildcard(spec)) {
    const text = spec.trim().replace(/\s+/g, " ");
    // a trailing " *" with no other wildcard keeps a word boundary and may match nothing (`ls *` matches `ls`)
    const stars = text.split(/(?<!\\)\*/).length - 1;
    const trailing = stars === 1 && text.endsWith(" *");
    const body = trailing ? text.slice(0, -2) : text;
    const tokens: WildToken[] = [];
    for (let i = 0; i < body.length; i++) {
      const c = body[i]!;
      if (c === "\\" && body[i + 1] === "*") {
        tokens.push("*literal");
        i++;
      } else if (c === "*") {
        if (tokens[tokens.length - 1] !== STAR) tokens.push(STAR);
      } else tokens.push(c);
    }
    const withRest: WildToken[] = [...tokens, " ", STAR];
    return { kind: "wildcard", regex: { test: (text) => wildcardText(tokens, text) || (trailing && wildcardText(withRest, text)) } };
  }
  const words = ruleWords(spec);
  if (typeof words === "string") return words;
  if (words.length === 0) return "empty command";
  return { kind: "exact", words };
}

/** Tests a command's text against a wildcard rule ({@link parseShellPattern}). */
export interface TextMatcher {
  test(text: string): boolean;
}

/** A wildcard's token: one literal character (a UTF-16 unit; `"*literal"`: an escaped star), or {@link STAR}. */
type WildToken = string | typeof STAR;
const STAR = Symbol("*");

/**
 * Whether `text` matches `tokens` whole, a {@link STAR} matching any run of characters (newlines too): the
 * classic two-pointer wildcard walk, at most text length × pattern length steps. Never a backtracking
 * regular expression: a rule's stars (an untrusted repository's settings file brings deny and ask rules)
 * against a command the model writes (`Bash(*a*a*a*a*a*a*b)` and 300 `a`s) backtracked for minutes in
 * airlock's own thread.
 */
function wildcardText(tokens: readonly WildToken[], text: string): boolean {
  let t = 0;
  let c = 0;
  let star = -1;
  let mark = 0;
  const lit = (tok: WildToken | undefined, ch: string) => tok !== undefined && tok !== STAR && (tok === "*literal" ? ch === "*" : tok === ch);
  while (c < text.length) {
    const tok = tokens[t];
    if (lit(tok, text[c]!)) {
      t++;
      c++;
    } else if (tok === STAR) {
      star = t++;
      mark = c;
    } else if (star >= 0) {
      t = star + 1;
      c = ++mark;
    } else return false;
  }
  while (tokens[t] === STAR) t++;
  return t === tokens.length;
}

function hasWildcard(s: string): boolean {
  return /(?<!\\)\*/.test(s);
}

/** The prefix `/x` gets for a rule from a settings file: `//<settingsDir>/x`. */
const SETTINGS_RELATIVE = /^([A-Za-z]+|developer__(?:read_file|list_dir|write_file|edit_file))\(\/(?!\/)(.*)\)$/s;

/**
 * Rewrites a settings-relative path rule (`Read(/src/**)`: Claude Code, "/path — relative to the
 * settings file") to the absolute form `Read(//<dir>/src/**)` for the settings file in folder `dir`;
 * any other rule is returned unchanged. Used when rules are read from a file whose folder is known.
 */
export function resolveSettingsRelative(text: string, dir: string): string {
  const m = SETTINGS_RELATIVE.exec(text.trim());
  if (!m) return text;
  const kind = CLAUDE_ALIASES[m[1]!]?.spec ?? AIRLOCK_SPEC[m[1]!];
  if (kind !== "path") return text;
  return `${m[1]}(/${dir.replace(/\/+$/, "")}/${m[2]})`;
}

/**
 * A path specifier as a pattern (Claude Code's Read/Edit forms; gitignore semantics). A trailing `/`
 * is dropped (the folder covers its subtree anyway).
 * @returns the pattern, or why it is malformed.
 */
export function parsePathPattern(spec: string, home: string): PathPattern | string {
  if (spec.includes("\0")) return "a path has no NUL byte";
  let s = spec;
  // `//` names the file system's root, `/`, `.` and `./` the workspace's: each covers everything under it
  // (a folder covers its subtree), never nothing
  if (/^\/\/+$/.test(s)) return { anchor: "absolute", glob: "/**" };
  // paths are matched resolved, so a `..` kept in a glob would match nothing (`./src/../.env` in deny)
  if (s.split("/").includes("..")) return "a path pattern has no '..'; write //absolute/path or ~/path";
  if (s.length > 1) s = s.replace(/\/+$/, "");
  if (s === "*" || s === "**" || s === "./**" || s === "./*" || s === "/" || s === "." || s === "./") return { anchor: "workspace", glob: "**" };
  if (s.startsWith("//")) return { anchor: "absolute", glob: clean(s.slice(1)) };
  if (s === "~" || s.startsWith("~/")) return { anchor: "absolute", glob: clean(`${home.replace(/\/+$/, "")}${s.slice(1)}`) };
  if (s.startsWith("~")) return "~user paths are not supported; write ~/path or //absolute/path";
  if (s.startsWith("/")) return { anchor: "workspace", glob: clean(s.slice(1)) };
  if (s.startsWith("./")) return { anchor: "workspace", glob: clean(s.slice(2)) };
  if (!s.includes("/")) return { anchor: "anywhere", glob: s };
  return { anchor: "workspace", glob: clean(s) };
}

/** Collapses `//` and `/./` inside a glob (never `..`, which a glob keeps literal). */
function clean(g: string): string {
  return g.replace(/\/\.(?=\/|$)/g, "").replace(/\/{2,}/g, "/") || "/";
}
