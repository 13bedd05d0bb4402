/**
 * @module runtime
 * The composition root: builds the process-wide parts — store, bus, in-flight registry, tool registry
 * (with each tool's narrow port), cards, gate, permits, script pool, session configs and providers —
 * and wires them together. Nothing below imports it; surfaces (server, console, CLI, scheduler, run) use
 * the `Runtime` interface. One runtime per process (`airlock serve`, `airlock run`, tests); `close()`
 * releases every handle, in reverse order of creation.
 */
import { realpathSync } from "node:fs";
import { useProbeCache } from "./launcher/probe.ts";
import { warmLaunch } from "./launcher/spawn.ts";
import { join, resolve } from "node:path";
import { SYSTEM_PROMPTS } from "./agent/system-prompts.ts";
import { AgentHooks } from "./agent/hooks.ts";
import { contextTokensFor, HistoryCompactor } from "./agent/compact.ts";
import { startTurn as loopStartTurn, type StartedTurn, type TurnResult } from "./agent/loop.ts";
import type { Provider, ProviderOptions } from "./agent/providers/provider.ts";
import { ProviderSelector } from "./agent/providers/select.ts";
import { UsageMeter } from "./agent/usage.ts";
import { Cards } from "./card/pending.ts";
import { interruptOrphanCards } from "./card/recovery.ts";
import { Bus } from "./bus/bus.ts";
import type { ConfigOverrides } from "./config/load.ts";
import { ensureTokens, type Tokens } from "./config/paths.ts";
import type { Config } from "./config/schema.ts";
import { configWarnings, locator } from "./config/warnings.ts";
import { AirlockError, type ErrorCode } from "./errors.ts";
import { Gate } from "./gate/gate.ts";
import { Permits } from "./gate/permits.ts";
import { claudeToolInput, claudeToolName } from "./gate/inspectors/hooks.ts";
import { testInspectors } from "./gate/inspectors/index.ts";
import { SessionRuleSets } from "./gate/rules/session.ts";
import { SessionRules } from "./store/session-rules.ts";
import { checkRuleToolNames, rulesHome, runPermissionTests, withEffectivePermissions } from "./gate/rules/start.ts";
import { treeSettingsHooks, userSettingsHooks, type SettingsHooks } from "./config/claude-settings.ts";
import { SessionConfigs, type ImportedHooks } from "./session/config.ts";
import { createSession, type CreateSessionInput } from "./session/create.ts";
import { knownAncestors } from "./session/graph.ts";
import { Inflight } from "./session/inflight.ts";
import type { Session } from "./session/types.ts";
import { openStore } from "./store/open.ts";
import { chooseStorage } from "./store/storage.ts";
import type { FleetNode } from "./fleet/node.ts";
import type { TurnRequest } from "./fleet/dispatch.ts";
import { WORKER_LOST_ERROR } from "./fleet/lost.ts";
import type { SweepResult } from "./fleet/sweeper.ts";
import { roleRefusal, runsTurns, type ServeRole } from "./fleet/role.ts";
import { newId } from "./ids.ts";
import type { TurnLeases } from "./fleet/turn-leases.ts";
import { Store } from "./store/store.ts";
import { Transcripts, type ToolUseView } from "./store/transcript.ts";
import { TrustStore } from "./store/trust.ts";
import { UsageLedger } from "./store/usage.ts";
import { builtInTools } from "./tool/host-tools.ts";
import { McpManager } from "./tool/mcp/index.ts";
import { offeredToolFilter, ToolRegistry } from "./tool/registry.ts";
import type { SubagentPort } from "./tool/subagent.ts";
import { ScriptPool } from "./script/pool.ts";
import { Notifications } from "./notify/notifier.ts";

export type { CreateSessionInput, StartedTurn, TurnResult };

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
  /**
   * `airlock serve --role` (fleet/role.ts). `api`: turns asked for over HTTP are queued for a worker and never
   * run here (`startTurn` refuses). `worker` and `all` claim the turns `api` nodes queue (PostgreSQL). Absent:
   * not a serve node (`airlock run`, `acp`, tests): it behaves as `all` but claims no queued turn. A role
   * other than `all` needs the PostgreSQL store.
   * @throws (from createRuntime) AirlockError `usage` for `api`/`worker` on SQLite.
   */
  role?: ServeRole;
  /**
   * The caller refuses a config with no model itself (`airlock run`: `checkProvider({requireModel: true})`
   * throws `config_invalid` saying it): the start-up's "no model configured" warning is then not logged, so
   * the person reads it once, as the error.
   */
  requireModel?: boolean;
}

