/**
 * @module cli/policy
 * `airlock policy explain`: how the gate would judge one call under a config, inspector by inspector,
 * and the combined decision — offline: no server, no MCP server, no model (the data dir's database is opened only to
 * read the trusted folders, with `hooks.import_claude_settings`). Exit 0 allow, 1 deny, 2 ask,
 * so CI can check a policy. A usage or config error prints the CLI's error line on stderr and NOTHING on
 * stdout (exit 2 for usage/config, like every command), so a script tells "ask" (a decision on stdout)
 * from an error (empty stdout).
 */
import { realpathSync, statSync } from "node:fs";
import { resolve } from "node:path";
import type { Config, Mode, SandboxPolicyName } from "../config/schema.ts";
import { AirlockError, assertNever } from "../errors.ts";
import type { HookSource } from "../config/claude-settings.ts";
import type { ExplainStep, Explanation } from "../gate/explain.ts";
import type { Verdict } from "../gate/verdict.ts";
import type { ScriptPool } from "../script/pool.ts";
import type { ToolSource } from "../tool/registry.ts";
import type { CommonOptions } from "./context.ts";

/** Options of `airlock policy explain` (enums already checked by main.ts). */
export interface PolicyExplainOptions extends CommonOptions {
  /** `--tool NAME`: airlock's tool name (`developer__shell`, `fs__read_file` for an MCP server `fs`). */
  tool: string;
  /** `--args JSON`: the call's arguments, a JSON object; default `{}`. */
  args?: string;
  /** `--mode`: overrides the config's mode. */
  mode?: Mode;
  /** `--sandbox`: overrides the config's sandbox policy. */
  sandbox?: SandboxPolicyName;
  /** `--workspace DIR`: the workspace the call is judged in, as `airlock run --workspace`'s (its trust, its `.claude` settings); default the cwd. */
  workspace?: string;
  /** `--run-hooks`: run the matching PreToolUse hooks for real (they start processes). */
  runHooks?: boolean;
  /** `--json`: one JSON object on stdout. */
  json?: boolean;
}

/** What explain never does: run a tool. The tool definitions it builds hold this instead of a script pool. */
function neverRuns(): never {
  throw new AirlockError("internal", "airlock policy explain judges calls; it never runs a tool");
}

/**
 * Explains one call (see the module doc) and prints it: text, or one JSON object with `--json`
 * (gate/explain.ts `Explanation`).
 * @returns the exit code: 0 allow, 1 deny, 2 ask.
 * @throws AirlockError `usage` (exit 2: `--args` not a JSON object, no such tool, arguments the tool's schema
 *   refuses, `--workspace` not a folder), `config_invalid` (exit 2: the config, a rule, a per-tool key, a Claude Code
 *   settings file that cannot be used, as in run), `data_dir_unusable`, `storage_unavailable` (the trusted folders
 *   cannot be read). Nothing is printed on stdout then.
 */
