/**
 * @module gate/gate
 * The judge of every tool call, direct or from a script, at any subagent depth (SPEC §5), in named steps:
 * `call` reads the calling context (fail closed: `gate_no_session`); `admit` resolves the tool and
 * validates its arguments; `judge` asks the inspectors (security floor, hooks, mode + tool config,
 * elevation) and combines their verdicts (deny > ask > allow); `decide` then refuses, parks a card
 * (`askAndRun`, holding no permit) or runs the call under a permit (`runTool`).
 */
import type { Bus, EventData } from "../bus/bus.ts";
import type { Inflight } from "../session/inflight.ts";
import type { Config } from "../config/schema.ts";
import { AirlockError, toAirlockError, type ErrorCode } from "../errors.ts";
import { newId } from "../ids.ts";
import type { Session } from "../session/types.ts";
import type { Store } from "../store/store.ts";
import { argumentIssues, toolSpec, type ClientFiles, type ToolContext, type ToolDef, type ToolOutcome, type ToolSpec } from "../tool/tool.ts";
import type { Cards } from "../card/pending.ts";
import { isHeadlessChain } from "../card/relay.ts";
import { ancestors } from "../session/graph.ts";
import { BIND_MAX_BYTES, BIND_MAX_FILES, bindFiles, changedFiles, type FileBinding, type NamedFile } from "../card/bound-files.ts";
import { namedFiles } from "./named-files.ts";
import { newCallLog, writeCallJudged, type CallLog } from "./decision-log.ts";
import { GateContext, type CallContext } from "./context.ts";
import { requestedPolicy } from "./inspectors/elevation.ts";
import { defaultInspectors, type InspectedCall, type Inspector } from "./inspectors/index.ts";
import { nameRefusal } from "./inspectors/mode.ts";
import type { Permits } from "./permits.ts";
import { combine, headlessRefusal, isAnswerable, type DenyVerdict, type InspectorName, type Judgement, type Verdict } from "./verdict.ts";
import { withHookContext, type HookContextNote } from "../hook/index.ts";
import type { SessionRuleSets } from "./rules/session.ts";
import { suggestRule } from "./rules/suggest.ts";
import { sandboxWillRefuse } from "./will-fail.ts";
import { assertNever } from "../errors.ts";

/** The part of the tool registry the gate needs (src/tool/registry.ts implements it). */
export interface GateRegistry {
  resolve(name: string): Promise<ToolDef | undefined>;
  /** Every tool, MCP servers' included (starting those not yet running). */
  list(): Promise<ToolDef[]>;
}