/** The runtime services the surfaces (server, console, CLI, scheduler, run) use. */
export interface Runtime {
  readonly config: Readonly<Config>;
  readonly configDir: string;
  readonly dataDir: string;
  /** The PostgreSQL database's `postgres://` URL when the store is on PostgreSQL (store/storage.ts `chooseStorage`), else null (SQLite). */
  readonly databaseUrl: string | null;
  /** Default workspace (RuntimeOptions.workspace). */
  readonly workspace: string;
  /** Warnings and logs, one line per call (RuntimeOptions.log; default stderr). */
  readonly log: (line: string) => void;
  readonly store: Store;
  readonly bus: Bus;
  readonly inflight: Inflight;
  readonly registry: ToolRegistry;
  readonly gate: Gate;
  readonly cards: Cards;
  /** The session trees' allow rules ("Allow for this session"): stored, listed and removed here; the gate consults them. */
  readonly sessionRules: SessionRules;
  /** The folders a person trusted (`airlock trust`): a workspace's own Claude Code hooks run only there. */
  readonly trust: TrustStore;
  readonly permits: Permits;
  readonly scripts: ScriptPool;
  readonly tokens: Tokens;
  /** The sessions' transcripts in Claude Code's JSONL shape (store/transcript.ts), written as each message is stored. */
  readonly transcripts: Transcripts;
  /** `notify:` (docs/notify.md): cards are heard about through the bus; the run path calls `notify.runEnded`. */
  readonly notify: Notifications;
  /** Background subagent turns by child session id (subagent__watch waits on them). */
  readonly background: Map<string, Promise<TurnResult>>;
  /** Token usage of every model call, summed per turn, session and subtree (store/usage.ts). */
  readonly usage: UsageLedger;
  /**
   * Limits the run rooted at `rootSessionId` (its whole tree) to `maxTokens` input + output tokens
   * (`limits.max_tokens_per_run`): the model call that crosses it fails its turn with `token_budget` and
   * stops the run's other turns. `clearTokenBudget` when the run is over.
   */
  setTokenBudget(rootSessionId: string, maxTokens: number): void;
  clearTokenBudget(rootSessionId: string): void;
  /**
   * A hook input's `transcript_path` for the session: `<dataDir>/transcripts/<sessionId>.jsonl`
   * (absolute, the data dir's real path), brought in step with the store first and created empty
   * when the session has no message yet. Call it for every hook input (cheap when in step).
   * @throws AirlockError `session_not_found`, `bad_request` (not a session id), `data_dir_unusable` (the file cannot be written).
   */
  transcriptPath(sessionId: string): Promise<string>;
  /**
   * The session's effective config: the base, the run overrides of its root, and its own mode/sandbox.
   * @throws AirlockError `session_graph_invalid` / `session_not_found` when the root cannot be found (the gate refuses the call).
   */
  configFor(session: Session): Readonly<Config>;
  /**
   * What the person should be told about the hooks the tree of `sessionId` imports from Claude Code's
   * settings files (`hooks.import_claude_settings`): a workspace's hooks not run because the folder is not
   * trusted (with the `airlock trust DIR` that would run them), events, hook types and fields not honoured.
   * Each line is also logged once. Never throws; empty when there is nothing to say.
   */
  hookNotes(sessionId: string): Promise<string[]>;
  /**
   * Logs {@link hookNotes}' lines on the runtime's log (`airlock: WARNING: …`), each once per root: those the import
   * logged already are not said again, and a settings file that cannot be used (a note the import never logs: it
   * failed) is said too. For a surface that shows no run result (`airlock acp`). Never throws.
   */
  logHookNotes(sessionId: string): Promise<void>;
  /**
   * Builds the config's own provider now (and keeps it), so a configuration error — an unreadable or
   * invalid `provider.script`, an unset API key variable, no model — fails at start instead of as the
   * first turn. `scriptOrigin` names where a relative script path came from when it was not the config
   * file (e.g. `recipe nightly.yaml`); `requireModel` (`airlock run`) refuses the scripted provider
   * without a script (no model configured) instead of answering a placeholder.
   * @throws AirlockError `config_invalid` (exit 2 in the CLI).
   */
  checkProvider(opts?: { scriptOrigin?: string; requireModel?: boolean }): void;
  /** The session's provider (cached per provider config). @throws AirlockError `privacy_violation`, `config_invalid`, `provider_auth`. */
  providerFor(session: Session): Provider;
  /** Creates a session, applying inheritance and privacy rules. @throws `session_not_found`, `privacy_violation`, `bad_request`. */
  createSession(input: CreateSessionInput): Promise<Session>;
  /** This process's `serve --role` (RuntimeOptions.role). */
  readonly role: ServeRole;
  /**
   * Starts a turn here (resolves once it is registered in flight). `turnId`: a pre-assigned id (a claimed turn request).
   * @throws `session_not_found`, `session_busy`; `internal` on an `api` node (it never runs turns).
   */
  startTurn(sessionId: string, message: string, opts?: { parentSignal?: AbortSignal; turnId?: string }): Promise<StartedTurn>;
  /**
   * Asks for a turn the way the HTTP API does: on an `api` node it is queued for a worker (fleet/dispatch.ts;
   * its events reach this bus through the relay, ending in `turn_finished`; unclaimed within
   * `fleet.queue_timeout_seconds` it ends `failed` with `no_worker`), elsewhere it starts here (`startTurn`).
   * @returns the turn's id.
   * @throws `session_not_found`, `session_busy` (a turn running or queued anywhere in the fleet), storage errors (nothing queued).
   */
  requestTurn(sessionId: string, message: string): Promise<{ turnId: string }>;
  /**
   * Cancels the session's turn and its descendants' wherever they run: here (`cancel`), a turn of it still
   * queued (withdrawn; it ends `cancelled`), and, on PostgreSQL, on every other node (through the relay).
   * @returns true when something was cancelled here, withdrawn, or a live lease of the session or a descendant exists in the fleet.
   * @throws storage errors (PostgreSQL) after the local cancel was done.
   */
  cancelEverywhere(sessionId: string, reason?: string): Promise<boolean>;
  /**
   * The sessions whose turn runs on another node of the fleet (a live lease held by another worker), or only
   * `sessionId` when given and it does; always empty on SQLite. For `in_flight` beside `inflight` (this process's own).
   * @throws storage errors.
   */
  remoteInFlight(sessionId?: string): Promise<string[]>;
  /** Starts a turn (see `startTurn`) and runs it to its end. */
  /** Failures are a `failed` result, not a rejection (except the errors of `startTurn`). */
  runTurn(sessionId: string, message: string, opts?: { parentSignal?: AbortSignal }): Promise<TurnResult>;
  /** Cancels the session's in-flight turn and those of its in-flight descendants; false when nothing ran. */
  cancel(sessionId: string, reason?: string): boolean;
  setRunOverrides(rootSessionId: string, overrides: RunOverrides): void;
  clearRunOverrides(rootSessionId: string): void;
  /** Registers a resource to release on close (servers, schedulers); closed in reverse order. */
  onClose(fn: () => Promise<void> | void): void;
  /**
   * Cancels running turns (waiting up to 5 s for them), runs the SessionEnd hooks, withdraws the cards still
   * pending (their `action_resolved` published while the HTTP server's SSE streams are still open), then releases
   * every resource in reverse order of creation (the HTTP server first: it ends its SSE streams by
   * {@link Runtime.closeDeadline}). Never throws: failures are logged.
   */
  close(): Promise<void>;
  /**
   * Null until `close()` starts; then the time (ms since the epoch) by which it wants what it waits on ended: the
   * turns it cancelled, then the SSE streams' last writes. Its start + 5 s; a client that does not read its stream
   * holds the shutdown no later than this.
   */
  readonly closeDeadline: number | null;
  [Symbol.asyncDispose](): Promise<void>;
}

