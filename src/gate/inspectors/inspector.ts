/**
 * @module gate/inspectors/inspector
 * What every inspector is (after goose's `ToolInspector`): given one call, it returns its verdicts. The
 * gate runs its inspectors in a fixed order — security floor, hooks, mode (with per-tool config),
 * elevation — and combines the verdicts (gate/verdict.ts: deny > ask > allow). Each builds its own
 * input from the call (the hooks their Claude Code JSON), so the gate knows none of their details.
 */
import { z } from "zod";
import type { Config, SandboxPolicyName } from "../../config/schema.ts";
import { AirlockError } from "../../errors.ts";
import type { Session } from "../../session/types.ts";
import type { ToolDef } from "../../tool/tool.ts";
import type { Verdict } from "../verdict.ts";

/** One call as the inspectors see it. */
export interface InspectedCall {
  def: ToolDef;
  /** The arguments after the tool's schema parsed them. */
  args: unknown;
  /** The arguments as the model or script sent them (elevation fields included). */
  rawArgs: unknown;
  callId: string;
  session: Session;
  /** The session's effective config (run overrides folded in). */
  config: Readonly<Config>;
  /** The policy the call asks to run under: a valid elevation request's, else the session's. */
  policy: SandboxPolicyName;
  /** The turn's (and the script's) cancellation. */
  signal: AbortSignal;
}

/**
 * An inspector. `cost: "cheap"` ones are pure and synchronous and always run; `"process"` ones start
 * host processes (hooks) and are skipped when a cheap one already denies.
 */
export interface Inspector {
  readonly cost: "cheap" | "process";
  /** Its verdicts on the call, in order (a process inspector may return one per hook, or none). */
  inspect(call: InspectedCall): Verdict[] | Promise<Verdict[]>;
}

/**
 * An MCP tool judged by its name alone, without starting its server to list it (`permissions.tests`,
 * `airlock policy explain`): a tool that changes state, any arguments. It is judged, never run.
 */
export function unlistedToolStandIn(name: string): ToolDef {
  return {
    name,
    description: "",
    schema: z.unknown(),
    readOnly: false,
    execute: async () => {
      throw new AirlockError("internal", `${name} stands in for an MCP tool that was not listed: it is judged, never run`);
    },
  };
}

/**
 * A session row for judging a call outside any real session (`permissions.tests` at start, `airlock policy
 * explain`): the config's mode, sandbox, privacy and provider, in `workspace`; never stored.
 */
export function judgingSession(id: string, workspace: string, config: Readonly<Config>): Session {
  return {
    id,
    parent_session_id: null,
    workspace,
    mode: config.mode,
    sandbox: config.sandbox,
    privacy: config.privacy,
    headless: false,
    provider: config.provider.name,
    model: null,
    spawn_index: null,
    spawn_count: 0,
    title: null,
    created_at: "",
    updated_at: "",
  };
}