export interface GateDeps {
  store: Store;
  bus: Bus;
  inflight: Inflight;
  registry: GateRegistry;
  cards: Pick<Cards, "park">;
  /** Fleet mode (SPEC §5.8): whether the turn's lease is still live in the database; checked just before every call runs (however it was allowed): a call whose turn lost its lease, or whose lease cannot be checked, is refused `lease_lost`. */
  leaseLive?: (turnId: string) => Promise<boolean>;
  permits: Permits;
  /** The session's effective config (run overrides, its own mode and sandbox folded in). */
  configFor(session: Session): Readonly<Config>;
  /** airlock's data dir as a real path: the floor refuses file tools there, hooks and tools never see it. */
  dataDir?: string;
  /** Extra environment for hook processes (e.g. `AIRLOCK_CONFIG_DIR`); `AIRLOCK_PROJECT_DIR` is always the session workspace. */
  hookEnv?: Record<string, string>;
  /** A session's JSONL transcript, for a hook input's `transcript_path` (may throw: the hook then fails, an ask). */
  transcriptPath?: (sessionId: string) => string | Promise<string>;
  /** The inspectors, in the order their verdicts combine; default {@link defaultInspectors}. */
  inspectors?: Inspector[];
  /** The session rules of each tree ("Allow for this session"): the default inspectors consult them, and cards offer a rule only when set. */
  sessionRules?: SessionRuleSets;
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
  /**
   * Told the new raw arguments each time a PreToolUse hook's `updatedInput` replaces the input (before they
   * are judged again), so the caller knows what ran: `PostToolUse` hooks get that input, as in Claude Code.
   */
  onRewrite?: (args: Record<string, unknown>) => void;
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

/**
 * Most times PreToolUse hooks may rewrite one call's input (`updatedInput`); a hook that rewrites it once
 * more is refused `hook_output_invalid`, naming the hook (a hook must settle on an input it lets through).
 */
export const MAX_HOOK_REWRITES = 3;

/** What the hooks of one call said besides their verdicts, across its judgements (rewrites, a stale re-judgement). */
interface HookTrail {
  /** `additionalContext` notes for the model, in the order given (each hook's text once). */
  notes: HookContextNote[];
  /** What was already published to the person (`hook_message`) or noted, so a hook run again is not repeated. */
  said: Set<string>;
}

/** A judgement, and the rewrite a PreToolUse hook asked for when no inspector denies (the call is then judged again). */
interface Judged {
  judgement: Judgement;
  rewrite?: {
    /** The new raw arguments. */
    args: Record<string, unknown>;
    /** The hooks that asked for them. */
    hooks: string[];
    /** The rewriting hooks' own decisions (an ask, an allow that answers the mode's ask): they apply to the new input. */
    carried: Verdict[];
  };
}

/** The sha256 of a call's arguments as JSON (the decision log records a rewrite without logging the arguments). */
function argsDigest(args: unknown): string {
  return new Bun.CryptoHasher("sha256").update(JSON.stringify(args ?? null)).digest("hex");
}

/** What running an approved, file-bound call did: ran the tool (its outcome), or found a named file changed since the approval (`now`: the new hashes). */
type BoundRun = { kind: "ran"; outcome: ToolOutcome } | { kind: "stale"; now: FileBinding[] };

/** A call whose tool exists and whose arguments its schema accepted, with the session's effective config. */
interface AdmittedCall {
  def: ToolDef;
  args: unknown;
  config: Readonly<Config>;
}


/**
 * What a `no_human_surface` refusal tells the model and the user to do (appended to its reason): the call can only be
 * asked of a person in a session someone watches.
 */
export const NO_SURFACE_TODO = "to be asked instead, run it where a person can answer: `airlock run` without --headless in a terminal, or a session of `airlock serve` watched in its console or with `airlock attach`";

/**
 * The rule a card offers for "Allow for this session": only when every ask on it is the mode's (the one
 * ask an allow rule answers; never the floor's, elevation's, a rule's, a hook's or per-tool config's),
 * and only when a rule covers the call (gate/rules/suggest.ts). Null otherwise.
 */
function sessionSuggestion(judgement: Extract<Judgement, { kind: "ask" }>, call: AdmittedCall, session: Session): string | null {
  if (judgement.userProof || judgement.elevate || !judgement.asks.every(isAnswerable)) return null;
  return suggestRule(call.def, call.args, session.workspace);
}

const specCache = new WeakMap<ToolDef, ToolSpec>();
function specOf(def: ToolDef): ToolSpec {
  let s = specCache.get(def);
  if (!s) specCache.set(def, (s = toolSpec(def)));
  return s;
}

export class Gate {
  private refusedListeners = new Set<(r: RefusedCall) => void>();
  private runListeners = new Set<(r: { session_id: string; call_id: string }) => void>();
  private clientFilesOf = new Set<(session: Session) => ClientFiles | undefined>();
  /** Root sessions whose person can no longer answer ({@link surfaceGone}); in memory, this process only. */
  private readonly goneSurfaces = new Set<string>();

  /** Session rows by in-flight turn (weak: gone with the turn). */
  private readonly turnSessions = new WeakMap<object, Session>();
  private readonly inspectors: Inspector[];
  /** The decision log's record of each call being handled (one `call_judged` audit row each, gate/decision-log.ts). */
  private readonly logs = new WeakMap<GateCall, CallLog>();
  /** What each call's hooks said besides their verdicts (a rewritten call's every version maps to one trail). */
  private readonly trails = new WeakMap<GateCall, HookTrail>();

  constructor(private readonly deps: GateDeps) {
    this.inspectors =
      deps.inspectors ??
      defaultInspectors({
        store: deps.store,
        ...(deps.dataDir ? { dataDir: deps.dataDir } : {}),
        ...(deps.hookEnv ? { hookEnv: deps.hookEnv } : {}),
        ...(deps.transcriptPath ? { transcriptPath: deps.transcriptPath } : {}),
        ...(deps.sessionRules ? { sessionRules: deps.sessionRules } : {}),
      });
  }

  /**
   * Marks that nobody can answer any more at root session `rootId`'s surface (an attended `airlock run` whose
   * terminal's input ended): from now on an ask anywhere in its tree is refused at once with `no_human_surface`,
   * as in a headless session, and no card is parked. Irreversible; in memory, this process only (the stored
   * `headless` flag is not changed). Cards parked before are left to their surface.
   */
  surfaceGone(rootId: string): void {
    this.goneSurfaces.add(rootId);
  }