/** How long `close()` waits for cancelled turns to finish, ms. */
const CLOSE_DRAIN_MS = 5_000;

/**
 * Builds the runtime: opens the store on the configured backend (store/open.ts: SQLite, or PostgreSQL by
 * `storage:` / `$AIRLOCK_DATABASE_URL`; on SQLite marking turns a previous process left running as
 * `interrupted`), reads or creates the tokens, starts the script pool and registers the tools.
 * @throws AirlockError `config_invalid` for unusable limits or unknown tool names in `tools:`; `storage_unavailable` (PostgreSQL cannot be used), `data_dir_unusable` (SQLite); other database errors as thrown.
 */
export async function createRuntime(opts: RuntimeOptions): Promise<Runtime> {
  const role = opts.role ?? "all";
  const choice = chooseStorage(opts.config.storage, opts.env ?? process.env);
  if (role !== "all" && choice.kind !== "postgres") {
    throw roleRefusal(role, "sqlite") ?? new AirlockError("usage", `--role ${role} needs the PostgreSQL store`);
  }
  /** Bound once the runtime exists: the fleet node's callbacks reach it through this. */
  let late: AirlockRuntime | undefined;
  const store = await openStore(opts.config, opts.dataDir, { env: opts.env ?? process.env, dbPath: opts.dbPath });
  let fleet: FleetNode | undefined;
  let turnLeases: typeof TurnLeases | undefined;
  const bus = new Bus();
  try {
    const log = opts.log ?? ((line: string) => void process.stderr.write(`${line}\n`));
    // the pid sweep is SQLite-only: on PostgreSQL other processes (other hosts) share the database, and a
    // pid means nothing there (docs/scale-out.md)
    const interrupted = store.sql.dialect === "sqlite" ? await store.markInterruptedTurns() : 0;
    if (interrupted > 0) log(`airlock: marked ${interrupted} turn(s) left running by a previous process as interrupted`);
    // likewise SQLite-only: on PostgreSQL a pending card may be another live process's (the fleet's sweeper ends a dead one's)
    const cards = store.sql.dialect === "sqlite" ? await interruptOrphanCards(store) : [];
    if (cards.length > 0) log(`airlock: closed ${cards.length} card(s) left pending by a previous process as interrupted`);
    // PostgreSQL: this process is one node of a fleet (SPEC §5.8): leases, card rows, the feed, the sweeper,
    // the turn queue and the event relay
    if (choice.kind === "postgres") {
      // loaded here: a SQLite run never loads the fleet's code
      const { FleetNode } = await import("./fleet/node.ts");
      const loaded = await import("./fleet/turn-leases.ts");
      turnLeases = loaded.TurnLeases;
      fleet = await FleetNode.start({
        sql: store.sql,
        listenUrl: choice.url,
        bus,
        config: opts.config.fleet,
        onSwept: (r) => {
          log(`airlock: fleet sweep: ${r.turns.length} turn(s) of stopped processes interrupted, ${r.cards.length} card(s) ended worker_lost, ${r.runs.length} run(s) interrupted`);
          void late?.announceSwept(r);
        },
        onCancel: (sessionId, reason) => void late?.cancelRelayed(sessionId, reason),
      });
    }
  } catch (e) {
    await fleet?.close().catch(() => {});
    await store.close().catch(() => {});
    throw e;
  }
  // the constructor closes the store (and the fleet node) when it throws
  const rt = new AirlockRuntime(opts, store, bus, choice.kind === "postgres" ? choice.url : null, fleet && turnLeases ? { node: fleet, TurnLeases: turnLeases } : undefined);
  late = rt;
  // only serve nodes claim: a one-shot `airlock run` on the same database must not take a turn it would abandon at exit
  if (fleet && opts.role !== undefined && runsTurns(opts.role)) {
    try {
      await fleet.startDispatch((req) => rt.runRequest(req));
    } catch (e) {
      await rt.close();
      throw e;
    }
  }
  return rt;
}

