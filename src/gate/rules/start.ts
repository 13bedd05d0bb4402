/**
 * @module gate/rules/start
 * What happens to permission rules at start: `import_claude_settings` reads the `permissions` block of
 * Claude Code's settings files and merges it in; every rule is checked (malformed or naming no tool:
 * `config_invalid`, with a "did you mean" when a name is close); the `permissions.tests` cases are
 * judged through the real inspectors (hooks excepted) against the config's mode, and a failing case
 * stops start-up.
 */
import { homedir } from "node:os";
import { z } from "zod";
import { claudeSettingsFiles, readSettingsFile, type ClaudeSettingsFile } from "../../config/claude-settings.ts";
import type { Config, Permissions } from "../../config/schema.ts";
import { AirlockError, assertNever } from "../../errors.ts";
import type { ToolRegistry } from "../../tool/registry.ts";
import { argumentIssues } from "../../tool/tool.ts";
import { judgingSession, unlistedToolStandIn, type Inspector } from "../inspectors/inspector.ts";
import { combine, type Verdict } from "../verdict.ts";
import { CLAUDE_RULE_NAMES, parseRuleLists, resolveSettingsRelative, ruleSetFor, type RuleList, type RuleLists } from "./index.ts";

export { claudeSettingsFiles, type ClaudeSettingsFile } from "../../config/claude-settings.ts";

/** The keys of a settings file's `permissions` block airlock applies. */
const APPLIED = ["allow", "ask", "deny"] as const;

const RuleArray = z.array(z.string());

/** What {@link importClaudeSettings} found. */
export interface ImportedSettings {
  lists: RuleLists;
  /** `file: key` for every key read and not applied (`hooks`, `permissions.defaultMode` …). */
  ignored: string[];
  /** Rules skipped because airlock has no such tool or form (`WebFetch(domain:x)`, `Write(path)`), or no such MCP server. */
  skipped: string[];
  /** The files that existed and were read. */
  read: string[];
}

/**
 * Reads the `permissions.allow / ask / deny` of Claude Code's settings files (missing files are
 * skipped; config/claude-settings.ts `readSettingsFile`, the one reader); `/path` rules are made absolute
 * against each file's base. Every other key is listed in `ignored`, `hooks` too unless `opts.hooks`
 * (`hooks.import_claude_settings` reads them: config/claude-settings.ts `importSettingsHooks`).
 * Rules for tools airlock lacks are left for {@link checkPermissionRules} to skip.
 * @throws AirlockError `config_invalid` when a file exists but is not a JSON object, or a rule list is not an array of strings.
 */
export function importClaudeSettings(files: ClaudeSettingsFile[], opts: { hooks?: boolean } = {}): ImportedSettings {
  const out: ImportedSettings = { lists: { allow: [], ask: [], deny: [] }, ignored: [], skipped: [], read: [] };
  const lists = out.lists as Record<RuleList, string[]>;
  for (const { file, base, scope } of files) {
    const json = readSettingsFile(file, "permissions.import_claude_settings");
    if (!json) continue;
    out.read.push(file);
    for (const key of Object.keys(json)) if (key !== "permissions" && !(opts.hooks && (key === "hooks" || key === "disableAllHooks"))) out.ignored.push(`${file}: ${key}`);
    const perms = (json as Record<string, unknown>).permissions;
    if (perms === undefined) continue;
    if (typeof perms !== "object" || perms === null || Array.isArray(perms)) throw new AirlockError("config_invalid", `${file}: permissions is not an object`);
    for (const [key, value] of Object.entries(perms)) {
      const list = APPLIED.find((k) => k === key);
      if (!list) {
        out.ignored.push(`${file}: permissions.${key}`);
        continue;
      }
      const rules = RuleArray.safeParse(value);
      if (!rules.success) throw new AirlockError("config_invalid", `${file}: permissions.${key} is not a list of rule strings`);
      if (list === "allow" && scope === "project") {
        // the workspace is the model's to write: a project file may tighten (ask, deny), never loosen
        for (const r of rules.data) out.skipped.push(`${file}: permissions.allow ${JSON.stringify(r)} (a project file's allow rules are not imported: the model can write the workspace; put them in airlock.yaml)`);
        continue;
      }
      for (const r of rules.data) lists[list].push(resolveSettingsRelative(r, base));
    }
  }
  return out;
}

/** A problem with one rule, as a `config_invalid` line. */
function ruleLine(list: RuleList, text: string, why: string): string {
  return `permissions.${list}: ${JSON.stringify(text)}: ${why}`;
}

