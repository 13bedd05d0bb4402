/**
 * @module gate/inspectors
 * The five inspectors as the gate runs them, in order: the security floor, permission rules, PreToolUse
 * hooks, the mode (with per-tool config), elevation. Each adapts its module's pure function to {@link Inspector}.
 */
import { sanitizedEnv } from "../../launcher/env.ts";
import { ancestors, type ParentLookup } from "../../session/graph.ts";
import { elevationVerdict } from "./elevation.ts";
import { judgementPaths } from "./floor-paths.ts";
import { matchingHooks, type HookCommonInput } from "../../hook/index.ts";
import { commonHookInput, hookContextFor } from "../../hook/session.ts";
import { claudeToolInput, claudeToolName, rewriteMapper, runPreToolUseHooks, type PreToolUseInput } from "./hooks.ts";
import type { Inspector } from "./inspector.ts";
import { modeVerdict } from "./mode.ts";
import { rulesInspector, treeRulesInspector } from "./rules.ts";
import type { SessionRuleSets } from "../rules/session.ts";
import { securityFloor } from "./security-floor.ts";

export type { InspectedCall, Inspector } from "./inspector.ts";
export { rulesInspector } from "./rules.ts";

/** What the default inspectors need from the runtime. */
export interface InspectorDeps {
  /** Session rows, for a hook's `ancestors` field. */
  store: ParentLookup;
  /** airlock's data dir (real path): the floor refuses file tools there; hooks see its secrets empty. */
  dataDir?: string;
  /** Extra environment for hook processes (e.g. `AIRLOCK_CONFIG_DIR`); `CLAUDE_PROJECT_DIR` and `AIRLOCK_PROJECT_DIR` are always the session workspace. */
  hookEnv?: Record<string, string>;
  /** The JSONL transcript of a session, for a hook input's `transcript_path`. */
  transcriptPath?: (sessionId: string) => string | Promise<string>;
  /** The session rules of each tree ("Allow for this session"); none consulted when absent. */
  sessionRules?: SessionRuleSets;
}

/** The security floor (gate/inspectors/security-floor.ts), judging the call under the policy it asks for. */
export function floorInspector(deps: Pick<InspectorDeps, "dataDir">): Inspector {
  // HOME and PATH of the sanitized environment, as the floor resolves `~` and executables (read once:
  // the process environment does not change under us)
  const env = sanitizedEnv();
  const floorEnv = { ...(env.HOME ? { home: env.HOME } : {}), PATH: env.PATH ?? "", ...(deps.dataDir ? { dataDir: deps.dataDir } : {}) };
  return {
    cost: "cheap",
    inspect: (c) => [securityFloor(c.def, c.args, { workspace: c.session.workspace, policy: c.policy, ...floorEnv, paths: judgementPaths(c) })],
  };
}

/** PreToolUse hooks (gate/inspectors/hooks.ts): builds Claude Code's hook input and runs every matching hook. */
export function hooksInspector(deps: InspectorDeps): Inspector {
  return {
    cost: "process",
    async inspect(c) {
      const matchers = c.config.hooks.PreToolUse;
      if (matchers.length === 0) return [];
      const site = { store: deps.store, ...(deps.dataDir ? { dataDir: deps.dataDir } : {}), ...(deps.hookEnv ? { env: deps.hookEnv } : {}), ...(deps.transcriptPath ? { transcriptPath: deps.transcriptPath } : {}) };
      let common: HookCommonInput;
      try {
        common = await commonHookInput(c.session, c.config, site);
      } catch (e) {
        const reason = `the hook input could not be built (the session's transcript or chain), so the hooks were not run: ${(e as Error).message}`;
        return matchingHooks(matchers, [claudeToolName(c.def), c.def.name]).map((h) => ({ kind: "ask" as const, inspector: "hook" as const, userProof: false, code: "hook_error" as const, reason, hook: h.command }));
      }
      const toolInput = claudeToolInput(c.def, c.args, c.session.workspace);
      const input: PreToolUseInput = {
        hook_event_name: "PreToolUse",
        ...common,
        tool_name: claudeToolName(c.def),
        tool_input: toolInput,
        tool_use_id: c.callId,
        airlock_tool_name: c.def.name,
      };
      const where = hookContextFor(c.session, c.config, site, c.signal);
      return runPreToolUseHooks(matchers, input, where.workspace, where.signal, where.env, where.launch, rewriteMapper(c.def, toolInput, c.rawArgs, c.session.workspace));
    },
  };
}

/** The mode and per-tool permissions (gate/inspectors/mode.ts). */
export const modeInspector: Inspector = {
  cost: "cheap",
  inspect: (c) => [modeVerdict(c.def, c.args, c.config.mode, c.config.tools)],
};

/** A per-call elevation request (gate/inspectors/elevation.ts), on the arguments as sent. */
export const elevationInspector: Inspector = {
  cost: "cheap",
  inspect: (c) => [elevationVerdict(c.config.sandbox, c.rawArgs)],
};

/** The inspectors in the order their verdicts combine: floor, rules (the config's, with the session tree's when given), hooks, mode, elevation. */
export function defaultInspectors(deps: InspectorDeps): Inspector[] {
  const rules = deps.sessionRules ? treeRulesInspector(deps.sessionRules) : rulesInspector;
  return [floorInspector(deps), rules, hooksInspector(deps), modeInspector, elevationInspector];
}

/**
 * The inspectors `permissions.tests` cases run through at start: the default ones minus hooks (they
 * start processes; a test case judges the config, not a hook's answer).
 */
export function testInspectors(deps: Pick<InspectorDeps, "dataDir">): Inspector[] {
  return [floorInspector(deps), rulesInspector, modeInspector, elevationInspector];
}