class AirlockRuntime implements Runtime {
  readonly config: Readonly<Config>;
  readonly configDir: string;
  readonly dataDir: string;
  readonly databaseUrl: string | null;
  readonly workspace: string;
  readonly log: (line: string) => void;
  readonly role: ServeRole;
  private readonly forceHeadless: boolean;
  readonly store: Store;
  readonly bus: Bus;
  /** Fleet mode (PostgreSQL storage): this process's node and its turns' leases; absent on SQLite. */
  private readonly fleet: { node: FleetNode; turnLeases: TurnLeases } | undefined;
  readonly inflight = new Inflight();
  readonly registry = new ToolRegistry();
  readonly gate: Gate;
  readonly cards: Cards;
  readonly sessionRules: SessionRules;
  readonly trust: TrustStore;
  readonly permits: Permits;
  readonly scripts: ScriptPool;
  readonly tokens: Tokens;
  readonly transcripts: Transcripts;
  readonly notify: Notifications;
  readonly background = new Map<string, Promise<TurnResult>>();
  readonly usage: UsageLedger;
  private readonly meter: UsageMeter;
  private readonly sessionConfigs: SessionConfigs;
  /** `~/.claude/settings.json`'s hooks, read once (at start when the config imports them, else when a recipe first does). */
  private userHooks: SettingsHooks | undefined;
  private readonly providers: ProviderSelector;
  /** The hook events around turns, cards and the runtime's end (agent/hooks.ts). */
  private readonly hooks: AgentHooks;
  /** Where a person sets `provider:` — the config file, or the data dir's airlock.yaml to create (messages only). */
  private readonly configFileHint: string;
  /** Shrinks what is sent as a session's history nears its model's context (agent/compact.ts). */
  private readonly compactor: HistoryCompactor;
  private readonly running = new Set<Promise<TurnResult>>();
  /** The `no_worker` timers of the turns this `api` node queued (cleared by `close()`). */
  private readonly queueTimers = new Set<ReturnType<typeof setTimeout>>();
  /** Every resource this runtime owns, released in reverse order of creation by `close()`. */
  private readonly resources = new AsyncDisposableStack();
  private closed = false;
  closeDeadline: number | null = null;

  /** `fleet`: this process's node and the turn-lease class (both loaded only in fleet mode, PostgreSQL). */
  /** `databaseUrl`: the PostgreSQL URL createRuntime chose (store/storage.ts), null on SQLite. */
  constructor(opts: RuntimeOptions, store: Store, bus: Bus, databaseUrl: string | null, fleet?: { node: FleetNode; TurnLeases: typeof TurnLeases }) {
    this.bus = bus;
    this.role = opts.role ?? "all";
    this.fleet = fleet
      ? {
          node: fleet.node,
          turnLeases: new fleet.TurnLeases(
            fleet.node.leases,
            (sid, _tid, e) => this.inflight.cancel(sid, e.message),
            // the turn a takeover interrupted gets its end announced, as a swept one does (no SSE waits forever for it)
            (sid, lostTurnId) => void this.announceSwept({ turns: [lostTurnId], cards: [], runs: [], requests: [] }),
          ),
        }
      : undefined;
    // Paths from the caller are made absolute once, here and at the CLI's edge (SPEC §9): a relative
    // workspace would otherwise be read against "/" where a path is resolved without a base.
    this.configDir = resolve(opts.configDir);
    this.dataDir = resolve(opts.dataDir);
    this.workspace = resolve(opts.workspace ?? process.cwd());
    this.log = opts.log ?? ((line: string) => void process.stderr.write(`${line}\n`));
    // permission rules: checked, and Claude Code's settings merged in (import_claude_settings), before anything starts
    this.config = withEffectivePermissions(opts.config, { workspace: this.workspace, home: rulesHome(), log: this.log });
    this.forceHeadless = opts.headless === true;
    this.store = store;
    this.databaseUrl = databaseUrl;
    this.trust = new TrustStore(this.store);
    this.sessionConfigs = new SessionConfigs(this.store, this.config, (root, config) => this.importHooks(root, config));
    this.providers = new ProviderSelector({
      config: this.config,
      configDir: this.configDir,
      env: opts.env ?? process.env,
      ...(opts.providerRetry ? { retry: opts.providerRetry } : {}),
      configFor: (s) => this.sessionConfigs.configFor(s),
    });
    try {
      this.tokens = opts.tokens ?? ensureTokens(opts.dataDir);
      // the data dir's real path, resolved once: the floor, the file tools and every host process hide it
      const realDataDir = realpathSync(this.dataDir);
      // bubblewrap's availability probe is remembered there, per boot (launcher/probe.ts)
      useProbeCache(realDataDir);
      const limits = this.config.limits;
      this.permits = new Permits(limits.max_concurrent_calls);
      this.scripts = new ScriptPool({ workers: limits.script_workers, memoryMb: limits.script_memory_mb, stackKb: limits.script_stack_kb });
      this.sessionRules = new SessionRules(this.store);
      this.usage = new UsageLedger(this.store);
      this.meter = new UsageMeter({ ledger: this.usage, sessions: this.store, inflight: this.inflight });
      // before the cards: closed after them, so the cards they withdraw at close are still told
      this.notify = new Notifications({
        config: this.config.notify,
        bus: this.bus,
        store: this.store,
        log: this.log,
        defaultConsoleUrl: serverUrlOf(this.config.server),
        command: { cwd: this.configDir, dataDir: realDataDir, allowUnenforced: this.config.allow_unenforced, extraEnv: { AIRLOCK_CONFIG_DIR: this.configDir } },
        ...(opts.env ? { env: opts.env } : {}),
      });
      this.resources.use(this.notify);
      this.cards = new Cards({
        store: this.store,
        bus: this.bus,
        inflight: this.inflight,
        approverToken: () => this.tokens.approverToken,
        sessionRules: this.sessionRules,
        ...(this.fleet ? { fleet: this.fleet } : {}),
      });
      this.resources.use(this.store);
      // closed after the cards (which end their rows through it) and before the store
      const fleetParts = this.fleet;
      if (fleetParts) {
        this.resources.defer(async () => {
          await fleetParts.turnLeases.close();
          await fleetParts.node.close();
        });
      }
      this.resources.use(this.scripts);
      this.resources.use(this.cards);
      this.resources.use(this.registry);
      this.gate = new Gate({
        store: this.store,
        bus: this.bus,
        inflight: this.inflight,
        registry: this.registry,
        cards: this.cards,
        permits: this.permits,
        ...(this.fleet ? { leaseLive: (turnId: string) => this.fleet!.turnLeases.live(turnId) } : {}),
        configFor: (s) => this.configFor(s),
        dataDir: realDataDir,
        hookEnv: { AIRLOCK_CONFIG_DIR: this.configDir },
        transcriptPath: (id) => this.transcriptPath(id),
        sessionRules: new SessionRuleSets(this.sessionRules),
      });
      this.hooks = new AgentHooks({
        bus: this.bus,
        store: this.store,
        configFor: (s) => this.configFor(s),
        mayHaveHooks: (id, event) => this.sessionConfigs.mayHaveHooks(id, event),
        tool: (name) => this.registry.get(name),
        dataDir: realDataDir,
        env: { AIRLOCK_CONFIG_DIR: this.configDir },
        transcriptPath: (id) => this.transcriptPath(id),
      });
      this.resources.defer(this.hooks.watchCards());
      this.compactor = new HistoryCompactor({ hooks: this.hooks, contextTokens: (session) => contextTokensFor(this.providers.providerConfigOf(session)) });
      const mcp = new McpManager({ config: this.config, defaultWorkspace: this.workspace, hiddenPaths: [this.dataDir], log: this.log });
      for (const t of builtInTools(this.scripts, this.subagentPort())) this.registry.register(t);
      for (const s of mcp.sources()) this.registry.registerSource(s);
      // once the tools are registered (a tool_use block carries the name hooks see), before any turn or
      // host process: the launcher hides the transcripts folder from tools and MCP servers only once it
      // exists. Crash recovery's results (above) reach a transcript at its session's next use.
      this.transcripts = new Transcripts({ dataDir: realDataDir, store: this.store, toolUse: (n, a, ws) => hookToolView(this.registry, n, a, ws), log: this.log });
      this.transcripts.ensureDir();
      this.store.onMessagesAppended((msgs) => this.transcripts.appended(msgs));
      this.resources.use(mcp);
      // the user's own settings hooks: read (and their warnings said) at start
      if (this.config.hooks.import_claude_settings) this.readUserHooks();
      checkToolPermissions(this.config, this.registry, opts.configPath);
      checkRuleToolNames(this.config.permissions, this.registry);
      runPermissionTests(this.config, { registry: this.registry, inspectors: testInspectors({ dataDir: realDataDir }), workspace: realWorkspace(this.workspace) });
      // off the path to the first model request: what a first confined call would do cold, hiding the data dir as
      // every call does (runs nothing but the reaper)
      if (this.config.execution_backend !== "external") setTimeout(() => void warmLaunch(this.config, [realDataDir]), 0).unref();
    } catch (e) {
      // nothing has started but the pool's workers (MCP servers start lazily): release them and the database
      void (this as { scripts?: ScriptPool }).scripts?.close().catch(() => {});
      void (fleet ? fleet.node.close() : Promise.resolve()).finally(() => this.store.close()).catch(() => {});
      throw e;
    }
    this.configFileHint = opts.configPath ?? `${join(this.dataDir, "airlock.yaml")} (create it; or pass --config FILE)`;
    // an api node never calls a model (its turns run on workers): no warning about the model there; nor where the
    // caller's own check refuses it (requireModel), which says it as the error
    if (this.config.provider.name === "scripted" && !this.config.provider.script && this.role !== "api" && opts.requireModel !== true) {
      this.log(
        "airlock: no model configured — provider is the built-in scripted provider with no script (serve answers with a placeholder; airlock run refuses); " +
          `set provider.name, provider.model and provider.base_url in ${this.configFileHint} ` +
          "(docs/configuration.md, docs/quickstart.md §6)",
      );
    }
    for (const w of configWarnings(this.config, this.configDir, opts.configPath, opts.env ?? process.env)) this.log(`airlock: WARNING: ${w}`);
  }