export async function policyExplain(opts: PolicyExplainOptions): Promise<number> {
  const { resolveContext } = await import("./context.ts");
  const { mergeConfig } = await import("../config/load.ts");
  const { checkRuleToolNames, rulesHome, withEffectivePermissions } = await import("../gate/rules/start.ts");
  const { checkToolPermissions } = await import("../runtime.ts");
  const { ToolRegistry } = await import("../tool/registry.ts");
  const { builtInTools } = await import("../tool/host-tools.ts");
  const { floorInspector, hooksInspector, modeInspector, elevationInspector, rulesInspector } = await import("../gate/inspectors/index.ts");
  const { explainCall, explainExitCode } = await import("../gate/explain.ts");
  const { unlistedToolStandIn } = await import("../gate/inspectors/inspector.ts");
  const { argumentIssues } = await import("../tool/tool.ts");
  const { writeJson, writeStderr, writeStdout } = await import("./output.ts");

  let rawArgs: unknown;
  try {
    rawArgs = JSON.parse(opts.args ?? "{}");
  } catch (e) {
    throw new AirlockError("usage", `--args: not JSON (${(e as Error).message}); pass the call's arguments as a JSON object, e.g. --args '{"command":"npm test"}'`);
  }
  if (typeof rawArgs !== "object" || rawArgs === null || Array.isArray(rawArgs)) throw new AirlockError("usage", "--args: expected a JSON object (the call's arguments)");
  const workspace = realFolder(resolve(opts.workspace ?? process.cwd()));

  const ctx = await resolveContext(opts);
  let config = ctx.config;
  if (opts.mode || opts.sandbox) config = mergeConfig(config, { ...(opts.mode ? { mode: opts.mode } : {}), ...(opts.sandbox ? { sandbox: opts.sandbox } : {}) }, "command line");
  config = withEffectivePermissions(config, { workspace, home: rulesHome(), log: (line) => writeStderr(`${line}\n`) });
  // the hooks a session of `airlock run` in this workspace imports, by the runtime's own import
  const imported = await importedHooks(config, ctx, workspace, rulesHome(), (line) => writeStderr(`${line}\n`));
  config = imported.config;

  // the tools as a runtime registers them; MCP servers as name prefixes only (listing would start them)
  const registry = new ToolRegistry();
  const pool = { run: neverRuns } as unknown as ScriptPool;
  const port = { createChild: neverRuns, startTurn: neverRuns, turnSignal: neverRuns, background: new Map(), getSession: neverRuns, listTurns: neverRuns };
  for (const t of builtInTools(pool, port)) registry.register(t);
  for (const name of Object.keys(config.mcp_servers)) registry.registerSource(offlineSource(name));
  checkToolPermissions(config, registry);
  checkRuleToolNames(config.permissions, registry);

  let def = registry.get(opts.tool);
  let args: unknown = rawArgs;
  let schemaChecked = true;
  if (!def) {
    if (!registry.hasSourceFor(opts.tool)) {
      throw new AirlockError("usage", `--tool: ${registry.checkToolName(opts.tool) ?? `there is no tool named ${JSON.stringify(opts.tool)}`}`);
    }
    def = unlistedToolStandIn(opts.tool);
    schemaChecked = false;
  } else {
    const parsed = def.schema.safeParse(rawArgs);
    if (!parsed.success) {
      throw new AirlockError("usage", `--args: the gate would refuse these arguments for ${def.name} (invalid_arguments): ${argumentIssues(parsed.error)}`);
    }
    args = parsed.data;
  }

  const dataDir = realpathSync(ctx.dataDir);
  const explanation = await explainCall(
    { def, args, rawArgs, config, workspace, schemaChecked, untrustedHooks: imported.untrusted },
    {
      floor: floorInspector({ dataDir }),
      rules: rulesInspector,
      mode: modeInspector,
      elevation: elevationInspector,
      ...(opts.runHooks
        ? { hooks: hooksInspector({ store: { parentOf: (id) => (id === "policy-explain" ? null : undefined) }, dataDir, hookEnv: { AIRLOCK_CONFIG_DIR: ctx.configDir } }) }
        : {}),
    },
  );
  if (opts.json) writeJson(explanation);
  else writeStdout(explainText(explanation));
  return explainExitCode(explanation.decision);
}

/**
 * `config` with the hooks a session of `airlock run` in `workspace` imports from Claude Code's settings files
 * (`hooks.import_claude_settings`), by the runtime's own import (config/claude-settings.ts `treeSettingsHooks`,
 * session/config.ts `withImportedHooks`): the user's `~/.claude/settings.json` hooks, and the workspace's own
 * `.claude/settings*.json` hooks when a trusted folder (`airlock trust`, the data dir's database) holds it.
 * What run logs at start is logged (`airlock: WARNING: …`), except the untrusted files' notes: the hooks step says those.
 * @returns the config, and the workspace files whose hooks are not run (the folder not trusted; empty otherwise).
 * @throws AirlockError `config_invalid` (a settings file that cannot be used, as in run), the store's errors
 *   (`data_dir_unusable`, `storage_unavailable`) when the trusted folders cannot be read.
 */
async function importedHooks(
  config: Readonly<Config>,
  ctx: { config: { storage?: string }; dataDir: string },
  workspace: string,
  home: string,
  log: (line: string) => void,
): Promise<{ config: Readonly<Config>; untrusted: string[] }> {
  if (!config.hooks.import_claude_settings) return { config, untrusted: [] };
  const { treeSettingsHooks, userSettingsHooks } = await import("../config/claude-settings.ts");
  const { withImportedHooks } = await import("../session/config.ts");
  const { openStore } = await import("../store/open.ts");
  const { TrustStore } = await import("../store/trust.ts");
  const user = userSettingsHooks(home);
  for (const w of user.warnings) log(`airlock: WARNING: ${w}`);
  const store = await openStore(ctx.config, ctx.dataDir);
  let trusted: boolean;
  try {
    trusted = (await new TrustStore(store).trustedFolderOf(workspace)) !== null;
  } finally {
    await store.close();
  }
  const got = treeSettingsHooks(user, home, workspace, trusted);
  if (trusted) for (const n of got.notes) log(`airlock: WARNING: ${n}`);
  return { config: withImportedHooks(config, got.groups), untrusted: got.untrusted };
}

