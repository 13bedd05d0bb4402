/**
 * @module session/config
 * A session's effective config: the base config, the run overrides of its root (a recipe's hooks,
 * mode, provider; `airlock run` flags) and its own mode and sandbox.
 */
import { mergeConfig, type ConfigOverrides } from "../config/load.ts";
import type { Config } from "../config/schema.ts";
import { rootOf, type ParentLookup } from "./graph.ts";
import type { Session } from "./types.ts";

/** The run overrides of each root session in this process, and the configs they make. */
export class SessionConfigs {
  private readonly overrides = new Map<string, Readonly<Config>>();

  constructor(
    private readonly store: ParentLookup,
    readonly base: Readonly<Config>,
  ) {}

  /**
   * The session's effective config (frozen). No fallback when the graph cannot be read: the root's run
   * overrides (a recipe's hooks) ADD guards, so judging without them would loosen.
   * @throws AirlockError `session_graph_invalid` / `session_not_found` when its root cannot be found (the gate then refuses the call).
   */
  configFor(session: Session): Readonly<Config> {
    const root = session.parent_session_id ? rootOf(this.store, session.id) : session.id;
    const base = this.overrides.get(root) ?? this.base;
    if (base.mode === session.mode && base.sandbox === session.sandbox) return base;
    return Object.freeze({ ...base, mode: session.mode, sandbox: session.sandbox });
  }

  /** Applies `overrides` to the tree of `rootSessionId`. @throws AirlockError `config_invalid` (bad overrides). */
  set(rootSessionId: string, overrides: ConfigOverrides): void {
    this.overrides.set(rootSessionId, mergeConfig(this.base, overrides, `run overrides of ${rootSessionId}`));
  }

  clear(rootSessionId: string): void {
    this.overrides.delete(rootSessionId);
  }
}