  /** The subagent tools' port: session creation, turns and the in-flight registry, nothing more. */
  private subagentPort(): SubagentPort {
    return {
      createChild: (parentId, o) => this.createSession({ parent_session_id: parentId, ...(o.privacy ? { privacy: o.privacy } : {}) }),
      startTurn: (sessionId, message, o) => this.startTurn(sessionId, message, o),
      turnSignal: (sessionId, turnId) => {
        const turn = this.inflight.get(sessionId);
        return turn && turn.turnId === turnId ? turn.controller.signal : undefined;
      },
      background: this.background,
      getSession: (id) => this.store.getSession(id),
      listTurns: (id) => this.store.listTurns(id),
    };
  }

  configFor(session: Session): Readonly<Config> {
    return this.sessionConfigs.configFor(session);
  }

  transcriptPath(sessionId: string): Promise<string> {
    return this.transcripts.path(sessionId);
  }

  async hookNotes(sessionId: string): Promise<string[]> {
    return (await this.notesOf(sessionId)).notes;
  }

  async logHookNotes(sessionId: string): Promise<void> {
    const { root, notes } = await this.notesOf(sessionId);
    if (root !== null) this.logNotes(root, notes);
    else for (const n of notes) this.log(`airlock: WARNING: ${n}`);
  }

  /** The hook notes of `sessionId`'s tree and its root; a session that cannot be read is its one note (root null). */
  private async notesOf(sessionId: string): Promise<{ root: string | null; notes: string[] }> {
    let root: string;
    try {
      root = await this.learn(sessionId);
    } catch (e) {
      return { root: null, notes: [(e as Error).message] };
    }
    return { root, notes: this.sessionConfigs.hookNotes(root) };
  }

  /** The notes {@link importHooks} has logged, as `root\nnote`: each is logged once per root however often the tree imports. */
  private readonly loggedNotes = new Set<string>();