/** `dir` as a real path. @throws AirlockError `usage` when it is not an existing folder. */
function realFolder(dir: string): string {
  try {
    if (statSync(dir).isDirectory()) return realpathSync(dir);
  } catch {
    // fall through
  }
  throw new AirlockError("usage", `--workspace: ${dir} is not an existing folder`);
}

/** An MCP server as a name prefix: explain never lists it (that would start it). */
function offlineSource(name: string): ToolSource {
  return { prefix: `${name}__`, list: () => Promise.reject(new AirlockError("internal", "airlock policy explain does not start MCP servers")) };
}

const STEP_LABEL: Record<ExplainStep["step"], string> = {
  security_floor: "security floor",
  rules: "rules",
  hooks: "hooks",
  mode: "mode",
  tool_config: "per-tool config",
  elevation: "elevation",
};

/** ` code` after the word "deny": the code when it says more than `denied` (which would say "deny" twice), else nothing. */
function codeAfterDeny(code: string | undefined): string {
  return code && code !== "denied" ? ` ${code}` : "";
}

/** One verdict as a line's text: `allow`, `ask — reason (rule X)`, `deny — reason`, `deny code — reason` (a code other than `denied`). */
function verdictText(v: Verdict): string {
  const by = [v.rule ? `rule ${v.rule}` : "", "hook" in v && v.hook ? `hook ${v.hook}` : ""].filter(Boolean).join(", ");
  switch (v.kind) {
    case "allow":
      return `allow${by ? ` (${by})` : ""}${v.answersMode ? ", answers the mode's ask" : ""}`;
    case "ask":
      return `ask${v.userProof ? " (needs the approver token)" : ""} — ${v.reason}${by ? ` [${by}]` : ""}`;
    case "deny":
      return `deny${codeAfterDeny(v.code)} — ${v.reason}${by ? ` [${by}]` : ""}`;
    default:
      return assertNever(v, "verdict");
  }
}

/** Where a listed hook came from, after its timeout: nothing for the config's own, else the settings file and how it runs. */
function sourceText(source: HookSource): string {
  switch (source) {
    case "config":
      return "";
    case "user-settings":
      return ", from ~/.claude/settings.json";
    case "project-settings":
      return ", from the workspace's .claude settings, confined to the sandbox policy";
    default:
      return assertNever(source, "hook source");
  }
}

/** The text form: the call, then one line per step (more for several verdicts), then the decision. */
export function explainText(e: Explanation): string {
  const out: string[] = [];
  out.push(`call: ${e.tool} ${JSON.stringify(e.args)}`);
  out.push(`mode ${e.mode}, sandbox ${e.sandbox}${e.policy !== e.sandbox ? ` (this call asks for ${e.policy})` : ""}, workspace ${e.workspace}`);
  if (!e.schema_checked) out.push(`note: ${e.tool} is an MCP tool; explain does not start its server, so its arguments were not checked against its schema and it is judged as a tool that changes state`);
  e.steps.forEach((s, i) => {
    const head = `${i + 1}. ${STEP_LABEL[s.step]}: `;
    if (s.status === "judged") {
      if (s.verdicts.length === 1) out.push(head + verdictText(s.verdicts[0]!));
      else {
        out.push(`${head}${s.verdicts.length} verdicts`);
        for (const v of s.verdicts) out.push(`     ${verdictText(v)}`);
      }
    } else {
      out.push(`${head}${s.status.replace("_", " ")}${s.note ? ` — ${s.note}` : ""}`);
    }
    if (s.step === "hooks" && s.hooks?.length && s.status !== "judged") for (const h of s.hooks) out.push(`     would run: ${h.command} (timeout ${h.timeout} s${sourceText(h.source)})`);
  });
  const by = [e.inspector && !e.reason.startsWith("[") ? `[${e.inspector}]` : "", e.rule ? `rule ${e.rule}` : "", e.decision === "deny" ? codeAfterDeny(e.code).trim() : ""].filter(Boolean).join(" ");
  out.push(`decision: ${e.decision}${by ? ` ${by}` : ""} — ${e.reason}`);
  if (e.decision === "ask") out.push(`(a headless session refuses it: ${e.code})`);
  if (!e.hooks_run && e.steps.some((s) => s.step === "hooks" && s.hooks?.length)) out.push("(the decision leaves the hooks out: with them the gate's may be stricter, or a hook's allow may answer the mode's ask)");
  return `${out.join("\n")}\n`;
}
