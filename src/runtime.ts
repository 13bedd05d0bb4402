/**
 * @module runtime
 * The process-wide wiring: store, bus, in-flight registry, tool registry, gate, approvals, permits,
 * script pool and providers, plus session creation (inheritance, privacy tiers) and turns.
 * One runtime per process (`airlock serve`, `airlock run`, tests); `close()` releases every handle.
 */
import { realpathSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import systemPrompt from "./agent/system.txt" with { type: "text" };
import { Inflight } from "./session/inflight.ts";
import { startTurn as loopStartTurn, type GateLike, type StartedTurn, type TurnResult } from "./agent/loop.ts";
import { isLoopbackUrl, type Provider, type ProviderOptions } from "./agent/providers/provider.ts";
import { interruptOrphanCards } from "./approval/recovery.ts";
import { Bus } from "./bus/bus.ts";
import { mergeConfig, type ConfigOverrides } from "./config/load.ts";
import { ensureTokens, type Tokens } from "./config/paths.ts";
import { ProviderConfig, type Config, type Mode, type Privacy, type SandboxPolicyName } from "./config/schema.ts";
import { AirlockError } from "./errors.ts";
import { Permits } from "./gate/permits.ts";
import { ancestors, rootOf } from "./session/graph.ts";
import type { Session } from "./session/types.ts";
import { Store } from "./store/store.ts";
import { isModelRosterTool, ToolRegistry } from "./tool/registry.ts";
import { subagentTools } from "./tool/subagent.ts";
import type { ToolOutcome } from "./tool/tool.ts";
import { ScriptPool } from "../sandbox/pool.ts";
import { wireDefaults, wireProvider, type ApprovalsLike, type GateFull } from "./agent/wiring.ts";

export type { TurnResult, StartedTurn };

/** `POST /sessions` body and `createSession` input (SPEC §6). */
export interface CreateSessionInput {
  workspace?: string;
  mode?: Mode;
  sandbox?: SandboxPolicyName;
  privacy?: Privacy;
  headless?: boolean;
  provider?: string;
  model?: string | null;
  parent_session_id?: string | null;
  title?: string | null;
}

/** Per-run overrides a recipe or `airlock run` flags set for a root session and its whole tree. */
export type RunOverrides = ConfigOverrides;

export interface RuntimeOptions {
  config: Readonly<Config>;
  /** Directory relative paths in the config resolve against (the scripted provider's script); made absolute against the cwd. */
  configDir: string;
  /** The config file read (null or absent: none, the defaults applied); named in the no-model warning. */
  configPath?: string | null;
  /** The data dir; made absolute against the cwd. */
  dataDir: string;
  /** Default workspace: where MCP servers run when their config names no `cwd` (default: the process cwd); made absolute against the cwd. */
  workspace?: string;
  /** Default `<dataDir>/airlock.db`. */
  dbPath?: string;
  /** Environment providers read API keys from; default `process.env`. */
  env?: Record<string, string | undefined>;
  /** Tokens to use instead of reading/creating them in the data dir. */
  tokens?: Tokens;
  /** Provider retry pacing (tests make it small). */
  providerRetry?: ProviderOptions["retry"];
  /** Every session created by this runtime is headless (`airlock serve --headless`). */
  headless?: boolean;
  /** Where warnings and MCP server logs go, one line per call (no newline); default airlock's stderr, never stdout. */
  log?: (line: string) => void;
}

/** The runtime services, also handed to tools as `ToolContext.runtime`. */
export interface Runtime {
  readonly config: Readonly<Config>;
  readonly configDir: string;
  readonly dataDir: string;
  /** Default workspace (RuntimeOptions.workspace). */
  readonly workspace: string;
  /** Warnings and logs, one line per call (RuntimeOptions.log; default stderr). */
  readonly log: (line: string) => void;
  readonly store: Store;
  readonly bus: Bus;
  readonly inflight: Inflight;
  readonly registry: ToolRegistry;
  readonly gate: GateFull;
  readonly approvals: ApprovalsLike;
  readonly permits: Permits;
  readonly scripts: ScriptPool;
  readonly tokens: Tokens;
  /** Background subagent turns by child session id (subagent__watch waits on them). */
  readonly background: Map<string, Promise<TurnResult>>;
  /**
   * The session's effective config: the base, the run overrides of its root, and its own mode/sandbox.
   * @throws AirlockError `session_graph_invalid` / `session_not_found` when the root cannot be found (the gate refuses the call).
   */
  configFor(session: Session): Readonly<Config>;
  /**
   * Builds the config's own provider now (and keeps it), so a configuration error — an unreadable or
   * invalid `provider.script` — fails at start instead of as the first turn. `scriptOrigin` names where
   * a relative script path came from when it was not the config file (e.g. `recipe nightly.yaml`).
   * @throws AirlockError `config_invalid` (exit 2 in the CLI).
   */
  checkProvider(opts?: { scriptOrigin?: string }): void;
  /** The session's provider (cached per provider config). @throws AirlockError `privacy_violation`, `config_invalid`, `provider_auth`. */
  providerFor(session: Session): Provider;
  /** Creates a session, applying inheritance and privacy rules. @throws `session_not_found`, `privacy_violation`, `bad_request`. */
  createSession(input: CreateSessionInput): Session;
  /** Starts a turn (sync up to registration). @throws `session_not_found`, `session_busy`. */
  startTurn(sessionId: string, message: string, opts?: { parentSignal?: AbortSignal }): StartedTurn;
  /** Runs a turn to its end. Failures are a `failed` result, not a rejection (except the errors of `startTurn`). */
  runTurn(sessionId: string, message: string, opts?: { parentSignal?: AbortSignal }): Promise<TurnResult>;
  /** Cancels the session's in-flight turn and those of its in-flight descendants; false when nothing ran. */
  cancel(sessionId: string, reason?: string): boolean;
  setRunOverrides(rootSessionId: string, overrides: RunOverrides): void;
  clearRunOverrides(rootSessionId: string): void;
  /** Registers a resource to release on close (servers, schedulers); closed in reverse order. */
  onClose(fn: () => Promise<void> | void): void;
  close(): Promise<void>;
}

/** Test hook: replaces parts of the default wiring (e.g. the gate while it is built elsewhere). */
export interface RuntimeParts {
  gate?: (deps: GateWiringDeps) => GateFull;
}

export interface GateWiringDeps {
  store: Store;
  bus: Bus;
  inflight: Inflight;
  registry: ToolRegistry;
  approvals: ApprovalsLike;
  permits: Permits;
  configFor(session: Session): Readonly<Config>;
  runtime: Runtime;
  hookEnv: Record<string, string>;
}

/** How long `close()` waits for cancelled turns to finish, ms. */
const CLOSE_DRAIN_MS = 5_000;

/**
 * Builds the runtime: opens the database (marking turns a previous process left running as
 * `interrupted`), reads or creates the tokens, starts the script pool and registers the tools.
 * @throws AirlockError `config_invalid` for unusable limits; database errors as thrown by bun:sqlite.
 */
export function createRuntime(opts: RuntimeOptions, parts: RuntimeParts = {}): Runtime {
  return new AirlockRuntime(opts, parts);
}

class AirlockRuntime implements Runtime {
  readonly config: Readonly<Config>;
  readonly configDir: string;
  readonly dataDir: string;
  readonly workspace: string;
  readonly log: (line: string) => void;
  private readonly forceHeadless: boolean;
  readonly store: Store;
  readonly bus = new Bus();
  readonly inflight = new Inflight();
  readonly registry = new ToolRegistry();
  readonly gate: GateFull;
  readonly approvals: ApprovalsLike;
  readonly permits: Permits;
  readonly scripts: ScriptPool;
  readonly tokens: Tokens;
  readonly background = new Map<string, Promise<TurnResult>>();
  private readonly env: Record<string, string | undefined>;
  private readonly providerRetry: ProviderOptions["retry"];
  private overrides = new Map<string, { overrides: RunOverrides; config: Readonly<Config> }>();
  private providers = new Map<string, Provider>();
  private running = new Set<Promise<TurnResult>>();
  private closers: (() => Promise<void> | void)[] = [];
  private closed = false;

  constructor(opts: RuntimeOptions, parts: RuntimeParts) {
    this.config = opts.config;
    // Paths from the caller are made absolute once, here and at the CLI's edge (SPEC §9): a relative
    // workspace would otherwise be read against "/" where a path is resolved without a base.
    this.configDir = resolve(opts.configDir);
    this.dataDir = resolve(opts.dataDir);
    this.workspace = resolve(opts.workspace ?? process.cwd());
    this.log = opts.log ?? ((line: string) => void process.stderr.write(`${line}\n`));
    this.forceHeadless = opts.headless === true;
    this.env = opts.env ?? process.env;
    this.providerRetry = opts.providerRetry;
    this.store = Store.open(opts.dbPath ?? join(opts.dataDir, "airlock.db"));
    try {
      const interrupted = this.store.markInterruptedTurns();
      if (interrupted > 0) this.log(`airlock: marked ${interrupted} turn(s) left running by a previous process as interrupted`);
      const cards = interruptOrphanCards(this.store);
      if (cards.length > 0) this.log(`airlock: closed ${cards.length} card(s) left pending by a previous process as interrupted`);
      this.tokens = opts.tokens ?? ensureTokens(opts.dataDir);
      const limits = this.config.limits;
      this.permits = new Permits(limits.max_concurrent_calls);
      this.scripts = new ScriptPool({ workers: limits.script_workers, memoryMb: limits.script_memory_mb, stackKb: limits.script_stack_kb });
      const wired = wireDefaults(this);
      this.approvals = wired.approvals;
      const deps: GateWiringDeps = {
        store: this.store,
        bus: this.bus,
        inflight: this.inflight,
        registry: this.registry,
        approvals: this.approvals,
        permits: this.permits,
        configFor: (s) => this.configFor(s),
        runtime: this,
        hookEnv: { AIRLOCK_CONFIG_DIR: this.configDir },
      };
      this.gate = parts.gate ? parts.gate(deps) : wired.gate(deps);
      for (const t of wired.tools) this.registry.register(t);
      for (const t of subagentTools()) this.registry.register(t);
      for (const s of wired.sources) this.registry.registerSource(s);
      this.closers.push(wired.close);
      checkToolPermissions(this.config, this.registry);
    } catch (e) {
      // nothing has started but the pool's workers (MCP servers start lazily): release them and the database
      void (this as { scripts?: ScriptPool }).scripts?.close().catch(() => {});
      this.store.close();
      throw e;
    }
    if (this.config.provider.name === "scripted" && !this.config.provider.script) {
      this.log(
        "airlock: no model configured — provider is the built-in scripted provider with no script, so every answer is a placeholder; " +
          `set provider.name, provider.model and provider.base_url in ${opts.configPath ?? `${join(this.dataDir, "airlock.yaml")} (create it; or pass --config FILE)`} ` +
          "(docs/configuration.md, docs/quickstart.md §6)",
      );
    }
  }

  configFor(session: Session): Readonly<Config> {
    // No fallback when the graph cannot be read: the root's run overrides (a recipe's hooks) ADD guards,
    // so judging without them would loosen. The error reaches the gate, which refuses the call.
    const root = session.parent_session_id ? rootOf(this.store, session.id) : session.id;
    const base = this.overrides.get(root)?.config ?? this.config;
    if (base.mode === session.mode && base.sandbox === session.sandbox) return base;
    return Object.freeze({ ...base, mode: session.mode, sandbox: session.sandbox });
  }

  providerFor(session: Session): Provider {
    const cfg = this.providerConfigFor(session);
    checkPrivateProvider(session.privacy, cfg);
    const key = JSON.stringify(cfg);
    let p = this.providers.get(key);
    if (!p) {
      p = this.makeProvider(cfg);
      this.providers.set(key, p);
    }
    return p;
  }

  checkProvider(opts: { scriptOrigin?: string } = {}): void {
    const cfg = this.config.provider;
    const key = JSON.stringify(cfg);
    if (!this.providers.has(key)) this.providers.set(key, this.makeProvider(cfg, opts.scriptOrigin));
  }

  private providerConfigFor(session: { id?: string; provider: string; model: string | null; parent_session_id?: string | null } & Partial<Session>): ProviderConfig {
    const cfgBase = session.id ? this.configFor(session as Session).provider : this.config.provider;
    let cfg: ProviderConfig = cfgBase;
    if (session.provider !== cfg.name) {
      const parsed = ProviderConfig.safeParse({ name: session.provider });
      if (!parsed.success) throw new AirlockError("bad_request", `unknown provider ${JSON.stringify(session.provider)}; use openai, anthropic or scripted`);
      cfg = parsed.data;
    }
    if (session.model) cfg = { ...cfg, model: session.model };
    return cfg;
  }

  private makeProvider(cfg: ProviderConfig, scriptOrigin?: string): Provider {
    return wireProvider(cfg, {
      configDir: this.configDir,
      env: this.env,
      ...(scriptOrigin ? { scriptOrigin } : {}),
      ...(this.providerRetry ? { retry: this.providerRetry } : {}),
    });
  }

  createSession(input: CreateSessionInput): Session {
    this.assertOpen();
    if (input.parent_session_id) {
      const parent = this.store.requireSession(input.parent_session_id);
      const root = rootOf(this.store, parent.id);
      if (input.privacy && input.privacy !== parent.privacy) {
        throw new AirlockError(
          "privacy_violation",
          `a ${input.privacy} session cannot be created under the ${parent.privacy} session ${parent.id}: a child inherits its parent's privacy tier; drop "privacy" or use ${parent.privacy}`,
        );
      }
      const child = {
        parent_session_id: parent.id,
        workspace: input.workspace ? checkWorkspace(input.workspace) : parent.workspace,
        mode: input.mode ?? parent.mode,
        sandbox: input.sandbox ?? parent.sandbox,
        privacy: parent.privacy,
        headless: parent.headless || input.headless === true,
        provider: input.provider ?? parent.provider,
        model: input.model !== undefined ? input.model : parent.model,
        title: input.title ?? null,
      };
      checkPrivateProvider(child.privacy, this.providerConfigFor({ ...child, id: parent.id, mode: child.mode, sandbox: child.sandbox }));
      return this.store.createSession(child, root);
    }
    const privacy = input.privacy ?? this.config.privacy;
    const provider = input.provider ?? this.config.provider.name;
    const rootInput = {
      parent_session_id: null,
      workspace: checkWorkspace(input.workspace ?? this.workspace),
      mode: input.mode ?? this.config.mode,
      sandbox: input.sandbox ?? this.config.sandbox,
      privacy,
      headless: input.headless === true || this.forceHeadless,
      provider,
      model: input.model !== undefined ? input.model : provider === this.config.provider.name ? (this.config.provider.model ?? null) : null,
      title: input.title ?? null,
    };
    checkPrivateProvider(privacy, this.providerConfigFor(rootInput));
    return this.store.createSession(rootInput);
  }

  startTurn(sessionId: string, message: string, opts: { parentSignal?: AbortSignal } = {}): StartedTurn {
    this.assertOpen();
    const session = this.store.requireSession(sessionId);
    const config = this.configFor(session);
    const started = loopStartTurn(
      {
        store: this.store,
        bus: this.bus,
        inflight: this.inflight,
        gate: this.gate,
        provider: () => this.providerFor(session),
        system: systemPrompt,
        // static tools only: listing the MCP sources would start every server on every model call
        tools: () => this.registry.specs(isModelRosterTool, { sources: false }),
        maxIterations: config.limits.max_iterations,
        model: session.model,
      },
      session,
      message,
      opts,
    );
    this.running.add(started.done);
    void started.done.finally(() => this.running.delete(started.done));
    return started;
  }

  runTurn(sessionId: string, message: string, opts: { parentSignal?: AbortSignal } = {}): Promise<TurnResult> {
    return this.startTurn(sessionId, message, opts).done;
  }

  cancel(sessionId: string, reason = "cancelled by request"): boolean {
    const hit = this.inflight.cancel(sessionId, reason);
    let any = hit;
    for (const other of this.inflight.sessions()) {
      if (other === sessionId) continue;
      try {
        if (ancestors(this.store, other).includes(sessionId)) any = this.inflight.cancel(other, `${reason} (an ancestor's turn was cancelled)`) || any;
      } catch {
        // a session whose graph cannot be read is not a descendant we can prove; leave it
      }
    }
    return any;
  }

  setRunOverrides(rootSessionId: string, overrides: RunOverrides): void {
    const config = mergeConfig(this.config, overrides, `run overrides of ${rootSessionId}`);
    this.overrides.set(rootSessionId, { overrides, config });
  }

  clearRunOverrides(rootSessionId: string): void {
    this.overrides.delete(rootSessionId);
  }

  onClose(fn: () => Promise<void> | void): void {
    this.closers.push(fn);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const s of this.inflight.sessions()) this.inflight.cancel(s, "the runtime is shutting down");
    if (this.running.size) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        Promise.allSettled([...this.running]),
        new Promise((r) => {
          timer = setTimeout(r, CLOSE_DRAIN_MS);
        }),
      ]);
      clearTimeout(timer);
    }
    for (const fn of this.closers.reverse()) {
      try {
        await fn();
      } catch (e) {
        console.error("airlock: a resource failed to close:", e);
      }
    }
    await this.registry.close();
    this.approvals.close();
    await this.scripts.close();
    this.store.close();
  }

  private assertOpen(): void {
    if (this.closed) throw new AirlockError("internal", "the runtime is closed");
  }
}