  /** What {@link importHooks} needs of each root, read from the store by {@link learn}: its workspace and whether a trusted folder holds it. */
  private readonly rootFacts = new Map<string, { workspace: string; trusted: boolean }>();

  /**
   * Reads into memory what the synchronous paths need of a session (its parent chain, its root's workspace and
   * trust), once per session; returns its root. Called before a session's turn starts and when a session is created.
   * @throws AirlockError `session_not_found`, `session_graph_invalid`.
   */
  private async learn(sessionId: string): Promise<string> {
    const root = await this.sessionRules.rootOf(sessionId);
    if (!this.rootFacts.has(root)) {
      const s = await this.store.requireSession(root);
      const trusted = (await this.trust.trustedFolderOf(s.workspace)) !== null;
      if (this.rootFacts.size > 10_000) this.rootFacts.clear();
      this.rootFacts.set(root, { workspace: s.workspace, trusted });
    }
    return root;
  }

  /** `~/.claude/settings.json`'s hooks, read once; its warnings are logged then. @throws AirlockError `config_invalid`. */
  private readUserHooks(): SettingsHooks {
    if (!this.userHooks) {
      const got = userSettingsHooks(rulesHome());
      for (const w of got.warnings) this.log(`airlock: WARNING: ${w}`);
      this.userHooks = got;
    }
    return this.userHooks;
  }

  /**
   * The hooks the tree rooted at `rootId` imports (session/config.ts `HookImporter`): the user's settings
   * hooks, then those of the root's workspace's `.claude/settings.json` and `.claude/settings.local.json`
   * when the workspace lies in a trusted folder. An untrusted workspace's files are only looked at to say
   * that their hooks are not run. Each note is logged once per root here.
   * @throws AirlockError `config_invalid` (a user or project settings file that cannot be used — one that cannot be read
   *   as a regular file, trusted or not; a trusted one that is not valid), `session_not_found`.
   */
  private importHooks(rootId: string, _config: Readonly<Config>): ImportedHooks {
    const session = this.rootFacts.get(rootId);
    if (!session) throw new AirlockError("session_not_found", `the root session ${rootId} was not read in this process yet; its hooks cannot be imported`);
    const { groups, notes } = treeSettingsHooks(this.readUserHooks(), rulesHome(), session.workspace, session.trusted);
    this.logNotes(rootId, notes);
    return { groups, notes };
  }

  /**
   * Logs each of `notes` (`airlock: WARNING: …`) unless it was logged for `rootId` already: once per root and note, as
   * the tree's import is made again after its run overrides are cleared (the SessionEnd hooks of `airlock run`'s
   * close), and {@link hookNotes} hands back what the import said.
   */
  private logNotes(rootId: string, notes: readonly string[]): void {
    if (this.loggedNotes.size > 10_000) this.loggedNotes.clear();
    for (const n of notes) {
      const key = `${rootId}\n${n}`;
      if (this.loggedNotes.has(key)) continue;
      this.loggedNotes.add(key);
      this.log(`airlock: WARNING: ${n}`);
    }
  }

  providerFor(session: Session): Provider {
    return this.providers.providerFor(session);
  }

  checkProvider(opts: { scriptOrigin?: string; requireModel?: boolean } = {}): void {
    this.providers.checkConfigured({ ...opts, configFile: this.configFileHint });
  }

  async createSession(input: CreateSessionInput): Promise<Session> {
    this.assertOpen();
    const s = await createSession(
      {
        store: this.store,
        config: this.config,
        defaultWorkspace: this.workspace,
        forceHeadless: this.forceHeadless,
        checkProvider: (s, parent) => this.providers.checkNewSession(s, parent),
      },
      input,
    );
    await this.learn(s.id);
    return s;
  }

  async startTurn(sessionId: string, message: string, opts: { parentSignal?: AbortSignal; turnId?: string; onLeased?: () => Promise<void> } = {}): Promise<StartedTurn> {
    this.assertOpen();
    if (this.role === "api") throw new AirlockError("internal", `this process runs airlock serve --role api: it never runs turns (session ${sessionId}); turns are queued for a worker`);
    const session = await this.store.requireSession(sessionId);
    await this.learn(session.id);
    this.assertOpen();
    const config = this.configFor(session);
    const started = loopStartTurn(
      {
        store: this.store,
        bus: this.bus,
        inflight: this.inflight,
        gate: this.gate,
        provider: () => this.providerFor(session),
        system: SYSTEM_PROMPTS[config.tools.offer],
        // `code`: static tools only (listing the MCP sources would start every server on every turn);
        // `direct` / `both` offer the MCP servers' tools too, so those are listed (started) once per turn
        tools: () => this.registry.specs(offeredToolFilter(config.tools.offer), { sources: config.tools.offer !== "code" }),
        maxIterations: config.limits.max_iterations,
        model: session.model,
        hooks: this.hooks,
        shrink: this.compactor,
        usage: this.meter,
        ...(this.fleet ? { turnLeases: this.fleet.turnLeases } : {}),
      },
      session,
      message,
      opts,
    );
    this.running.add(started.done);
    void started.done.finally(() => this.running.delete(started.done));
    return started;
  }

  async runTurn(sessionId: string, message: string, opts: { parentSignal?: AbortSignal } = {}): Promise<TurnResult> {
    return (await this.startTurn(sessionId, message, opts)).done;
  }

