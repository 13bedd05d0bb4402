/**
 * @module gate/explain
 * `airlock policy explain`: one call judged offline, step by step, as the gate would judge it — the
 * gate's own inspectors in the gate's order (security floor, rules, hooks, mode with per-tool config,
 * elevation), the gate's own early refusal by name (chat mode, a per-tool deny), and the gate's own
 * `combine`. Hooks run only when asked to (they start processes); otherwise the hooks that would run
 * are listed and left out of the decision. Nothing here starts a server or an MCP server.
 */
import type { Config } from "../config/schema.ts";
import { assertNever, type ErrorCode } from "../errors.ts";
import type { ToolDef } from "../tool/tool.ts";
import { requestedPolicy } from "./inspectors/elevation.ts";
import { matchingHooks } from "../hook/index.ts";
import { claudeToolName } from "./inspectors/hooks.ts";
import type { HookSource } from "../config/claude-settings.ts";
import { judgingSession, type InspectedCall, type Inspector } from "./inspectors/inspector.ts";
import { nameRefusal } from "./inspectors/mode.ts";
import { combine, headlessRefusal, type InspectorName, type Judgement, type Verdict } from "./verdict.ts";

/** The steps of an explanation, in the gate's order. `tool_config` is the per-tool permission (`tools.NAME.permission`). */
export type ExplainStepName = "security_floor" | "rules" | "hooks" | "mode" | "tool_config" | "elevation";

/**
 * What one step did: `judged` (its verdicts are in the decision), `none` (judged, and it had nothing to
 * say: no rule matches, no hook matches, no per-tool permission), `not_run` (hooks without `--run-hooks`;
 * every step after the gate's early refusal by name), `overridden` (the mode when a per-tool permission
 * decides instead, per-tool config in chat mode).
 */
export type ExplainStepStatus = "judged" | "none" | "not_run" | "overridden";

/** One step of an explanation. */
export interface ExplainStep {
  step: ExplainStepName;
  status: ExplainStepStatus;
  /** Its verdicts, as the gate's inspectors return them (empty unless `judged`). */
  verdicts: Verdict[];
  /** Why the status (for `none`, `not_run`, `overridden`). */
  note?: string;
  /**
   * Hooks step: the hooks whose matcher matches the call (run with `--run-hooks`, else only listed), each with where it
   * came from (config/claude-settings.ts `HookSource`: `config` airlock.yaml or a recipe, `user-settings`
   * `~/.claude/settings.json`, `project-settings` the workspace's `.claude/settings*.json`, run confined).
   */
  hooks?: { command: string; timeout: number; source: HookSource }[];
  /** Hooks step: the workspace's settings files whose hooks are not run because no trusted folder holds it (`airlock trust`); absent when none. */
  untrusted?: string[];
}

/** The whole explanation (`airlock policy explain --json` prints it as one object). */
export interface Explanation {
  tool: string;
  args: unknown;
  mode: Config["mode"];
  sandbox: Config["sandbox"];
  /** The policy the call asks to run under (a valid elevation request's, else `sandbox`). */
  policy: Config["sandbox"];
  /** The workspace the call is judged in (absolute, real path). */
  workspace: string;
  /** False for an MCP tool not resolvable offline: judged by name as a tool that changes state, its arguments unchecked. */
  schema_checked: boolean;
  /** Whether the hooks were run (`--run-hooks`). */
  hooks_run: boolean;
  steps: ExplainStep[];
  /** The gate's combined decision (without hooks unless `hooks_run`). */
  decision: Judgement["kind"];
  /** One sentence: the deny's reason, every remaining ask's reason, or why the call is allowed. */
  reason: string;
  /** The inspector that decided (the deny's, the primary ask's); absent on allow. */
  inspector?: InspectorName;
  /** The permission rule that decided, when one did. */
  rule?: string;
  /** A deny's error code, or what a headless session would refuse an ask with. */
  code?: ErrorCode;
  /** An ask: whether its allow needs the approver token (security floor, elevation). */
  user_proof?: boolean;
  /** An ask for elevation: the policy the call would run under once allowed. */
  elevate?: Config["sandbox"];
}

/** The gate's inspectors explain runs, by step. `hooks` is absent unless hooks are to be run for real. */
export interface ExplainInspectors {
  floor: Inspector;
  rules: Inspector;
  hooks?: Inspector;
  mode: Inspector;
  elevation: Inspector;
}

