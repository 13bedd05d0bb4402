/**
 * @module gate/rules
 * A compiled {@link RuleSet}: the `permissions.allow / ask / deny` rules (Claude Code's syntax, see
 * parse.ts), indexed by airlock tool name, judged deny > ask > allow (Claude Code: "rules are evaluated
 * in order: deny → ask → allow; the first matching rule wins"). The gate's `rule` inspector
 * (gate/inspectors/rules.ts) asks it once per call.
 */
import { homedir } from "node:os";
import { AirlockError } from "../../errors.ts";
import type { ToolDef } from "../../tool/tool.ts";
import type { RealPaths } from "../inspectors/floor-paths.ts";
import { claudeToolName } from "../inspectors/hooks.ts";
import { commandAllows, compilePath, pathAllows, pathHits, pathView, shellAllows, shellHits, shellView, type PathMatcher, type PathView, type ShellView } from "./match.ts";
import { parseRule, type ParsedRule, type RuleParseError, type ShellPattern, type ToolSelector } from "./parse.ts";

export { parseRule, resolveSettingsRelative, CLAUDE_RULE_NAMES, type ParsedRule, type RuleParseError } from "./parse.ts";

/** The three rule lists, as in `permissions` (each a list of rule texts). */
export interface RuleLists {
  allow: readonly string[];
  ask: readonly string[];
  deny: readonly string[];
}

/** Which list a rule came from. */
export type RuleList = keyof RuleLists;

/** A rule's decision on a call: the list whose rule matched first (deny > ask > allow) and that rule's text. */
export interface RuleMatch {
  list: RuleList;
  rule: string;
}

type CompiledSpec = { kind: "any" } | { kind: "shell"; pattern: ShellPattern } | { kind: "path"; matcher: PathMatcher };

interface CompiledRule {
  text: string;
  tools: ToolSelector;
  spec: CompiledSpec;
  /** MCP forms: the Claude Code name it names (`mcp__server__tool`), or its prefix (`mcp__server__`) when `mcpWhole`; built once. */
  mcpName?: string;
  mcpWhole?: boolean;
}

/** A rule that failed to parse, with the list it was in. */
export type BadRule = RuleParseError & { list: RuleList };

/** The lists in the order they decide. */
const ORDER: readonly RuleList[] = ["deny", "ask", "allow"];

/** What one call offers the matchers, computed once and only when a rule needs it. */
class CallView {
  private shell?: ShellView;
  private file?: PathView | null;
  constructor(
    readonly args: unknown,
    readonly workspace: string,
    readonly paths?: RealPaths,
  ) {}
  shellView(): ShellView | null {
    const command = (this.args as { command?: unknown } | null)?.command;
    if (typeof command !== "string") return null;
    return (this.shell ??= shellView(command));
  }
  pathView(): PathView | null {
    if (this.file === undefined) {
      const p = (this.args as { path?: unknown } | null)?.path;
      this.file = typeof p === "string" && p !== "" ? pathView(p, this.workspace, this.paths) : null;
    }
    return this.file;
  }
}

/**
 * One tool's rules from one list, in list order, with its path rules indexed by the literal prefix of
 * their glob (match.ts `literalPrefix`): a call tries only the path rules whose prefix its path (as
 * written or real) lies under, plus those with no literal prefix — so 200 rules are not 200 glob tests.
 */
class Bucket {
  readonly rules: CompiledRule[] = [];
  /** Its shell rules, in order (a compound command may be covered part by part). */
  readonly shell: (CompiledRule & { spec: { kind: "shell" } })[] = [];
  /** Indices of the rules always tried: all but the path rules with a literal prefix. */
  private readonly always: number[] = [];
  private alwaysRules: CompiledRule[] = [];
  /** Path rules with a literal prefix, by anchor, keyed by the prefix (`src/module7`, `/etc/ssh`, `.env`). */
  private readonly keyed: Record<PathMatcher["anchor"], Map<string, number[]>> = { workspace: new Map(), absolute: new Map(), anywhere: new Map() };
  private nKeyed = 0;