  async requestTurn(sessionId: string, message: string): Promise<{ turnId: string }> {
    this.assertOpen();
    if (this.role !== "api" || !this.fleet) return { turnId: (await this.startTurn(sessionId, message)).turnId };
    await this.store.requireSession(sessionId);
    const timeoutMs = this.config.fleet.queue_timeout_seconds * 1000;
    const queue = this.fleet.node.queue;
    const req = await queue.enqueue(sessionId, newId("turn"), message, timeoutMs);
    // fail closed, not a silent hang: unclaimed in time, it is withdrawn and ends no_worker (the turn never started)
    const timer = setTimeout(() => {
      this.queueTimers.delete(timer);
      queue
        .expire(req.id)
        .then((withdrawn) => {
          if (!withdrawn) return;
          this.announceEnd(sessionId, req.id, "failed", {
            code: "no_worker",
            message: `no worker claimed this turn within fleet.queue_timeout_seconds (${this.config.fleet.queue_timeout_seconds} s): start an airlock serve --role worker (or --role all) on this database`,
          });
        })
        .catch((e: unknown) => this.log(`airlock: withdrawing the unclaimed turn ${req.id} failed: ${e instanceof Error ? e.message : String(e)}`));
    }, timeoutMs);
    this.queueTimers.add(timer);
    return { turnId: req.id };
  }

  async cancelEverywhere(sessionId: string, reason = "cancelled by request"): Promise<boolean> {
    const here = this.cancel(sessionId, reason);
    if (!this.fleet) return here;
    const node = this.fleet.node;
    // the session's queued turn and its descendants' (a child replied to through an api node): none may run later
    const withdrawn = await node.queue.withdrawTree(sessionId);
    for (const w of withdrawn) this.announceEnd(w.sessionId, w.id, "cancelled", { code: "cancelled", message: w.sessionId === sessionId ? reason : `${reason} (an ancestor's turn was cancelled)` });
    // read before the cancel is sent: the node running it may end the turn (and release its lease) at once
    const live = await node.leases.liveInTree(sessionId);
    // the node running it (or a descendant) cancels when it reads this; sent even with no lease seen (a turn just claimed)
    await node.relay.sendCancel(sessionId, reason);
    return here || withdrawn.length > 0 || live;
  }

  async remoteInFlight(sessionId?: string): Promise<string[]> {
    if (!this.fleet) return [];
    return await this.fleet.node.leases.heldElsewhere(sessionId);
  }

  /**
   * Sessions whose claimed request is between its claim and its registration in flight here, with the reason of
   * a cancel that arrived meanwhile (null: none); `runRequest` cancels the turn as soon as it is registered.
   */
  private readonly starting = new Map<string, string | null>();

  /** A cancel relayed from another node: the session's turn (and descendants') here, including one still starting. */
  cancelRelayed(sessionId: string, reason: string): void {
    if (this.starting.has(sessionId)) this.starting.set(sessionId, reason);
    this.cancel(sessionId, reason);
  }

  /** Runs a turn request this node claimed (fleet/dispatch.ts) through `startTurn`; one that cannot start ends `failed` with its error. Never rejects. */
  async runRequest(req: TurnRequest): Promise<void> {
    const queue = this.fleet?.node.queue;
    // the claim is renewed until the turn holds its lease (a SessionStart hook may take longer than a lease TTL);
    // a claim left unrenewed is ended by any node's sweeper, and then this turn must not run
    let renewing: ReturnType<typeof setInterval> | undefined;
    if (queue) {
      const every = Math.max(200, Math.floor((this.config.fleet.lease_ttl_seconds * 1000) / 3));
      renewing = setInterval(() => {
        queue.renewClaim(req.id).catch((e: unknown) => this.log(`airlock: renewing the claim of turn request ${req.id} failed: ${e instanceof Error ? e.message : String(e)}`));
      }, every);
    }
    const stopRenewing = () => {
      if (renewing) clearInterval(renewing);
      renewing = undefined;
    };
    const onLeased = async () => {
      stopRenewing();
      if (queue && !(await queue.markStarted(req.id))) {
        throw new AirlockError("worker_lost", `turn request ${req.id} was claimed here but ended before its turn started (this process did not renew its claim for a lease TTL): it did not run`);
      }
    };
    try {
      this.starting.set(req.sessionId, null);
      let started: StartedTurn;
      try {
        started = await this.startTurn(req.sessionId, req.message, { turnId: req.id, onLeased });
      } finally {
        stopRenewing();
        const reason = this.starting.get(req.sessionId);
        this.starting.delete(req.sessionId);
        // a cancel that came while the turn was being registered: it applies now
        if (reason) this.cancel(req.sessionId, reason);
      }
      await started.done;
    } catch (e) {
      const err = e instanceof AirlockError ? e : new AirlockError("internal", e instanceof Error ? e.message : String(e));
      this.announceEnd(req.sessionId, req.id, "failed", { code: err.code, message: err.message });
    } finally {
      await this.fleet?.node.queue.finish(req.id).catch((e: unknown) => this.log(`airlock: marking turn request ${req.id} done failed: ${e instanceof Error ? e.message : String(e)}`));
    }
  }

  /** The `error` and `turn_finished` of a turn that never started (withdrawn, unclaimed, refused), on this bus (and so, relayed, every node's). */
  private announceEnd(sessionId: string, turnId: string, status: "failed" | "cancelled", error: { code: ErrorCode; message: string }): void {
    this.bus.publish(sessionId, "error", { session_id: sessionId, turn_id: turnId, ...error });
    this.bus.publish(sessionId, "turn_finished", { session_id: sessionId, turn_id: turnId, status, error });
  }