/**
 * The effective permissions: the config's rules, then the imported ones. Checks every rule's syntax,
 * and that an `mcp__server…` rule names a configured server (tool names of airlock's form are checked
 * against the registry by {@link checkRuleToolNames} once tools are registered).
 * @param imported rules read from Claude Code's settings: those naming a tool airlock lacks, a form it
 *   does not apply or an MCP server not configured are dropped (returned in `skipped`) instead of refused
 * @throws AirlockError `config_invalid`, one line per bad rule, with a "did you mean" where a tool name is close.
 */
export function effectivePermissions(config: Readonly<Config>, imported?: RuleLists): { permissions: Permissions; skipped: string[] } {
  const problems: string[] = [];
  const skipped: string[] = [];
  const servers = Object.keys(config.mcp_servers);
  const kept = (lists: RuleLists, fromImport: boolean): RuleLists => {
    const { rules, bad } = parseRuleLists(lists);
    const keep: Record<RuleList, string[]> = { allow: [], ask: [], deny: [] };
    for (const b of bad) {
      if (fromImport && b.unsupported) {
        skipped.push(`${b.text} (${b.why})`);
        continue;
      }
      let why = b.why;
      if (b.unknownTool) {
        const near = closestName(b.unknownTool, CLAUDE_RULE_NAMES);
        why += near ? `; did you mean ${near}?` : "; rules name Claude Code's tools (Bash, Read, Edit, Write, mcp__server…) or airlock's (developer__shell …)";
      }
      problems.push(ruleLine(b.list, b.text, `${why}${fromImport ? " (imported from Claude Code settings)" : ""}`));
    }
    for (const list of ["allow", "ask", "deny"] as const) {
      for (const r of rules[list]) {
        if (r.tools.kind === "mcp" && !servers.includes(r.tools.server)) {
          const why = `no MCP server named "${r.tools.server}" under mcp_servers (configured: ${servers.length ? servers.join(", ") : "none"})`;
          if (fromImport) skipped.push(`${r.text} (${why})`);
          else problems.push(ruleLine(list, r.text, why));
          continue;
        }
        keep[list].push(r.text);
      }
    }
    return keep;
  };
  const own = kept(config.permissions, false);
  const extra = imported ? kept(imported, true) : { allow: [], ask: [], deny: [] };
  if (problems.length) {
    throw new AirlockError("config_invalid", `${problems.join("\n")}\n(fix the rule in the config, or in the Claude Code settings file it came from; docs/permissions.md)`, { issues: problems });
  }
  return {
    permissions: { ...config.permissions, allow: [...own.allow, ...extra.allow], ask: [...own.ask, ...extra.ask], deny: [...own.deny, ...extra.deny] },
    skipped,
  };
}

/**
 * Checks that every rule naming an airlock tool (`developer__shel(x)`, `fs__read`) names a registered
 * tool or falls under a configured MCP server.
 * @throws AirlockError `config_invalid`, one line per bad rule, with the registry's "did you mean".
 */
export function checkRuleToolNames(permissions: RuleLists, registry: Pick<ToolRegistry, "checkToolName">): void {
  const { rules } = parseRuleLists(permissions);
  const problems: string[] = [];
  for (const list of ["allow", "ask", "deny"] as const) {
    for (const r of rules[list]) {
      if (r.tools.kind !== "names") continue;
      let why: string | undefined;
      for (const n of r.tools.names) why ??= registry.checkToolName(n);
      if (why) problems.push(ruleLine(list, r.text, why));
    }
  }
  if (problems.length) {
    throw new AirlockError("config_invalid", `${problems.join("\n")}\n(fix the rule under permissions: in the config; docs/permissions.md)`, { issues: problems });
  }
}

/** The closest of `names` to `name` (case-insensitive edit distance ≤ 2), if any. */
function closestName(name: string, names: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestD = 3;
  for (const n of names) {
    const d = distance(name.toLowerCase(), n.toLowerCase());
    if (d < bestD) [best, bestD] = [n, d];
  }
  return best;
}

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return row[b.length]!;
}

/** What a `permissions.tests` run needs. */
export interface PermissionTestDeps {
  registry: Pick<ToolRegistry, "get" | "hasSourceFor">;
  /** The inspectors to judge through (the default ones minus hooks: gate/inspectors `testInspectors`). */
  inspectors: Inspector[];
  /** The workspace the cases are judged in (absolute). */
  workspace: string;
}