/** One call to explain. */
export interface ExplainCall {
  def: ToolDef;
  /** The arguments after the tool's schema parsed them (as given when `schemaChecked` is false). */
  args: unknown;
  /** The arguments as given (elevation fields included). */
  rawArgs: unknown;
  /** The effective config (overrides and imported rules folded in). */
  config: Readonly<Config>;
  /** Absolute real path. */
  workspace: string;
  schemaChecked: boolean;
  /** The workspace's Claude Code settings files whose hooks a session here would not run: the folder is not trusted (config/claude-settings.ts `treeSettingsHooks`). */
  untrustedHooks?: readonly string[];
  signal?: AbortSignal;
}

const EXPLAIN_SESSION = "policy-explain";

/**
 * Judges one call as the gate would and says what each step said.
 * @returns the explanation; never throws for a judgement (a hook that fails is its own ask verdict, as in the gate).
 * @throws AirlockError `internal` if an inspector throws (a bug).
 */
export async function explainCall(call: ExplainCall, insp: ExplainInspectors): Promise<Explanation> {
  const { def, config } = call;
  const session = judgingSession(EXPLAIN_SESSION, call.workspace, config);
  const policy = requestedPolicy(config.sandbox, call.rawArgs);
  const base = {
    tool: def.name,
    args: call.rawArgs,
    mode: config.mode,
    sandbox: config.sandbox,
    policy,
    workspace: call.workspace,
    schema_checked: call.schemaChecked,
    hooks_run: insp.hooks !== undefined,
  };
  const wouldRun = matchingHooks(config.hooks.PreToolUse, [claudeToolName(def), def.name]).map((h) => ({ command: h.command, timeout: h.timeout, source: h.source }));
  // a session here would not run the workspace's own hooks (whatever their matchers): said in the hooks step, with the fix
  const untrusted = call.untrustedHooks?.length ? { untrusted: [...call.untrustedHooks] } : {};
  const trustNote = untrusted.untrusted
    ? `the hooks of ${untrusted.untrusted.join(" and ")} are not run: ${call.workspace} is not a trusted folder (to run them: airlock trust ${call.workspace})`
    : undefined;
  const withTrust = (note?: string): { note?: string } => {
    const said = [note, trustNote].filter((x) => x !== undefined && x !== "").join("; ");
    return said ? { note: said } : {};
  };

  // the gate refuses by name before resolving the tool (chat mode, a per-tool deny): nothing else is judged
  const early = nameRefusal(def.name, config.mode, config.tools);
  if (early) {
    const notRun = "the gate refuses this call by its name first";
    const steps: ExplainStep[] = [
      { step: "security_floor", status: "not_run", verdicts: [], note: notRun },
      { step: "rules", status: "not_run", verdicts: [], note: notRun },
      { step: "hooks", status: "not_run", verdicts: [], ...withTrust(notRun), hooks: wouldRun, ...untrusted },
      early.inspector === "mode"
        ? { step: "mode", status: "judged", verdicts: [early] }
        : { step: "mode", status: "overridden", verdicts: [], note: `config.tools.${def.name}.permission decides instead of the mode` },
      early.inspector === "mode"
        ? { step: "tool_config", status: "overridden", verdicts: [], note: "chat mode refuses every call before any per-tool permission" }
        : { step: "tool_config", status: "judged", verdicts: [early] },
      { step: "elevation", status: "not_run", verdicts: [], note: notRun },
    ];
    return { ...base, steps, ...decisionOf({ kind: "deny", verdict: early }, []) };
  }

  const inspected: InspectedCall = {
    def,
    args: call.args,
    rawArgs: call.rawArgs,
    callId: "policy-explain-call",
    session,
    config,
    policy,
    signal: call.signal ?? new AbortController().signal,
  };
  // as the gate does: the cheap inspectors first; the process one (hooks) only when none of them denies
  const floor = await insp.floor.inspect(inspected);
  const rules = await insp.rules.inspect(inspected);
  const modeVs = await insp.mode.inspect(inspected);
  const elevation = await insp.elevation.inspect(inspected);
  const cheapDeny = [...floor, ...rules, ...modeVs, ...elevation].some((v) => v.kind === "deny");
  let hookStep: ExplainStep;
  let hookVs: Verdict[] = [];
  if (wouldRun.length === 0 && trustNote) {
    hookStep = { step: "hooks", status: "not_run", verdicts: [], hooks: [], ...withTrust(), ...untrusted };
  } else if (wouldRun.length === 0) {
    hookStep = { step: "hooks", status: "none", verdicts: [], hooks: [], note: "no PreToolUse hook matches this tool" };
  } else if (!insp.hooks) {
    hookStep = { step: "hooks", status: "not_run", verdicts: [], hooks: wouldRun, ...withTrust("pass --run-hooks to run them"), ...untrusted };
  } else if (cheapDeny) {
    hookStep = { step: "hooks", status: "not_run", verdicts: [], hooks: wouldRun, ...withTrust("another inspector already denies (the gate skips hooks then)"), ...untrusted };
  } else {
    hookVs = await insp.hooks.inspect(inspected);
    // what a hook asks besides its verdict is said, never left out: a rewrite is judged from the start by the
    // gate (explain that input with --args), a continue:false stops the turn
    const said = hookVs.flatMap((v) => [
      ...(v.effects?.rewrite ? [`hook ${JSON.stringify(v.hook)} rewrites the input to ${JSON.stringify(v.effects.rewrite)}: the gate judges that input from the start (explain it with --args)`] : []),
      ...(v.effects?.stop !== undefined ? [`hook ${JSON.stringify(v.hook)} stops the turn (continue: false): ${v.effects.stop}`] : []),
    ]);
    hookStep = { step: "hooks", status: "judged", verdicts: hookVs, hooks: wouldRun, ...withTrust(said.join("; ")), ...untrusted };
  }
  // the mode inspector says one thing: the per-tool permission when one is configured, else the mode's
  const configured = modeVs.some((v) => v.inspector === "tool_config");
  const steps: ExplainStep[] = [
    judged("security_floor", floor, "the floor has nothing to say"),
    judged("rules", rules, "no permission rule matches this call"),
    hookStep,
    configured
      ? { step: "mode", status: "overridden", verdicts: [], note: `config.tools.${def.name}.permission decides instead of the mode` }
      : judged("mode", modeVs, ""),
    configured ? judged("tool_config", modeVs, "") : { step: "tool_config", status: "none", verdicts: [], note: `no per-tool permission (tools.${def.name}.permission)` },
    judged("elevation", elevation, ""),
  ];
  // the verdicts in the gate's inspector order: floor, rules, hooks, mode, elevation
  const verdicts = [...floor, ...rules, ...hookVs, ...modeVs, ...elevation];
  return { ...base, steps, ...decisionOf(combine(verdicts), verdicts) };
}