/** The outcome shape tools get from the gate, re-exported for tools that call the runtime. */
export type { ToolOutcome };

/**
 * A `private` session may use only providers whose `base_url` is loopback (SPEC §10). The scripted
 * provider makes no network calls and is allowed.
 * @throws AirlockError `privacy_violation`.
 */
export function checkPrivateProvider(privacy: Privacy, cfg: ProviderConfig): void {
  if (privacy !== "private" || cfg.name === "scripted") return;
  if (!isLoopbackUrl(cfg.base_url)) {
    throw new AirlockError(
      "privacy_violation",
      `a private session may use only a provider on this machine, but ${cfg.name} points at ${cfg.base_url ?? "its public default endpoint"}; set provider.base_url to a loopback address (e.g. http://127.0.0.1:11434/v1) or make the session public`,
    );
  }
}

/**
 * Checks the keys of `config.tools` (per-tool permissions) against the registry, so a typo such as
 * `developer__shel: { permission: deny }` is not a deny rule silently dropped: a name under a built-in
 * extension (developer, interpreter, code_execution, subagent) must name a registered tool, any other
 * must fall under a configured MCP server (`server__tool`; its tools are unknown until it is listed).
 * @throws AirlockError `config_invalid`, one line per bad key: `tools.developer__shel: no such tool; did you mean developer__shell? …`.
 */
export function checkToolPermissions(config: Readonly<Config>, registry: ToolRegistry): void {
  const problems: string[] = [];
  for (const name of Object.keys(config.tools)) {
    const why = registry.checkToolName(name);
    if (why) problems.push(`tools.${name}: ${why}`);
  }
  if (problems.length) {
    throw new AirlockError("config_invalid", `${problems.join("\n")}\n(fix the key under tools: in the config; a permission for a tool that does not exist would never apply)`, {
      issues: problems,
    });
  }
}

/** Real path of an existing directory. @throws AirlockError `bad_request`. */
function checkWorkspace(p: string): string {
  let real: string;
  try {
    real = realpathSync(p);
  } catch {
    throw new AirlockError("bad_request", `workspace ${p} does not exist; create it or pass an existing directory`);
  }
  if (!statSync(real).isDirectory()) throw new AirlockError("bad_request", `workspace ${p} is not a directory`);
  return real;
}
