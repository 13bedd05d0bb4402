/**
 * @module gate/gate
 * The judge of every tool call, direct or from a script, at any subagent depth (SPEC §5): reads the
 * calling context (fail closed: `gate_no_session`), validates the arguments, asks the inspectors
 * (security floor, hooks, mode + tool config, elevation), combines their verdicts (deny > ask > allow)
 * and then refuses, parks a card (holding no permit) or runs the call under a permit.
 */
import type { Bus, EventData } from "../bus/bus.ts";
import type { Inflight } from "../agent/inflight.ts";
import type { Config } from "../config/schema.ts";
import { AirlockError, toAirlockError, type ErrorCode } from "../errors.ts";
import { newId } from "../ids.ts";
import { sanitizedEnv } from "../launcher/env.ts";
import { ancestors } from "../session/graph.ts";
import type { Session } from "../session/types.ts";
import type { Store } from "../store/store.ts";
import { toolSpec, type ToolContext, type ToolDef, type ToolOutcome, type ToolSpec } from "../tool/tool.ts";
import type { Approvals } from "../approval/pending.ts";
import { isHeadlessChain } from "../approval/relay.ts";
import { BIND_MAX_BYTES, BIND_MAX_FILES, bindFiles, changedFiles, namedFiles, type FileBinding, type NamedFile } from "../approval/bound-files.ts";
import { GateContext, type CallContext } from "./context.ts";
import { elevationVerdict } from "./inspectors/elevation.ts";
import { claudeToolInput, claudeToolName, permissionModeFor, runPreToolUseHooks, type HookInput } from "./inspectors/hooks.ts";
import { modeVerdict } from "./inspectors/mode.ts";
import { securityFloor } from "./inspectors/security-floor.ts";
import type { Permits } from "./permits.ts";
import { combine, headlessRefusal, type Judgement, type Verdict } from "./verdict.ts";

/** The part of the tool registry the gate needs (src/tool/registry.ts implements it). */
export interface GateRegistry {
  resolve(name: string): Promise<ToolDef | undefined>;
  list(): Promise<ToolDef[]>;
  listCached?(): ToolDef[];
}

export interface GateDeps {
  store: Store;
  bus: Bus;
  inflight: Inflight;
  registry: GateRegistry;
  approvals: Pick<Approvals, "park">;
  permits: Permits;
  /** The session's effective config (run overrides, its own mode and sandbox folded in). */
  configFor(session: Session): Readonly<Config>;
  /** Passed to `ToolContext.runtime`. */
  runtime: unknown;
  /** Extra environment for hook processes (e.g. `AIRLOCK_CONFIG_DIR`); `AIRLOCK_PROJECT_DIR` is always the session workspace. */
  hookEnv?: Record<string, string>;
}

/** One tool call as the gate receives it. `callId`: this call's id; `parentCallId`: the script call that made it. */
export interface GateCall {
  name: string;
  args: unknown;
  callId: string;
  fromScript: boolean;
  parentCallId?: string;
  /** Cancels this call besides the turn's signal (a script's calls end with the script). */
  signal?: AbortSignal;
}

/** A refused call (headless runs list them in `refused_calls`). */
export interface RefusedCall {
  session_id: string;
  call_id: string;
  tool: string;
  code: string;
  reason: string;
  inspector?: string;
  from_script: boolean;
}

/** Most cards one call raises when the files it names keep changing after each allow; then it is refused `approval_stale`. */
export const MAX_STALE_CARDS = 5;

/** What `execute` did: ran the tool (its outcome), or found a named file changed since the approval (`now`: the new hashes). */
type Ran = { kind: "ran"; outcome: ToolOutcome } | { kind: "stale"; now: FileBinding[] };

const specCache = new WeakMap<ToolDef, ToolSpec>();
function specOf(def: ToolDef): ToolSpec {
  let s = specCache.get(def);
  if (!s) specCache.set(def, (s = toolSpec(def)));
  return s;
}

export class Gate {
  private refusedListeners = new Set<(r: RefusedCall) => void>();