function judged(step: ExplainStepName, verdicts: Verdict[], noneNote: string): ExplainStep {
  return verdicts.length ? { step, status: "judged", verdicts } : { step, status: "none", verdicts, note: noneNote };
}

/** The decision fields of an explanation from the gate's judgement. */
function decisionOf(j: Judgement, verdicts: Verdict[]): Pick<Explanation, "decision" | "reason" | "inspector" | "rule" | "code" | "user_proof" | "elevate"> {
  switch (j.kind) {
    case "deny": {
      const v = j.verdict;
      return { decision: "deny", reason: v.reason, inspector: v.inspector, code: v.code, ...(v.rule ? { rule: v.rule } : {}) };
    }
    case "ask": {
      const p = j.primary;
      const { code } = headlessRefusal(j);
      return {
        decision: "ask",
        reason: j.reason,
        inspector: p.inspector,
        code,
        user_proof: j.userProof,
        ...(p.rule ? { rule: p.rule } : {}),
        ...(j.elevate ? { elevate: j.elevate } : {}),
      };
    }
    case "allow": {
      const answer = verdicts.find((v) => v.kind === "allow" && v.answersMode === true);
      const asked = verdicts.some((v) => v.kind === "ask");
      if (answer && asked) {
        const by = answer.kind === "allow" && answer.rule ? `the permission rule ${answer.rule}` : `a ${answer.inspector}'s allow`;
        return { decision: "allow", reason: `${by} answers the mode's ask; no other inspector asks or denies`, ...(answer.kind === "allow" && answer.rule ? { rule: answer.rule } : {}) };
      }
      const rule = verdicts.find((v) => v.kind === "allow" && v.rule);
      return { decision: "allow", reason: "no inspector asks or denies", ...(rule?.kind === "allow" && rule.rule ? { rule: rule.rule } : {}) };
    }
    default:
      return assertNever(j, "judgement");
  }
}

/** The exit code of a decision for `airlock policy explain`: 0 allow, 1 deny, 2 ask. */
export function explainExitCode(decision: Judgement["kind"]): 0 | 1 | 2 {
  switch (decision) {
    case "allow":
      return 0;
    case "deny":
      return 1;
    case "ask":
      return 2;
    default:
      return assertNever(decision, "decision");
  }
}