/** A stand-in for an MCP tool not yet listed: judged as a tool that changes state. */
/**
 * Runs every `permissions.tests` case against `config` (its mode, sandbox and rules): the call is
 * judged by `deps.inspectors` (synchronous ones only) and their combined decision must equal `expect`.
 * An MCP tool not listed yet is judged as a tool that changes state.
 * @throws AirlockError `config_invalid` listing every failing case (`permissions.tests[2]: developer__shell {"command":"ls"}: expected allow, got ask ([mode] …)`).
 */
export function runPermissionTests(config: Readonly<Config>, deps: PermissionTestDeps): void {
  const failures: string[] = [];
  const session = judgingSession("permissions-test", deps.workspace, config);
  config.permissions.tests.forEach((t, i) => {
    const label = `permissions.tests[${i}]: ${t.call.tool} ${JSON.stringify(t.call.args)}`;
    const def = deps.registry.get(t.call.tool) ?? (deps.registry.hasSourceFor(t.call.tool) ? unlistedToolStandIn(t.call.tool) : undefined);
    if (!def) return void failures.push(`${label}: there is no tool named ${t.call.tool}`);
    const parsed = def.schema.safeParse(t.call.args);
    if (!parsed.success) return void failures.push(`${label}: invalid arguments (${argumentIssues(parsed.error)})`);
    const verdicts: Verdict[] = [];
    for (const insp of deps.inspectors) {
      const vs = insp.inspect({
        def,
        args: parsed.data,
        rawArgs: t.call.args,
        callId: `permissions-test-${i}`,
        session,
        config,
        policy: config.sandbox,
        signal: new AbortController().signal,
      });
      if (!Array.isArray(vs)) throw new AirlockError("internal", "a permissions test ran an inspector that is not synchronous");
      verdicts.push(...vs);
    }
    const j = combine(verdicts);
    if (j.kind === t.expect) return;
    let why: string;
    switch (j.kind) {
      case "allow":
        why = "allowed";
        break;
      case "ask":
        why = j.asks.map((a) => `[${a.inspector}] ${a.reason}`).join("; ");
        break;
      case "deny":
        why = `[${j.verdict.inspector}] ${j.verdict.reason}`;
        break;
      default:
        return assertNever(j, "judgement");
    }
    failures.push(`${label}: expected ${t.expect}, got ${j.kind} (${why})`);
  });
  if (failures.length) {
    throw new AirlockError("config_invalid", `${failures.length} permissions test case(s) failed:\n${failures.join("\n")}\n(fix the rules or the expected decision under permissions.tests)`, { issues: failures });
  }
}

/** The home folder rules and settings use: `$HOME`, else the account's. */
export function rulesHome(): string {
  return process.env.HOME || homedir();
}

/**
 * The config with its effective permissions (see {@link effectivePermissions}): with
 * `import_claude_settings`, the rules of Claude Code's settings files are appended, and what was not
 * applied (other keys, skipped rules) is said in ONE log line.
 * @param opts `workspace` and `home` (absolute) locate the settings files; `log` takes that one line
 * @returns `config` itself when nothing changed, else a frozen copy with `permissions` replaced
 * @throws AirlockError `config_invalid` (malformed rule, unreadable settings file).
 */
export function withEffectivePermissions(config: Readonly<Config>, opts: { workspace: string; home: string; log: (line: string) => void }): Readonly<Config> {
  const p = config.permissions;
  if (!p.import_claude_settings) {
    if (p.allow.length + p.ask.length + p.deny.length) {
      effectivePermissions(config);
      // compiled now, so `~/` means the home of start-up
      ruleSetFor(p, { home: opts.home });
    }
    return config;
  }
  const imported = importClaudeSettings(claudeSettingsFiles(opts.home, opts.workspace), { hooks: config.hooks.import_claude_settings });
  const { permissions, skipped } = effectivePermissions(config, imported.lists);
  const n = imported.lists.allow.length + imported.lists.ask.length + imported.lists.deny.length - skipped.length;
  const notes = [...imported.ignored.map((k) => `${k} (not read)`), ...imported.skipped, ...skipped.map((r) => `rule ${r}`)];
  opts.log(
    `airlock: imported ${n} permission rule(s) from ${imported.read.length ? imported.read.join(", ") : "no Claude Code settings file (none found)"}` +
      (notes.length ? `; ignored: ${notes.join("; ")}` : ""),
  );
  ruleSetFor(permissions, { home: opts.home });
  return Object.freeze({ ...config, permissions });
}