  /** HOME and PATH of the sanitized environment, as the security floor resolves `~` and executables (read once: the process environment does not change under us). */
  private readonly floorEnv: { home?: string; PATH: string; dataDir?: string };
  /** Session rows by in-flight turn (weak: gone with the turn). */
  private readonly turnSessions = new WeakMap<object, Session>();

  constructor(private readonly deps: GateDeps) {
    const env = sanitizedEnv();
    this.floorEnv = { ...(env.HOME ? { home: env.HOME } : {}), PATH: env.PATH ?? "" };
    // airlock's data dir, so the floor refuses file tools there (no card)
    const dataDir = (deps.runtime as { dataDir?: unknown } | null | undefined)?.dataDir;
    if (typeof dataDir === "string" && dataDir !== "") this.floorEnv.dataDir = dataDir;
  }

  /** Listens to every refused call; returns the unsubscribe function. */
  onRefused(l: (r: RefusedCall) => void): () => void {
    this.refusedListeners.add(l);
    return () => this.refusedListeners.delete(l);
  }

  /**
   * Judges and runs one call in the current calling context (GateContext). Never throws for expected
   * failures: returns a ToolOutcome. Publishes `tool_request` and `tool_result` (ephemeral) on the
   * calling session's bus.
   */
  async call(req: GateCall): Promise<ToolOutcome> {
    const ctx = GateContext.get();
    if (!ctx) return this.refuse(null, req, "gate_no_session", "tool call refused: it was made outside any session turn (no calling context)");
    const turn = this.deps.inflight.get(ctx.sessionId);
    if (!turn || turn.turnId !== ctx.turnId) {
      return this.refuse(ctx.sessionId, req, "gate_no_session", `tool call refused: turn ${ctx.turnId} of session ${ctx.sessionId} is no longer running (it ended or was cancelled)`);
    }
    // the session row, read once per turn (the fields the gate uses never change after creation)
    let session = this.turnSessions.get(turn);
    if (!session) {
      session = this.deps.store.getSession(ctx.sessionId) ?? undefined;
      if (session) this.turnSessions.set(turn, session);
    }
    if (!session) return this.refuse(ctx.sessionId, req, "gate_no_session", `tool call refused: session ${ctx.sessionId} does not exist`);
    if (req.signal?.aborted) return this.refuse(session.id, req, "cancelled", "tool call refused: the script that made it has ended");
    const signal = req.signal ? AbortSignal.any([turn.controller.signal, req.signal]) : turn.controller.signal;
    this.deps.bus.publish(session.id, "tool_request", { session_id: session.id, call_id: req.callId, tool: req.name, arguments: req.args, from_script: req.fromScript });
    let outcome: ToolOutcome;
    try {
      outcome = await this.judgeAndRun(req, ctx, session, signal);
    } catch (e) {
      // a bug in an inspector or the approvals layer: fail closed, never run the tool
      outcome = this.refuse(session.id, req, "internal", `the gate failed while judging this call, so it was not run: ${(e as Error).message}`);
    }
    const res: EventData<"tool_result"> = { session_id: session.id, call_id: req.callId, tool: req.name, ok: outcome.ok };
    if (outcome.ok) res.result = outcome.result;
    else res.error = { code: outcome.error.code, message: outcome.error.message };
    this.deps.bus.publish(session.id, "tool_result", res);
    return outcome;
  }