  /** Listens to every refused call; returns the unsubscribe function. */
  onRefused(l: (r: RefusedCall) => void): () => void {
    this.refusedListeners.add(l);
    return () => this.refusedListeners.delete(l);
  }

  /**
   * Listens to every call the gate lets run, told just before its tool starts (after any card was allowed and a
   * permit was taken); returns the unsubscribe function. `airlock acp` shows the call `in_progress` then.
   */
  onRun(l: (r: { session_id: string; call_id: string }) => void): () => void {
    this.runListeners.add(l);
    return () => this.runListeners.delete(l);
  }

  /**
   * Registers where the file tools of a session do their I/O instead of the local disk (an ACP client's
   * `fs/read_text_file` / `fs/write_text_file`, `airlock acp`): `of(session)` answers for the sessions it
   * serves, undefined for the others. Only the I/O moves: the gate judges every call first and the file tools
   * run every path check before it (tool/files.ts). Returns the unregister function.
   */
  useClientFiles(of: (session: Session) => ClientFiles | undefined): () => void {
    this.clientFilesOf.add(of);
    return () => this.clientFilesOf.delete(of);
  }

  /**
   * Judges and runs one call in the current calling context (GateContext). Never throws for expected
   * failures: returns a ToolOutcome. Publishes `tool_request` and `tool_result` (ephemeral) on the
   * calling session's bus. Every call, refused or run, writes one `call_judged` audit row (the decision log).
   */
  async call(req: GateCall): Promise<ToolOutcome> {
    const log = newCallLog();
    this.logs.set(req, log);
    const outcome = await this.handle(req, log);
    writeCallJudged(this.deps.store, log, req, outcome);
    return outcome;
  }

  /** {@link call} but for the decision log's row. */
  private async handle(req: GateCall, log: CallLog): Promise<ToolOutcome> {
    const ctx = GateContext.get();
    if (!ctx) return this.refuse(null, req, "gate_no_session", "tool call refused: it was made outside any session turn (no calling context)");
    log.sessionId = ctx.sessionId;
    log.turnId = ctx.turnId;
    const turn = this.deps.inflight.get(ctx.sessionId);
    if (!turn || turn.turnId !== ctx.turnId) {
      return this.refuse(ctx.sessionId, req, "gate_no_session", `tool call refused: turn ${ctx.turnId} of session ${ctx.sessionId} is no longer running (it ended or was cancelled)`);
    }
    // the session row, read once per turn (the fields the gate uses never change after creation)
    let session = this.turnSessions.get(turn);
    if (!session) {
      session = (await this.deps.store.getSession(ctx.sessionId)) ?? undefined;
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
      // a bug in an inspector or the cards layer: fail closed, never run the tool
      outcome = this.refuse(session.id, req, "internal", `the gate failed while judging this call, so it was not run: ${(e as Error).message}`);
    }
    const res: EventData<"tool_result"> = { session_id: session.id, call_id: req.callId, tool: req.name, ok: outcome.ok };
    if (outcome.ok) res.result = outcome.result;
    else res.error = { code: outcome.error.code, message: outcome.error.message };
    this.deps.bus.publish(session.id, "tool_result", res);
    return outcome;
  }

  /**
   * The steps after the calling context is known: admit the call, judge it, act on the judgement. A PreToolUse
   * hook's `updatedInput` (Claude Code's hooks reference, "PreToolUse decision control") replaces the input and
   * the call is admitted and judged again FROM THE START — schema, floor, rules, hooks, mode, elevation — so a
   * rewrite never routes a call around them; the rewriting hook's own decision (allow: only the mode's ask;
   * ask) applies to the new input. After {@link MAX_HOOK_REWRITES} rewrites one more is refused
   * `hook_output_invalid`. The hooks' `additionalContext` is added to the outcome for the model (hook/context.ts).
   */
  private async judgeAndRun(req: GateCall, ctx: CallContext, session: Session, signal: AbortSignal): Promise<ToolOutcome> {
    const trail: HookTrail = { notes: [], said: new Set() };
    this.trails.set(req, trail);
    return withHookContext(await this.judgeRewritesAndRun(req, ctx, session, signal), trail.notes);
  }