  add(r: CompiledRule): void {
    const i = this.rules.push(r) - 1;
    if (r.spec.kind === "shell") this.shell.push(r as CompiledRule & { spec: { kind: "shell" } });
    if (r.spec.kind === "path" && r.spec.matcher.literal !== null) {
      const m = this.keyed[r.spec.matcher.anchor];
      const at = m.get(r.spec.matcher.literal);
      if (at) at.push(i);
      else m.set(r.spec.matcher.literal, [i]);
      this.nKeyed++;
    } else {
      this.always.push(i);
      this.alwaysRules.push(r);
    }
  }

  /** The rules that may apply to the call, in list order (the others cannot match it). */
  candidates(view: CallView): readonly CompiledRule[] {
    if (this.nKeyed === 0) return this.rules;
    const v = view.pathView();
    if (!v) return this.alwaysRules;
    let hit: number[] | null = null;
    const probe = (m: Map<string, number[]>, keys: () => readonly string[] | null) => {
      if (m.size === 0) return;
      for (const k of keys() ?? []) {
        const at = m.get(k);
        if (at) (hit ??= []).push(...at);
      }
    };
    // a glob with literal prefix P matches only P or paths below it: P is the path or one of its folders
    const lexical = v.lexical;
    const real = v.real();
    const same = real === lexical || (real.path === lexical.path && real.relPath === lexical.relPath);
    for (const f of same ? [lexical] : [lexical, real]) {
      probe(this.keyed.absolute, () => f.abs);
      probe(this.keyed.workspace, () => f.rel);
      probe(this.keyed.anywhere, () => f.segments);
    }
    if (hit === null) return this.alwaysRules;
    if (this.always.length === 0 && (hit as number[]).length === 1) return [this.rules[(hit as number[])[0]!]!];
    return [...new Set([...this.always, ...(hit as number[])])].sort((a, b) => a - b).map((i) => this.rules[i]!);
  }
}

/** Compiled permission rules; immutable. Build with {@link compileRules}. */
export class RuleSet {
  /** Rules by airlock tool name, per list. */
  private readonly byName: Record<RuleList, Map<string, Bucket>> = { allow: new Map(), ask: new Map(), deny: new Map() };
  /** MCP rules (`mcp__server…`), per list: matched by the tool's Claude Code name. */
  private readonly mcp: Record<RuleList, CompiledRule[]> = { allow: [], ask: [], deny: [] };
  /** How many rules it holds. */
  readonly size: number;

  /** @internal use {@link compileRules}. */
  constructor(rules: Record<RuleList, ParsedRule[]>) {
    let n = 0;
    for (const list of ORDER) {
      for (const r of rules[list]) {
        n++;
        const spec: CompiledSpec = r.spec.kind === "path" ? { kind: "path", matcher: compilePath(r.spec.pattern) } : r.spec;
        const c: CompiledRule = { text: r.text, tools: r.tools, spec };
        switch (r.tools.kind) {
          case "names":
            for (const name of r.tools.names) {
              let at = this.byName[list].get(name);
              if (!at) this.byName[list].set(name, (at = new Bucket()));
              at.add(c);
            }
            break;
          case "mcp":
            c.mcpWhole = r.tools.tool === undefined;
            c.mcpName = r.tools.tool === undefined ? `mcp__${r.tools.server}__` : `mcp__${r.tools.server}__${r.tools.tool}`;
            this.mcp[list].push(c);
            break;
          default:
            r.tools satisfies never;
        }
      }
    }
    this.size = n;
  }

  /**
   * The first rule that decides the call, deny > ask > allow; null when no rule applies.
   * @param def the tool (its `name`, and `claude` name for MCP forms)
   * @param args the parsed arguments (`command` for the shell, `path` for file tools)
   * @param workspace the session's workspace (absolute): relative path patterns are taken from it
   * @param paths this judgement's resolved paths, shared with the security floor (one judgement only)
   * @throws AirlockError `internal` when a file call's path loops through symlinks
   */
  judge(def: Pick<ToolDef, "name" | "claude">, args: unknown, workspace: string, paths?: RealPaths): RuleMatch | null {
    if (this.size === 0) return null;
    const view = new CallView(args, workspace, paths);
    let claudeName: string | undefined;
    for (const list of ORDER) {
      const named = this.byName[list].get(def.name);
      if (named) {
        for (const r of named.candidates(view)) if (this.applies(r, list, view)) return { list, rule: r.text };
        if (list === "allow") {
          const covering = this.coverShell(named.shell, view);
          if (covering) return { list, rule: covering };
        }
      }
      if (this.mcp[list].length) {
        claudeName ??= claudeToolName(def);
        if (!claudeName.startsWith("mcp__")) continue;
        for (const r of this.mcp[list]) {
          if (r.mcpName === undefined) continue;
          if (r.mcpWhole ? claudeName.startsWith(r.mcpName) : claudeName === r.mcpName) return { list, rule: r.text };
        }
      }
    }
    return null;
  }