  private async judgeAndRun(req: GateCall, ctx: CallContext, session: Session, signal: AbortSignal): Promise<ToolOutcome> {
    let def: ToolDef | undefined;
    try {
      def = await this.deps.registry.resolve(req.name);
    } catch (e) {
      // e.g. mcp_server_unavailable: the name is under an MCP server's prefix and that server could not list its tools
      const err = toAirlockError(e);
      return this.refuse(session.id, req, err.code, err.message);
    }
    if (!def) return this.refuse(session.id, req, "unknown_tool", `there is no tool named ${JSON.stringify(req.name)}; list the available tools with code_execution__list_tools`);
    if (req.fromScript && def.scriptable === false) {
      return this.refuse(session.id, req, "unknown_tool", `${def.name} cannot be called from a script; call it directly`);
    }
    const parsed = def.schema.safeParse(req.args ?? {});
    if (!parsed.success) {
      const issues = parsed.error.issues.map((i) => `${i.path.join(".") || "(arguments)"}: ${i.message}`).join("; ");
      return this.refuse(session.id, req, "invalid_arguments", `invalid arguments for ${def.name}: ${issues}`);
    }
    const args = parsed.data;
    let config: Readonly<Config>;
    try {
      config = this.deps.configFor(session);
    } catch (e) {
      // e.g. session_graph_invalid: without the root's run overrides (a recipe's hooks) the call cannot be judged
      const err = toAirlockError(e);
      return this.refuse(session.id, req, err.code, `the call was not run: its session's effective config could not be determined: ${err.message}`);
    }
    const judgement = await this.judge(def, args, req, session, config, signal);

    switch (judgement.kind) {
      case "deny": {
        const v = judgement.verdict;
        return this.refuse(session.id, req, v.code, v.reason, v.inspector);
      }
      case "ask": {
        let headless: boolean;
        try {
          headless = isHeadlessChain(this.deps.store, session.id);
        } catch (e) {
          const err = toAirlockError(e);
          return this.refuse(session.id, req, err.code, `no card was raised: ${err.message}`, judgement.primary.inspector);
        }
        if (headless) {
          const { code, reason } = headlessRefusal(judgement);
          return this.refuse(session.id, req, code, `no person can answer in this headless session, so the call was refused: ${reason}`, judgement.primary.inspector);
        }
        return this.askAndRun(def, args, req, ctx, session, config, signal, judgement);
      }
      case "allow":
        break;
    }
    const ran = await this.execute(def, args, req, ctx, session, config, signal, undefined, undefined);
    switch (ran.kind) {
      case "ran":
        return ran.outcome;
      case "stale": // only a call bound to files can go stale
        return this.refuse(session.id, req, "internal", "the gate found a stale approval on a call that had none; it was not run");
    }
  }