  /** {@link judgeAndRun} but for the hooks' context notes: the rounds of admitting and judging, one per input a hook rewrote. */
  private async judgeRewritesAndRun(req: GateCall, ctx: CallContext, session: Session, signal: AbortSignal): Promise<ToolOutcome> {
    const log = this.logs.get(req);
    const by: string[] = [];
    let current = req;
    let carried: Verdict[] = [];
    for (let rewrites = 0; ; rewrites++) {
      const admitted = await this.admit(current, session);
      if ("ok" in admitted) return admitted;
      const judged = await this.judge(admitted, current, ctx, session, signal, carried);
      if (!judged.rewrite) return this.decide(judged.judgement, admitted, current, ctx, session, signal);
      if (rewrites >= MAX_HOOK_REWRITES) {
        const deny: DenyVerdict = {
          kind: "deny",
          inspector: "hook",
          code: "hook_output_invalid",
          reason: `hook ${judged.rewrite.hooks.map((h) => JSON.stringify(h)).join(", ")} rewrote the call's input (updatedInput) again after ${MAX_HOOK_REWRITES} rewrites, so the call was not run: a hook must settle on an input`,
          hook: judged.rewrite.hooks[0]!,
        };
        if (log) Object.assign(log, { judgement: { kind: "deny", verdict: deny }, verdicts: [...(log.verdicts ?? []), deny] });
        return this.decide({ kind: "deny", verdict: deny }, admitted, current, ctx, session, signal);
      }
      by.push(...judged.rewrite.hooks);
      const next: GateCall = { ...current, args: judged.rewrite.args };
      this.trails.set(next, this.trails.get(req)!);
      if (log) {
        this.logs.set(next, log);
        log.judgement = undefined; // the judgement of the input that runs is the one logged
        log.rewritten = { by: [...new Set(by)], rounds: rewrites + 1, original_sha256: argsDigest(req.args), final_sha256: argsDigest(next.args) };
      }
      this.deps.bus.publish(session.id, "tool_request", {
        session_id: session.id,
        call_id: req.callId,
        tool: req.name,
        arguments: next.args,
        from_script: req.fromScript,
        rewritten_by: judged.rewrite.hooks.join(", "),
      });
      carried = judged.rewrite.carried;
      current = next;
      req.onRewrite?.(next.args as Record<string, unknown>);
    }
  }

  /** Reads the session's effective config, refuses what the name alone decides (chat mode, a per-tool deny), resolves the tool, checks a script may call it and parses the arguments; a refusal otherwise. */
  private async admit(req: GateCall, session: Session): Promise<AdmittedCall | ToolOutcome> {
    let config: Readonly<Config>;
    try {
      config = this.deps.configFor(session);
    } catch (e) {
      // e.g. session_graph_invalid: without the root's run overrides (a recipe's hooks) the call cannot be judged
      const err = toAirlockError(e);
      return this.refuse(session.id, req, err.code, `the call was not run: its session's effective config could not be determined: ${err.message}`);
    }
    // refusals the name alone decides come before resolving it: resolving an MCP tool's name starts its server
    const early = nameRefusal(req.name, config.mode, config.tools);
    if (early) {
      const log = this.logs.get(req);
      if (log && !log.judgement) Object.assign(log, { judgement: { kind: "deny", verdict: early }, verdicts: [early], judgedAt: performance.now() });
      return this.refuse(session.id, req, early.code, early.reason, early.inspector);
    }
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
      return this.refuse(session.id, req, "invalid_arguments", `invalid arguments for ${def.name}: ${argumentIssues(parsed.error)}`);
    }
    return { def, args: parsed.data, config };
  }

  /** Acts on a judgement: refuse a deny, refuse an ask no person can answer (headless), park a card for the rest, run an allow. */
  private async decide(judgement: Judgement, call: AdmittedCall, req: GateCall, ctx: CallContext, session: Session, signal: AbortSignal): Promise<ToolOutcome> {
    switch (judgement.kind) {
      case "deny": {
        const v = judgement.verdict;
        return this.refuse(session.id, req, v.code, v.reason, v.inspector);
      }
      case "ask": {
        let headless: boolean;
        let gone = false;
        try {
          headless = await isHeadlessChain(this.deps.store, session.id);
          if (!headless && this.goneSurfaces.size > 0) {
            gone = this.goneSurfaces.has(session.id) || (await ancestors(this.deps.store, session.id)).some((id) => this.goneSurfaces.has(id));
          }
        } catch (e) {
          const err = toAirlockError(e);
          return this.refuse(session.id, req, err.code, `no card was raised: ${err.message}`, judgement.primary.inspector);
        }
        if (headless || gone) {
          const { code, reason } = headlessRefusal(judgement);
          const where = headless ? "in this headless session" : "any more (the run's terminal input ended)";
          // what to do, when a person's answer is what was missing (a hook's own failure code says its own)
          const todo = code === "no_human_surface" ? `; ${NO_SURFACE_TODO}` : "";
          return this.refuse(session.id, req, code, `no person can answer ${where}, so the call was refused: ${reason}${todo}`, judgement.primary.inspector);
        }
        return this.askAndRun(call, req, ctx, session, signal, judgement);
      }
      case "allow":
        return this.withPermit(call.def, signal, () => this.runTool(call, req, ctx, session, signal, undefined));
      default:
        return assertNever(judgement, "judgement");
    }
  }