  /**
   * Publishes the end of each turn a sweep here took from a stopped worker (SPEC §5.8): `error` and
   * `turn_finished` (`failed`, code `interrupted`) on this bus, relayed to every node; its turn request ends `done`.
   * Never rejects.
   */
  async announceSwept(r: SweepResult): Promise<void> {
    for (const req of r.requests) {
      this.announceEnd(req.sessionId, req.id, "failed", {
        code: "worker_lost",
        message: `the worker that claimed turn request ${req.id} stopped before its turn started (its claim was not renewed for a lease TTL); the turn did not run`,
      });
    }
    for (const turnId of r.turns) {
      try {
        const row = await this.store.sql.get<{ session_id: string }>("SELECT session_id FROM turns WHERE id = ?", [turnId]);
        await this.fleet?.node.queue.finish(turnId);
        if (row) this.announceEnd(row.session_id, turnId, "failed", { code: "interrupted", message: WORKER_LOST_ERROR });
      } catch (e) {
        this.log(`airlock: announcing the swept turn ${turnId} failed: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
  }

  cancel(sessionId: string, reason = "cancelled by request"): boolean {
    const hit = this.inflight.cancel(sessionId, reason);
    let any = hit;
    for (const other of this.inflight.sessions()) {
      if (other === sessionId) continue;
      try {
        if (knownAncestors(this.store, other).includes(sessionId)) any = this.inflight.cancel(other, `${reason} (an ancestor's turn was cancelled)`) || any;
      } catch {
        // a session whose graph cannot be read is not a descendant we can prove; leave it
      }
    }
    return any;
  }

  setTokenBudget(rootSessionId: string, maxTokens: number): void {
    this.meter.setBudget(rootSessionId, maxTokens);
  }

  clearTokenBudget(rootSessionId: string): void {
    this.meter.clearBudget(rootSessionId);
  }

  setRunOverrides(rootSessionId: string, overrides: RunOverrides): void {
    this.sessionConfigs.set(rootSessionId, overrides);
  }

  clearRunOverrides(rootSessionId: string): void {
    this.sessionConfigs.clear(rootSessionId);
  }

  onClose(fn: () => Promise<void> | void): void {
    this.resources.defer(fn);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const deadline = Date.now() + CLOSE_DRAIN_MS;
    this.closeDeadline = deadline;
    for (const t of this.queueTimers) clearTimeout(t);
    this.queueTimers.clear();
    for (const s of this.inflight.sessions()) this.inflight.cancel(s, "the runtime is shutting down");
    if (this.running.size) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        Promise.allSettled([...this.running]),
        new Promise((r) => {
          timer = setTimeout(r, Math.max(0, deadline - Date.now()));
        }),
      ]);
      clearTimeout(timer);
    }
    // SessionEnd for the sessions this process started, while the store and bus are still open
    await this.hooks.close().catch((e: unknown) => console.error("airlock: SessionEnd hooks failed:", e));
    // the cards no cancelled turn withdrew, before the resources: their ends reach the SSE streams still open
    // (the HTTP server, released first, ends those streams after what was published to them)
    try {
      this.cards.close();
    } catch (e) {
      console.error("airlock: the pending cards could not be withdrawn:", e);
    }
    try {
      await this.resources.disposeAsync();
    } catch (e) {
      // the stack released every resource; report what failed (a SuppressedError chain when several did)
      for (let err: unknown = e; err; err = err instanceof SuppressedError ? err.suppressed : undefined) {
        console.error("airlock: a resource failed to close:", err instanceof SuppressedError ? err.error : err);
      }
    }
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  private assertOpen(): void {
    if (this.closed) throw new AirlockError("internal", "the runtime is closed");
  }
}

/**
 * Checks the keys of `config.tools` (per-tool permissions) against the registry, so a typo such as
 * `developer__shel: { permission: deny }` is not a deny rule silently dropped: a name under a built-in
 * extension (developer, interpreter, code_execution, subagent) must name a registered tool, any other
 * must fall under a configured MCP server (`server__tool`; its tools are unknown until it is listed).
 * @param configPath the config file: each line then names the key's line and column (`tools.developer__shel (line 3, column 3): …`).
 * @throws AirlockError `config_invalid`, one line per bad key: `tools.developer__shel: no such tool; did you mean developer__shell? …`.
 */
export function checkToolPermissions(config: Readonly<Config>, registry: ToolRegistry, configPath?: string | null): void {
  const problems: string[] = [];
  const at = locator(configPath);
  for (const name of Object.keys(config.tools)) {
    if (name === "offer") continue; // tools.offer: what the model is offered, not a tool
    const why = registry.checkToolName(name);
    if (why) problems.push(`tools.${name}${at(["tools", name])}: ${why}`);
  }
  if (problems.length) {
    throw new AirlockError("config_invalid", `${problems.join("\n")}\n(fix the key under tools: in the config; a permission for a tool that does not exist would never apply)`, {
      issues: problems,
    });
  }
}

/**
 * A tool call as hooks see it, for a transcript's `tool_use` block: Claude Code's name and input where the
 * tool has an alias (`Bash` + `{command}`), `mcp__server__tool` for an MCP tool (known or not yet listed),
 * else airlock's name and arguments (gate/inspectors/hooks.ts `claudeToolName`, `claudeToolInput`).
 */
function hookToolView(registry: ToolRegistry, name: string, args: unknown, workspace: string): ToolUseView {
  const def = registry.get(name);
  if (!def) return { name: claudeToolName({ name }), input: args };
  return { name: claudeToolName(def), input: claudeToolInput(def, args, workspace) };
}

/** `http://HOST:PORT` of the configured server (an IPv6 host in brackets): notification links before the server says where it listens. */
function serverUrlOf(server: Readonly<Config["server"]>): string {
  return `http://${server.host.includes(":") ? `[${server.host}]` : server.host}:${server.port}`;
}

/** The workspace's real path when it exists (sessions judge calls in the real path), else as given. */
function realWorkspace(ws: string): string {
  try {
    return realpathSync(ws);
  } catch {
    return ws;
  }
}