  /**
   * Parks a card for an ask and runs the call once a person allows it. The card is bound to the workspace
   * files the call names (approval/bound-files.ts): just before running (permit held) they are hashed again,
   * and a change refuses that allow as `approval_stale` (audit row `card_stale`) and parks a NEW card for the new
   * content (`replaces` = the old request id), after judging the call again. After {@link MAX_STALE_CARDS} cards
   * the call is refused `approval_stale`. A named file over `BIND_MAX_BYTES` refuses the call (`payload_too_large`).
   */
  private async askAndRun(
    def: ToolDef,
    args: unknown,
    req: GateCall,
    ctx: CallContext,
    session: Session,
    config: Readonly<Config>,
    signal: AbortSignal,
    first: Extract<Judgement, { kind: "ask" }>,
  ): Promise<ToolOutcome> {
    let judgement = first;
    const named = namedFiles(def, args, session.workspace);
    if (named.length > BIND_MAX_FILES) {
      // binding part of them would let an unbound one change after the allow
      return this.refuse(
        session.id,
        req,
        "payload_too_large",
        `no card was raised: the call names more than ${BIND_MAX_FILES} workspace files to run or write, more than an approval can bind to their content, so a person could not approve what would run; split the call`,
        judgement.primary.inspector,
      );
    }
    let files: FileBinding[] = [];
    try {
      if (named.length) files = await bindFiles(named, session.workspace, signal);
    } catch (e) {
      if (signal.aborted) return this.refuse(session.id, req, "cancelled", "the turn ended before a card was raised; the call was not run", judgement.primary.inspector);
      throw e;
    }
    let replaces: string | undefined;
    let staleNote = "";
    for (let round = 1; ; round++) {
      const big = files.find((f) => f.kind === "too_large");
      if (big) {
        return this.refuse(
          session.id,
          req,
          "payload_too_large",
          `no card was raised: ${big.path} is ${big.size} bytes, over the ${BIND_MAX_BYTES}-byte limit for binding an approval to a file's content, so a person could not approve what would run; use a smaller file`,
          judgement.primary.inspector,
        );
      }
      let outcome;
      try {
        outcome = await this.deps.approvals.park({
          homeSessionId: session.id,
          turnId: ctx.turnId,
          callId: req.callId,
          tool: def.name,
          arguments: req.args,
          inspector: judgement.primary.inspector,
          reason: staleNote + judgement.reason,
          requiresUserProof: judgement.userProof,
          ttlSeconds: config.approvals.ttl_seconds,
          signal,
          ...(files.length ? { files } : {}),
          ...(replaces ? { replaces } : {}),
        });
      } catch (e) {
        const err = toAirlockError(e);
        return this.refuse(session.id, req, err.code, `no card was raised: ${err.message}`, judgement.primary.inspector);
      }
      switch (outcome.decision) {
        case "allow_once":
          break;
        case "deny":
          return this.refuse(session.id, req, "denied", `a person denied this call${outcome.reason ? `: ${outcome.reason}` : ""}`, judgement.primary.inspector);
        case "expired":
          return this.refuse(session.id, req, "expired", `nobody answered the approval request in time (${config.approvals.ttl_seconds} s); the call was not run`, judgement.primary.inspector);
        case "cancelled":
          return this.refuse(session.id, req, "cancelled", "the turn ended while this call waited for approval; it was not run", judgement.primary.inspector);
      }
      if (!this.deps.inflight.isRunning(session.id, ctx.turnId)) {
        return this.refuse(session.id, req, "gate_no_session", `tool call refused: turn ${ctx.turnId} ended while the call waited for approval`);
      }
      const ran = await this.execute(def, args, req, ctx, session, config, signal, judgement.elevate, named.length ? { named, files } : undefined);
      switch (ran.kind) {
        case "ran":
          return ran.outcome;
        case "stale":
          break;
      }
      const changes = changedFiles(files, ran.now);
      const why = `${changes.join("; ")}: changed after the call was approved (${outcome.request_id}), so the allow was refused (approval_stale)`;
      this.deps.store.audit({
        kind: "card_stale",
        outcome: "refused",
        request_id: outcome.request_id,
        session_id: session.id,
        home_session_id: session.id,
        code: "approval_stale",
        detail: { tool: def.name, call_id: req.callId, approved: files, now: ran.now, changes },
      });
      if (round >= MAX_STALE_CARDS) {
        return this.refuse(session.id, req, "approval_stale", `${why}; the files kept changing under ${round} approvals, so the call was not run`, judgement.primary.inspector);
      }
      // the new content is judged again, as a new call would be
      const again = await this.judge(def, args, req, session, config, signal);
      switch (again.kind) {
        case "deny":
          return this.refuse(session.id, req, again.verdict.code, `${why}; judged again, it is refused: ${again.verdict.reason}`, again.verdict.inspector);
        case "ask":
          judgement = again;
          break;
        case "allow":
          break; // the person still approves the new content: keep the first ask's inspector and reason
      }
      files = ran.now;
      replaces = outcome.request_id;
      staleNote = `${why}; approve the new content: `;
    }
  }

  /** Runs the inspectors in order and combines their verdicts. Hooks are skipped when a cheaper inspector already denies. */
  private async judge(def: ToolDef, args: unknown, req: GateCall, session: Session, config: Readonly<Config>, signal: AbortSignal): Promise<Judgement> {
    const elevation = elevationVerdict(config.sandbox, req.args);
    const policy = elevation.kind === "ask" && elevation.elevate ? elevation.elevate : config.sandbox;
    const floor = securityFloor(def, args, { workspace: session.workspace, policy, ...this.floorEnv });
    const mode = modeVerdict(def, args, config.mode, config.tools);
    const cheap: Verdict[] = [floor, mode, elevation];
    if (cheap.some((v) => v.kind === "deny") || config.hooks.PreToolUse.length === 0) return combine(cheap);
    const input: HookInput = {
      hook_event_name: "PreToolUse",
      session_id: session.id,
      cwd: session.workspace,
      permission_mode: permissionModeFor(config.mode),
      tool_name: claudeToolName(def),
      tool_input: claudeToolInput(def, args, session.workspace),
      tool_use_id: req.callId,
      airlock_tool_name: def.name,
      parent_session_id: session.parent_session_id,
      ancestors: ancestors(this.deps.store, session.id),
    };
    const dataDir = (this.deps.runtime as { dataDir?: unknown } | undefined)?.dataDir;
    const hooks = await runPreToolUseHooks(
      config.hooks.PreToolUse,
      input,
      session.workspace,
      signal,
      { ...this.deps.hookEnv, AIRLOCK_PROJECT_DIR: session.workspace },
      { ...(typeof dataDir === "string" && dataDir !== "" ? { dataDir } : {}), allowUnenforced: config.allow_unenforced },
    );
    return combine([floor, ...hooks, mode, elevation]);
  }

