/**
 * @module session/config
 * A session's effective config: the base config, the run overrides of its root (a recipe's hooks,
 * mode, provider; `airlock run` flags), the hooks its tree imports from Claude Code's settings files
 * (appended after the config's own, per event) and its own mode and sandbox.
 */
import { mergeConfig, type ConfigOverrides } from "../config/load.ts";
import { HOOK_EVENTS, type Config, type HookEvent, type HookMatcher } from "../config/schema.ts";
import { knownRootOf, rootOf, type KnownParentLookup, type ParentLookup } from "./graph.ts";
import type { Session } from "./types.ts";

/** The hooks a session tree imports (Claude Code's settings files) and what to tell the person about them. */
export interface ImportedHooks {
  groups: Record<HookEvent, HookMatcher[]>;
  /** Lines for the person: hooks not run (an untrusted folder, an event airlock does not fire …). */
  notes: string[];
}

/**
 * Imports the hooks of the tree rooted at `rootId`, whose config (base + run overrides) is `config`.
 * @throws AirlockError `config_invalid` (a settings file that cannot be used), `session_not_found`.
 */
export type HookImporter = (rootId: string, config: Readonly<Config>) => ImportedHooks;

/**
 * `config` with `groups` (the hooks a tree imports) appended after its own, per event: the config a session of that
 * tree is judged under. `config` itself when `groups` holds no hook; else a new frozen config.
 */
export function withImportedHooks(config: Readonly<Config>, groups: Readonly<Record<HookEvent, HookMatcher[]>>): Readonly<Config> {
  const hooks = { ...config.hooks } as Record<string, unknown>;
  let added = 0;
  for (const e of HOOK_EVENTS) {
    added += groups[e].length;
    hooks[e] = [...config.hooks[e], ...groups[e]];
  }
  return added ? Object.freeze({ ...config, hooks: hooks as Config["hooks"] }) : config;
}

/** The run overrides of each root session in this process, and the configs they make. */
export class SessionConfigs {
  private readonly overrides = new Map<string, Readonly<Config>>();
  /** Per root: its config with the imported hooks appended, and the notes of that import (memo; dropped when its overrides change). */
  private readonly imported = new Map<string, { config: Readonly<Config>; notes: string[] }>();

  /** @param importHooks the tree's hooks from Claude Code's settings files (`hooks.import_claude_settings`); none when absent. */
  constructor(
    private readonly store: ParentLookup & KnownParentLookup,
    readonly base: Readonly<Config>,
    private readonly importHooks?: HookImporter,
  ) {}

  /**
   * The session's effective config (frozen). No fallback when the graph cannot be read: the root's run
   * overrides (a recipe's hooks) ADD guards, so judging without them would loosen.
   * @throws AirlockError `session_graph_invalid` / `session_not_found` when its root cannot be found (the gate then refuses the call),
   *   or when the session's chain was not read in this process yet (see {@link learn}).
   */
  configFor(session: Session): Readonly<Config> {
    const root = session.parent_session_id ? knownRootOf(this.store, session.id) : session.id;
    const base = this.withImported(root).config;
    if (base.mode === session.mode && base.sandbox === session.sandbox) return base;
    return Object.freeze({ ...base, mode: session.mode, sandbox: session.sandbox });
  }

  /**
   * Whether the session's effective config may hold hooks for `event`, answered from memory (no query, no settings file
   * read): false only when its root is known in this process and neither the root's config (base + run overrides) nor
   * the hooks its tree imported (once imported) has one; true when it has, or when that cannot be told so (the chain
   * not read in this process, an import not made yet): then read the session and ask {@link configFor}. Never throws.
   */
  mayHaveHooks(sessionId: string, event: HookEvent): boolean {
    let root: string;
    try {
      root = knownRootOf(this.store, sessionId);
    } catch {
      return true;
    }
    const imported = this.imported.get(root);
    const config = imported?.config ?? this.overrides.get(root) ?? this.base;
    if (config.hooks[event].length > 0) return true;
    // an import not made yet could add some (withImported makes it: it reads files, so not here)
    return imported === undefined && this.importHooks !== undefined && config.hooks.import_claude_settings;
  }

  /**
   * Reads the session's parent chain into memory (once per session), so {@link configFor} answers without a query.
   * @throws AirlockError `session_not_found`, `session_graph_invalid`.
   */
  async learn(sessionId: string): Promise<void> {
    await rootOf(this.store, sessionId);
  }

  /**
   * What the person should know about the hooks the tree of root `rootSessionId` imports (hooks of an
   * untrusted folder not run, events and fields not honoured). Never throws: a settings file that cannot be
   * used is a note too (and every call of the tree is refused until it is fixed: {@link configFor} throws).
   */
  hookNotes(rootSessionId: string): string[] {
    try {
      return this.withImported(rootSessionId).notes;
    } catch (e) {
      return [`${(e as Error).message} (every tool call of this session is refused until it is fixed)`];
    }
  }

  /** Applies `overrides` to the tree of `rootSessionId`. @throws AirlockError `config_invalid` (bad overrides). */
  set(rootSessionId: string, overrides: ConfigOverrides): void {
    this.overrides.set(rootSessionId, mergeConfig(this.base, overrides, `run overrides of ${rootSessionId}`));
    this.imported.delete(rootSessionId);
  }

  clear(rootSessionId: string): void {
    this.overrides.delete(rootSessionId);
    this.imported.delete(rootSessionId);
  }

  /**
   * The root's config (base + run overrides) with its imported hooks appended per event, once per root
   * (a snapshot, as Claude Code takes its hooks once at start). A failed import is not kept: it is tried again.
   */
  private withImported(root: string): { config: Readonly<Config>; notes: string[] } {
    const have = this.imported.get(root);
    if (have) return have;
    const config = this.overrides.get(root) ?? this.base;
    if (!this.importHooks || !config.hooks.import_claude_settings) return { config, notes: [] };
    const got = this.importHooks(root, config);
    const entry = { config: withImportedHooks(config, got.groups), notes: got.notes };
    if (this.imported.size > 10_000) this.imported.clear();
    this.imported.set(root, entry);
    return entry;
  }
}