  /**
   * A compound shell command none of whose allow rules covers alone may still be allowed part by part
   * (Claude Code checks each subcommand against the allow rules: `git log | head` with `Bash(git:*)` and
   * `Bash(head:*)`): every simple command must match some allow rule. The covering rules' texts, or null.
   */
  private coverShell(shellRules: readonly (CompiledRule & { spec: { kind: "shell" } })[], view: CallView): string | null {
    if (shellRules.length < 2) return null;
    const v = view.shellView();
    if (!v || !v.allowable || !v.commands) return null;
    const used: string[] = [];
    for (const c of v.commands) {
      const r = shellRules.find((x) => commandAllows(x.spec.pattern, c));
      if (!r) return null;
      if (!used.includes(r.text)) used.push(r.text);
    }
    return used.join(" + ");
  }

  /** Whether rule `r` from `list` applies to the call (allow: covers all of it; deny/ask: touches any part). */
  private applies(r: CompiledRule, list: RuleList, view: CallView): boolean {
    const strict = list === "allow";
    switch (r.spec.kind) {
      case "any":
        return true;
      case "shell": {
        const v = view.shellView();
        if (!v) return false;
        return strict ? shellAllows(r.spec.pattern, v) : shellHits(r.spec.pattern, v);
      }
      case "path": {
        const v = view.pathView();
        if (!v) return false;
        return strict ? pathAllows(r.spec.matcher, v) : pathHits(r.spec.matcher, v);
      }
      default:
        return r.spec satisfies never;
    }
  }
}

/** Options of {@link compileRules}: `home` (absolute) is what `~/` means; default the process's home. */
export interface CompileOptions {
  home?: string;
}

/**
 * Parses every rule. Never throws: returns the set of the rules that parsed and the ones that did not.
 */
export function parseRuleLists(lists: RuleLists, opts: CompileOptions = {}): { rules: Record<RuleList, ParsedRule[]>; bad: BadRule[] } {
  const home = opts.home ?? process.env.HOME ?? homedir();
  const rules: Record<RuleList, ParsedRule[]> = { allow: [], ask: [], deny: [] };
  const bad: BadRule[] = [];
  for (const list of ORDER) {
    for (const text of lists[list]) {
      const p = parseRule(text, { home });
      if (p.ok) rules[list].push(p.rule);
      else bad.push({ ...p.error, list });
    }
  }
  return { rules, bad };
}

/**
 * Compiles rule lists into a {@link RuleSet}.
 * @throws AirlockError `config_invalid` naming every malformed rule (`permissions.deny: "Bsh(x)": unknown tool "Bsh"`).
 */
export function compileRules(lists: RuleLists, opts: CompileOptions = {}): RuleSet {
  const { rules, bad } = parseRuleLists(lists, opts);
  if (bad.length) {
    const lines = bad.map((b) => `permissions.${b.list}: ${JSON.stringify(b.text)}: ${b.why}`);
    throw new AirlockError("config_invalid", `${lines.join("\n")}\n(fix the rule under permissions: in the config; docs/permissions.md)`, { issues: lines });
  }
  return new RuleSet(rules);
}

const cache = new WeakMap<object, RuleSet>();

/**
 * The compiled rules of a config's `permissions` block, compiled once per block object (effective
 * session configs share their base's block); the first call's `opts` decide (the runtime compiles
 * at start, so `~/` is the home of start-up).
 * @throws AirlockError `config_invalid` when a rule is malformed (the runtime checks them at start).
 */
export function ruleSetFor(permissions: RuleLists, opts: CompileOptions = {}): RuleSet {
  let rs = cache.get(permissions);
  if (!rs) cache.set(permissions, (rs = compileRules(permissions, opts)));
  return rs;
}