  private async execute(
    def: ToolDef,
    args: unknown,
    req: GateCall,
    ctx: CallContext,
    session: Session,
    config: Readonly<Config>,
    signal: AbortSignal,
    elevatedPolicy: Config["sandbox"] | undefined,
    bound: { named: NamedFile[]; files: FileBinding[] } | undefined,
  ): Promise<Ran> {
    let specs: ToolSpec[] | undefined;
    // Only list_tools shows every tool: listing starts each MCP server, which a plain script run must not do.
    if (def.name === "code_execution__list_tools") specs = (await this.deps.registry.list()).filter((t) => t.scriptable !== false).map(specOf);
    let release: (() => void) | undefined;
    if (def.usesPermit !== false) {
      try {
        release = await this.deps.permits.acquire(signal);
      } catch (e) {
        const err = toAirlockError(e, "cancelled");
        return { kind: "ran", outcome: { ok: false, error: err.toJSON() } };
      }
    }
    if (bound) {
      // just before running, with the permit held: the files the person approved must be what runs
      let now: FileBinding[];
      try {
        now = await bindFiles(bound.named, session.workspace, signal);
      } catch (e) {
        release?.();
        return { kind: "ran", outcome: { ok: false, error: toAirlockError(signal.aborted ? new AirlockError("cancelled", "the turn ended before the call ran") : e).toJSON() } };
      }
      if (changedFiles(bound.files, now).length) {
        release?.();
        return { kind: "stale", now };
      }
    }
    const callCtx: CallContext = { ...ctx, callId: req.callId };
    const tctx: ToolContext = {
      session,
      turnId: ctx.turnId,
      callId: req.callId,
      fromScript: req.fromScript,
      signal,
      config,
      invoke: (name, a, opts) =>
        GateContext.provide(callCtx, () => this.call({ name, args: a, callId: newId("call"), fromScript: true, parentCallId: req.callId, ...(opts?.signal ? { signal: opts.signal } : {}) })),
      listTools: () => specs ?? (this.deps.registry.listCached?.() ?? []).filter((t) => t.scriptable !== false).map(specOf),
      runtime: this.deps.runtime,
    };
    if (req.parentCallId) tctx.parentCallId = req.parentCallId;
    if (elevatedPolicy) tctx.elevatedPolicy = elevatedPolicy;
    try {
      const result = await def.execute(args, tctx);
      return { kind: "ran", outcome: { ok: true, result } };
    } catch (e) {
      return { kind: "ran", outcome: { ok: false, error: toAirlockError(e, "tool_failed").toJSON() } };
    } finally {
      release?.();
    }
  }

  private refuse(sessionId: string | null, req: GateCall, code: ErrorCode, reason: string, inspector?: string): ToolOutcome {
    const rec: RefusedCall = { session_id: sessionId ?? "", call_id: req.callId, tool: req.name, code, reason, from_script: req.fromScript };
    if (inspector) rec.inspector = inspector;
    {
      for (const l of [...this.refusedListeners]) {
        try {
          l(rec);
        } catch (e) {
          console.error("airlock: refused-call listener failed:", e);
        }
      }
    }
    const error = new AirlockError(code, reason, inspector ? { inspector } : {});
    return { ok: false, error: error.toJSON() };
  }
}