  /**
   * Parks a card for an ask and runs the call once a person allows it. The card is bound to the workspace
   * files the call names (card/bound-files.ts): just before running (permit held) they are hashed again,
   * and a change refuses that allow as `approval_stale` (audit row `card_stale`) and parks a NEW card for the new
   * content (`replaces` = the old request id), after judging the call again. After {@link MAX_STALE_CARDS} cards
   * the call is refused `approval_stale`. A named file over `BIND_MAX_BYTES` refuses the call (`payload_too_large`).
   */
  private async askAndRun(
    call: AdmittedCall,
    req: GateCall,
    ctx: CallContext,
    session: Session,
    signal: AbortSignal,
    first: Extract<Judgement, { kind: "ask" }>,
  ): Promise<ToolOutcome> {
    let judgement = first;
    const named = namedFiles(call.def, call.args, session.workspace);
    let files = await this.bindForCard(named, req, session, signal, judgement.primary.inspector);
    if (!Array.isArray(files)) return files;
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
      const allowed = await this.parkCard(call, req, ctx, session, signal, judgement, { files, staleNote, ...(replaces ? { replaces } : {}) });
      if ("ok" in allowed) return allowed;
      const ran = await this.runBound(call, req, ctx, session, signal, judgement.elevate, named, files);
      switch (ran.kind) {
        case "ran":
          return ran.outcome;
        case "stale":
          break;
        default:
          return assertNever(ran, "bound run");
      }
      const changes = changedFiles(files, ran.now);
      const why = `${changes.join("; ")}: changed after the call was approved (${allowed.request_id}), so the allow was refused (approval_stale)`;
      this.deps.store.audit({
        kind: "card_stale",
        outcome: "refused",
        request_id: allowed.request_id,
        session_id: session.id,
        home_session_id: session.id,
        code: "approval_stale",
        detail: { tool: call.def.name, call_id: req.callId, approved: files, now: ran.now, changes },
      });
      if (round >= MAX_STALE_CARDS) {
        return this.refuse(session.id, req, "approval_stale", `${why}; the files kept changing under ${round} approvals, so the call was not run`, judgement.primary.inspector);
      }
      // the new content is judged again, as a new call would be
      const judged = await this.judge(call, req, ctx, session, signal);
      if (judged.rewrite) {
        const hooks = judged.rewrite.hooks.map((h) => JSON.stringify(h)).join(", ");
        return this.refuse(session.id, req, "hook_output_invalid", `${why}; judged again, hook ${hooks} rewrote its input (updatedInput), which the person did not approve; the call was not run`, "hook");
      }
      const again = judged.judgement;
      switch (again.kind) {
        case "deny":
          return this.refuse(session.id, req, again.verdict.code, `${why}; judged again, it is refused: ${again.verdict.reason}`, again.verdict.inspector);
        case "ask":
          judgement = again;
          break;
        case "allow":
          break; // the person still approves the new content: keep the first ask's inspector and reason
        default:
          return assertNever(again, "judgement");
      }
      files = ran.now;
      replaces = allowed.request_id;
      staleNote = `${why}; approve the new content: `;
    }
  }

  /** Hashes the files a call names for its card; a refusal when there are more than a card can bind or the turn ended. */
  private async bindForCard(named: NamedFile[], req: GateCall, session: Session, signal: AbortSignal, inspector: InspectorName): Promise<FileBinding[] | ToolOutcome> {
    if (named.length > BIND_MAX_FILES) {
      // binding part of them would let an unbound one change after the allow
      return this.refuse(
        session.id,
        req,
        "payload_too_large",
        `no card was raised: the call names more than ${BIND_MAX_FILES} workspace files to run or write, more than an approval can bind to their content, so a person could not approve what would run; split the call`,
        inspector,
      );
    }
    if (named.length === 0) return [];
    try {
      return await bindFiles(named, session.workspace, signal);
    } catch (e) {
      if (signal.aborted) return this.refuse(session.id, req, "cancelled", "the turn ended before a card was raised; the call was not run", inspector);
      throw e;
    }
  }

  /**
   * Parks a card and waits for its answer: `{request_id}` when a person allowed it and the turn still runs,
   * else the refusal (denied, expired, cancelled, no card raised, turn ended).
   */
  private async parkCard(
    call: AdmittedCall,
    req: GateCall,
    ctx: CallContext,
    session: Session,
    signal: AbortSignal,
    judgement: Extract<Judgement, { kind: "ask" }>,
    bound: { files: FileBinding[]; staleNote: string; replaces?: string },
  ): Promise<{ request_id: string } | ToolOutcome> {
    const ttl = call.config.approvals.ttl_seconds;
    const inspector = judgement.primary.inspector;
    let outcome;
    const log = this.logs.get(req);
    const parkedAt = performance.now();
    const suggested = this.deps.sessionRules ? sessionSuggestion(judgement, call, session) : null;
    const willFail = sandboxWillRefuse(call.def, call.args, {
      workspace: session.workspace,
      policy: requestedPolicy(call.config.sandbox, req.args),
      allowUnenforced: call.config.allow_unenforced,
      executionBackend: call.config.execution_backend,
      unixSockets: call.config.sandbox_unix_sockets,
      ...(this.deps.dataDir ? { dataDir: this.deps.dataDir } : {}),
    });
    try {
      outcome = await this.deps.cards.park({
        homeSessionId: session.id,
        turnId: ctx.turnId,
        callId: req.callId,
        tool: call.def.name,
        arguments: req.args,
        inspector,
        reason: bound.staleNote + judgement.reason,
        requiresUserProof: judgement.userProof,
        ttlSeconds: ttl,
        signal,
        ...(bound.files.length ? { files: bound.files } : {}),
        ...(bound.replaces ? { replaces: bound.replaces } : {}),
        ...(suggested ? { suggestedRule: suggested } : {}),
        ...(willFail ? { willFail } : {}),
      });
    } catch (e) {
      const err = toAirlockError(e);
      return this.refuse(session.id, req, err.code, `no card was raised: ${err.message}`, inspector);
    } finally {
      if (log) log.parkedMs += performance.now() - parkedAt;
    }
    if (log) {
      log.cards.push(outcome.request_id);
      log.answer = { request_id: outcome.request_id, decision: outcome.decision, ...(outcome.decided_in ? { decided_in: outcome.decided_in } : {}) };
    }
    switch (outcome.decision) {
      case "allow_once":
      case "allow_session":
        break;
      case "deny":
        // a deny nobody gave (the terminal's input ended) is not said to be a person's
        if (outcome.nobody) return this.refuse(session.id, req, "denied", `nobody could answer the approval request for this call${outcome.reason ? ` (${outcome.reason})` : ""}; it was not run`, inspector);
        return this.refuse(session.id, req, "denied", `a person denied this call${outcome.reason ? `: ${outcome.reason}` : ""}`, inspector);
      case "expired":
        return this.refuse(session.id, req, "expired", `nobody answered the approval request in time (${ttl} s); the call was not run`, inspector);
      case "cancelled":
        return this.refuse(session.id, req, "cancelled", "the turn ended while this call waited for approval; it was not run", inspector);
      default:
        return assertNever(outcome.decision, "card decision");
    }
    if (!this.deps.inflight.isRunning(session.id, ctx.turnId)) {
      return this.refuse(session.id, req, "gate_no_session", `tool call refused: turn ${ctx.turnId} ended while the call waited for approval`);
    }
    if (this.deps.leaseLive && !(await this.deps.leaseLive(ctx.turnId))) {
      return this.refuse(session.id, req, "lease_lost", `tool call refused: turn ${ctx.turnId} lost its lease while the call waited for approval (it expired or another process took the session over)`);
    }
    return { request_id: outcome.request_id };
  }

  /** Runs an allowed call under a permit, after checking (permit held) that the files it names are still what the person approved. */
  private runBound(
    call: AdmittedCall,
    req: GateCall,
    ctx: CallContext,
    session: Session,
    signal: AbortSignal,
    elevate: Config["sandbox"] | undefined,
    named: NamedFile[],
    approved: FileBinding[],
  ): Promise<BoundRun> {
    return this.withPermit(
      call.def,
      signal,
      async (): Promise<BoundRun> => {
        if (named.length) {
          const now = await this.rebind(named, session.workspace, signal);
          if (!Array.isArray(now)) return { kind: "ran", outcome: now };
          if (changedFiles(approved, now).length) return { kind: "stale", now };
        }
        return { kind: "ran", outcome: await this.runTool(call, req, ctx, session, signal, elevate) };
      },
      (outcome) => ({ kind: "ran", outcome }),
    );
  }

  /**
   * Runs the inspectors and combines their verdicts in inspector order, with `carried` (the decisions of hooks
   * that rewrote the input into this one). The cheap ones run first; the process ones (hooks) are skipped
   * when a cheap one already denies. Then what the hooks said besides their verdicts ({@link hookEffects}):
   * a `continue: false` stops the turn and decides the call (deny); a rewrite, when nothing denies, is
   * returned for the caller to judge the new input; two hooks rewriting it differently deny the call.
   */
  private async judge(call: AdmittedCall, req: GateCall, ctx: CallContext, session: Session, signal: AbortSignal, carried: Verdict[] = []): Promise<Judged> {
    const inspected: InspectedCall = {
      def: call.def,
      args: call.args,
      rawArgs: req.args,
      callId: req.callId,
      session,
      config: call.config,
      policy: requestedPolicy(call.config.sandbox, req.args),
      signal,
    };
    const verdicts: (Verdict[] | Promise<Verdict[]> | undefined)[] = this.inspectors.map((i) => (i.cost === "cheap" ? i.inspect(inspected) : undefined));
    const denied = verdicts.some((vs) => Array.isArray(vs) && vs.some((v) => v.kind === "deny"));
    if (!denied) this.inspectors.forEach((i, k) => i.cost === "process" && (verdicts[k] = i.inspect(inspected)));
    // await only what is pending (hooks running): a call with no hook to run is judged without a microtask hop
    const all = verdicts.some((vs) => vs instanceof Promise) ? await Promise.all(verdicts) : (verdicts as (Verdict[] | undefined)[]);
    const flat = [...all.flatMap((vs) => vs ?? []), ...carried];
    const judged = this.hookEffects(flat, combine(flat), req, ctx, session);
    const log = this.logs.get(req);
    if (log && !log.judgement) {
      log.judgement = judged.judgement;
      log.verdicts = flat;
      log.judgedAt = performance.now();
    }
    return judged;
  }

  /**
   * Acts on what PreToolUse hooks said besides their verdicts (gate/verdict.ts `HookEffects`; Claude Code's hooks
   * reference, "PreToolUse decision control" and "Common JSON fields"):
   * - `systemMessage` and an allow's `permissionDecisionReason`: published as `hook_message` (kind
   *   `system_message`) to the person, never to the model;
   * - `additionalContext`: noted for the model, added to the call's outcome (each hook's text once per call);
   * - `continue: false`: the call is refused with the hook's stop (it takes precedence over any decision), a
   *   `hook_message` (kind `stopped`) is published, and the calling turn is cancelled with the stop reason;
   * - `updatedInput`: unless the judgement denies, the rewrite to judge next (two different ones deny:
   *   which to run is ambiguous).
   */
  private hookEffects(flat: Verdict[], judgement: Judgement, req: GateCall, ctx: CallContext, session: Session): Judged {
    const trail = this.trails.get(req);
    const say = (hook: string, kind: "system_message" | "stopped", message: string) => {
      const key = `${kind}\0${hook}\0${message}`;
      if (trail?.said.has(key)) return;
      trail?.said.add(key);
      this.deps.bus.publish(session.id, "hook_message", { session_id: session.id, turn_id: ctx.turnId, event: "PreToolUse", hook, kind, message });
    };
    let stop: DenyVerdict | undefined;
    const rewrites: Extract<Verdict, { effects?: unknown }>[] = [];
    for (const v of flat) {
      const fx = v.effects;
      const hook = v.hook;
      if (!fx || hook === undefined) continue;
      if (fx.systemMessage !== undefined) say(hook, "system_message", fx.systemMessage);
      if (fx.allowReason !== undefined) say(hook, "system_message", fx.allowReason);
      if (fx.additionalContext !== undefined && trail && !trail.said.has(`context\0${hook}\0${fx.additionalContext}`)) {
        trail.said.add(`context\0${hook}\0${fx.additionalContext}`);
        trail.notes.push({ event: "PreToolUse", hook, context: fx.additionalContext });
      }
      if (fx.stop !== undefined && v.kind === "deny" && !stop) stop = v;
      if (fx.rewrite !== undefined) rewrites.push(v);
    }
    if (stop) {
      say(stop.hook!, "stopped", stop.effects!.stop!);
      const turn = this.deps.inflight.get(session.id);
      if (turn && turn.turnId === ctx.turnId) turn.controller.abort(new AirlockError("cancelled", stop.reason));
      return { judgement: { kind: "deny", verdict: stop } };
    }
    if (judgement.kind === "deny" || rewrites.length === 0) return { judgement };
    const args = rewrites[0]!.effects!.rewrite!;
    const hooks = [...new Set(rewrites.map((v) => v.hook!))];
    if (rewrites.some((v) => !Bun.deepEquals(v.effects!.rewrite, args, true))) {
      const verdict: DenyVerdict = {
        kind: "deny",
        inspector: "hook",
        code: "hook_output_invalid",
        reason: `hooks ${hooks.map((h) => JSON.stringify(h)).join(" and ")} rewrote the call's input (updatedInput) differently; which one to run is ambiguous, so the call was not run`,
        hook: hooks[0]!,
      };
      return { judgement: { kind: "deny", verdict } };
    }
    const carried = rewrites.flatMap((v): Verdict[] => {
      const { effects: _fx, ...bare } = v;
      return bare.kind === "ask" || (bare.kind === "allow" && bare.answersMode) ? [bare as Verdict] : [];
    });
    return { judgement, rewrite: { args, hooks, carried } };
  }

  /**
   * Runs `fn` holding a permit when the tool uses one (`usesPermit`, default true). Waiting for the permit
   * ends with the turn: `onCancelled` shapes that outcome.
   */
  private async withPermit<T>(def: ToolDef, signal: AbortSignal, fn: () => Promise<T>, onCancelled?: (o: ToolOutcome) => T): Promise<T> {
    if (def.usesPermit === false) return fn();
    let release: () => void;
    try {
      release = await this.deps.permits.acquire(signal);
    } catch (e) {
      const outcome: ToolOutcome = { ok: false, error: toAirlockError(e, "cancelled").toJSON() };
      return onCancelled ? onCancelled(outcome) : (outcome as T);
    }
    try {
      return await fn();
    } finally {
      release();
    }
  }

  /** Hashes the named files again; an error outcome when hashing fails (or the turn ended). */
  private async rebind(named: NamedFile[], workspace: string, signal: AbortSignal): Promise<FileBinding[] | ToolOutcome> {
    try {
      return await bindFiles(named, workspace, signal);
    } catch (e) {
      return { ok: false, error: toAirlockError(signal.aborted ? new AirlockError("cancelled", "the turn ended before the call ran") : e).toJSON() };
    }
  }

  /** Runs the tool in a context built for this call: its policy (the session's or the approved elevation), nested calls through the gate. */
  private async runTool(call: AdmittedCall, req: GateCall, ctx: CallContext, session: Session, signal: AbortSignal, elevatedPolicy: Config["sandbox"] | undefined): Promise<ToolOutcome> {
    // fencing (SPEC §5.8): whatever allowed it (policy, rule, card), a call runs only while its turn's lease is
    // live; a worker paused past its lease (swept or taken over, its heartbeat not yet back) never acts
    if (this.deps.leaseLive) {
      let live: boolean;
      try {
        live = await this.deps.leaseLive(ctx.turnId);
      } catch (e) {
        return this.refuse(session.id, req, "lease_lost", `tool call refused: the lease of turn ${ctx.turnId} could not be checked (${toAirlockError(e).message}); the call was not run`);
      }
      if (!live) return this.refuse(session.id, req, "lease_lost", `tool call refused: turn ${ctx.turnId} no longer holds its session's lease (it expired or another process took the session over); the call was not run`);
    }
    const { def, args, config } = call;
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
      // every tool a script may call, MCP servers' included: only list_tools asks, since listing starts each server
      listTools: async () => (await this.deps.registry.list()).filter((t) => t.scriptable !== false).map(specOf),
      policy: elevatedPolicy ?? config.sandbox,
    };
    if (this.deps.dataDir) tctx.dataDir = this.deps.dataDir;
    if (req.parentCallId) tctx.parentCallId = req.parentCallId;
    for (const of of this.clientFilesOf) {
      const files = of(session);
      if (files) {
        tctx.clientFiles = files;
        break;
      }
    }
    for (const l of [...this.runListeners]) {
      try {
        l({ session_id: session.id, call_id: req.callId });
      } catch (e) {
        console.error("airlock: run listener failed:", e);
      }
    }
    const log = this.logs.get(req);
    const startedAt = performance.now();
    if (log) log.ran = true;
    try {
      return { ok: true, result: await def.execute(args, tctx) };
    } catch (e) {
      return { ok: false, error: toAirlockError(e, "tool_failed").toJSON() };
    } finally {
      if (log) log.runMs += performance.now() - startedAt;
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
