/**
 * @module agent/loop
 * One turn of the agent loop (SPEC §1): model call → tool calls through the gate → model call … until
 * the model answers without tool calls, the turn is cancelled, it fails, or it hits `max_iterations`.
 * Hook events (SPEC §5) fire at its moments through the {@link LoopHooks} port: before the prompt is
 * stored, after each call, and when the model would end the turn (a Stop hook may keep it going).
 * The session is in the in-flight registry from the first line of the turn to a `finally`.
 */
import { AirlockError, toAirlockError, type ErrorCode } from "../errors.ts";
import type { Bus } from "../bus/bus.ts";
import { GateContext } from "../gate/context.ts";
import { newId } from "../ids.ts";
import type { Message, Session, ToolCallRequest, UsageSummary } from "../session/types.ts";
import type { Store } from "../store/store.ts";
import type { ToolOutcome, ToolSpec } from "../tool/tool.ts";
import type { Inflight } from "../session/inflight.ts";
import type { Provider, TokenUsage } from "./providers/provider.ts";

/** The part of the gate the loop needs (src/gate/gate.ts implements it). */
export interface GateLike {
  /** `signal` cancels this call besides the turn's signal (another call of the same model turn ended the turn); `onRewrite` is told a PreToolUse hook's rewritten input (what runs). */
  call(req: { name: string; args: unknown; callId: string; fromScript: boolean; parentCallId?: string; signal?: AbortSignal; onRewrite?: (args: Record<string, unknown>) => void }): Promise<ToolOutcome>;
}

export type TurnStatus = "completed" | "failed" | "cancelled";

/** How a turn ended; also the payload of `turn_finished` (plus `error`, `tool_calls`, `iterations`). */
export interface TurnResult {
  session_id: string;
  turn_id: string;
  status: TurnStatus;
  /** The model's final text (completed turns), else null. */
  answer: string | null;
  error: { code: ErrorCode; message: string } | null;
  /** Tool calls the model requested directly in this turn (script calls are counted by the gate's events). */
  tool_calls: number;
  /** Model calls made. */
  iterations: number;
  /** Tokens of this turn's model calls (session/types.ts `UsageSummary`); null when no call reported usage, or no ledger. */
  usage: UsageSummary | null;
}

/**
 * The loop's port to token accounting (the runtime implements it over store/usage.ts and the runs'
 * `limits.max_tokens_per_run`). Absent: usage is neither stored nor limited.
 */
export interface UsagePort {
  /** Before a model call. @throws AirlockError `token_budget` when the run this session belongs to has spent its budget. */
  beforeModelCall(session: Session): Promise<void>;
  /**
   * After a model call returned (its assistant message stored): stores its usage (`usage` undefined = not
   * reported). Returns the `token_budget` error when this call's run is now over its budget (the runtime
   * has then cancelled the run's other turns with it), else null.
   */
  afterModelCall(call: { session: Session; turnId: string; provider: string; model: string | null; usage: TokenUsage | undefined }): Promise<AirlockError | null>;
  /** The summed usage of a turn's model calls; null when none reported usage. */
  turnUsage(turnId: string): Promise<UsageSummary | null>;
}

export interface LoopDeps {
  store: Store;
  bus: Bus;
  inflight: Inflight;
  gate: GateLike;
  /** The session's provider; called inside the turn so a construction error (missing key) fails the turn. */
  provider(): Provider;
  system: string;
  /** The roster offered to the model. */
  tools(): Promise<ToolSpec[]>;
  maxIterations: number;
  model?: string | null;
  /** The hook events around the turn (agent/hooks.ts `AgentHooks`); none run when absent. */
  hooks?: LoopHooks;
  /** Shrinks what is sent as the history nears the model's context (agent/compact.ts); everything is sent when absent. */
  shrink?: HistoryShrinker;
  /** Token accounting and the run's token budget; none when absent. */
  usage?: UsagePort;
  /** Fleet mode (PostgreSQL storage, SPEC §5.8): the turn takes its session's lease before it runs (`session_busy` when another process holds it) and releases it when it ends. */
  turnLeases?: { acquire(sessionId: string, turnId: string): Promise<unknown>; release(turnId: string): Promise<void> };
}

/** The loop's port to history shrinking (agent/compact.ts `HistoryCompactor`): called once before, and once after, each model call. */
export interface HistoryShrinker {
  /** The messages to send: the stored history, or a shrunk copy (the store is never changed). @throws AirlockError (`hook_stopped`, a summary call's provider error): the turn fails. */
  prepare(turn: HookTurn, req: { messages: Message[]; system: string; tools: ToolSpec[]; provider: Provider; model?: string }): Promise<Message[]>;
  /** The usage the provider reported for the request just sent (calibrates the estimate). */
  observe(sessionId: string, usage: TokenUsage | undefined): void;
}

/** The turn a hook event fires in: its session, its id, and its signal (aborting it kills the hooks). */
export interface HookTurn {
  session: Session;
  turnId: string;
  signal: AbortSignal;
}

/** What the hooks of one moment tell the loop to do. */
export interface HookDirective {
  /** Text for the model, already marked as a hook's (stored as a message marked `name: "hook"`, or with a tool result). */
  context: string[];
  /** The event's block, with its reasons: the prompt is refused, or (Stop) the turn continues with this text. */
  block?: string;
  /** A hook's `continue: false`, with its `stopReason`: the turn stops after this point. */
  stop?: string;
}

/**
 * The loop's port to the hook events (implemented by agent/hooks.ts): one method per moment, each
 * saying what the loop must do. Methods never throw for a hook's answer or failure; they may throw
 * when the session cannot be read (the turn then fails, closed).
 */
export interface LoopHooks {
  /** Before the user's message is stored: `block` or `stop` → the prompt is not stored and the turn fails (`prompt_blocked` / `hook_stopped`); `context` follows the prompt. */
  turnStart(turn: HookTurn, prompt: string): Promise<HookDirective>;
  /** After a model-requested call returned its outcome: `context` is sent with the result; `stop` ends the turn (`hook_stopped`) once the result is stored. */
  afterToolCall(turn: HookTurn, call: ToolCallRequest, outcome: ToolOutcome): Promise<HookDirective>;
  /** The model answered without tool calls: `block` → the turn continues with it as a user-side message; `stop` or nothing → the turn ends. `continuations`: how often this turn already continued so. */
  beforeStop(turn: HookTurn, lastAssistantMessage: string, continuations: number): Promise<HookDirective>;
}

/** The `name` marking a user-side message written by a hook (context or feedback), not by the person. */
export const HOOK_MESSAGE_NAME = "hook";

export interface StartedTurn {
  turnId: string;
  /** Aborted when the turn is cancelled. */
  signal: AbortSignal;
  done: Promise<TurnResult>;
}

/**
 * Starts a turn of `session` with `userMessage`. Synchronous up to the registration in the in-flight
 * registry, so a concurrent second turn is refused at once.
 * @param opts.parentSignal aborting it cancels this turn (a subagent follows its parent's cancellation).
 * @param opts.turnId the turn's id when it was assigned before (a turn request queued by an `api` node, fleet/dispatch.ts); default a new one.
 * @param opts.onLeased awaited once the turn holds its session's lease, before anything runs; when it throws, the
 *   lease is released and the turn ends `failed` with that error (a claimed request swept meanwhile).
 * @throws AirlockError `session_busy` when the session already runs a turn.
 * The returned `done` never rejects: failures are a `failed` TurnResult.
 */
export function startTurn(
  deps: LoopDeps,
  session: Session,
  userMessage: string,
  opts: { parentSignal?: AbortSignal; turnId?: string; onLeased?: () => Promise<void> } = {},
): StartedTurn {
  const { store, bus, inflight } = deps;
  if (inflight.has(session.id)) {
    throw new AirlockError("session_busy", `session ${session.id} is already running a turn; wait for turn_finished or POST /sessions/${session.id}/cancel`);
  }
  const controller = new AbortController();
  const turn = { id: opts.turnId ?? newId("turn") };
  inflight.register(session.id, turn.id, controller);
  const signal = controller.signal;
  const parent = opts.parentSignal;
  let unlink = () => {};
  if (parent) {
    const onParentAbort = () => controller.abort(parent.reason ?? new AirlockError("cancelled", "the parent turn was cancelled"));
    if (parent.aborted) onParentAbort();
    else {
      parent.addEventListener("abort", onParentAbort, { once: true });
      unlink = () => parent.removeEventListener("abort", onParentAbort);
    }
  }
  const done = store
    .startTurn(session.id, undefined, turn.id)
    .then(async () => {
      if (!deps.turnLeases) return;
      try {
        await deps.turnLeases.acquire(session.id, turn.id);
      } catch (e) {
        // no lease (another process runs this session, or the database failed): the stored turn ends failed
        const err = toAirlockError(e, "internal");
        await store.finishTurn(turn.id, "failed", { answer: null, error: `${err.code}: ${err.message}` }).catch(() => undefined);
        throw e;
      }
      if (!opts.onLeased) return;
      try {
        await opts.onLeased();
      } catch (e) {
        // refused once leased (a claimed request swept meanwhile): it never runs; the lease goes back
        await deps.turnLeases.release(turn.id);
        const err = toAirlockError(e, "internal");
        await store.finishTurn(turn.id, "failed", { answer: null, error: `${err.code}: ${err.message}` }).catch(() => undefined);
        throw e;
      }
    })
    .then(
      () => runTurnBody(deps, session, turn.id, userMessage, signal),
      (e: unknown): TurnResult => {
        // the turn could not be stored or leased: it never started
        inflight.unregister(session.id, turn.id);
        const err = toAirlockError(e, "internal");
        if (err.code === "internal") console.error(`airlock: turn ${turn.id} of ${session.id} could not be stored:`, e);
        const error = { code: err.code, message: err.message };
        bus.publish(session.id, "error", { session_id: session.id, turn_id: turn.id, ...error });
        bus.publish(session.id, "turn_finished", { session_id: session.id, turn_id: turn.id, status: "failed", error });
        return { session_id: session.id, turn_id: turn.id, status: "failed", answer: null, error, tool_calls: 0, iterations: 0, usage: null };
      },
    )
    .finally(unlink);
  return { turnId: turn.id, signal, done };
}

async function runTurnBody(deps: LoopDeps, session: Session, turnId: string, userMessage: string, signal: AbortSignal): Promise<TurnResult> {
  const { store, bus, inflight } = deps;
  const sid = session.id;
  const result: TurnResult = { session_id: sid, turn_id: turnId, status: "completed", answer: null, error: null, tool_calls: 0, iterations: 0, usage: null };
  /** Tool calls of the last assistant message still waiting for a result (answered on cancel/failure so the history stays valid). */
  let unanswered: ToolCallRequest[] = [];
  try {
    bus.publish(sid, "turn_started", { session_id: sid, turn_id: turnId });
    const hooks = deps.hooks;
    const hookTurn: HookTurn = { session, turnId, signal };
    let startContext: string[] = [];
    if (hooks) {
      const d = await untilAborted(hooks.turnStart(hookTurn, userMessage), signal);
      throwIfAborted(signal);
      if (d.stop !== undefined) throw new AirlockError("hook_stopped", `a hook stopped the turn before the prompt was sent (continue: false): ${d.stop}`);
      if (d.block !== undefined) throw new AirlockError("prompt_blocked", d.block);
      startContext = d.context;
    }
    const user = await store.appendMessage({ session_id: sid, turn_id: turnId, role: "user", content: userMessage });
    bus.publish(sid, "message", { ...user }, { persisted: true });
    if (startContext.length) await appendHookMessage(deps, sid, turnId, startContext.join("\n\n"));
    /** How often this turn continued because a Stop hook blocked its end. */
    let stopContinuations = 0;
    const provider = deps.provider();
    const tools = await untilAborted(deps.tools(), signal);
    for (;;) {
      throwIfAborted(signal);
      if (result.iterations >= deps.maxIterations) {
        throw new AirlockError(
          "max_iterations",
          `the turn made ${deps.maxIterations} model calls without a final answer; raise limits.max_iterations or give the model a narrower task`,
        );
      }
      await deps.usage?.beforeModelCall(session);
      result.iterations++;
      const history = await store.listMessages(sid);
      const messages = deps.shrink ? await untilAborted(deps.shrink.prepare(hookTurn, { messages: history, system: deps.system, tools, provider, ...(deps.model ? { model: deps.model } : {}) }), signal) : history;
      throwIfAborted(signal);
      const mt = await untilAborted(provider.complete({
        session: { id: sid, parent_session_id: session.parent_session_id, spawn_index: session.spawn_index },
        ...(deps.model ? { model: deps.model } : {}),
        system: deps.system,
        messages,
        tools,
        signal,
        onDelta: (text) => bus.publish(sid, "delta", { session_id: sid, turn_id: turnId, text }),
      }), signal);
      throwIfAborted(signal);
      deps.shrink?.observe(sid, mt.usage);
      const calls = mt.tool_calls.map((c) => (c.id ? c : { ...c, id: newId("call") }));
      const assistant = await store.appendMessage({
        session_id: sid,
        turn_id: turnId,
        role: "assistant",
        content: mt.text,
        ...(calls.length ? { tool_calls: calls } : {}),
        ...(mt.provider_state ? { provider_state: mt.provider_state } : {}),
      });
      bus.publish(sid, "message", { ...assistant }, { persisted: true });
      unanswered = [...calls];
      // the run's token budget: checked after each model call; the calls it asked for are answered with the error
      const over = (await deps.usage?.afterModelCall({ session, turnId, provider: provider.name, model: deps.model ?? null, usage: mt.usage })) ?? null;
      if (over) throw over;
      if (calls.length === 0) {
        if (hooks) {
          const d = await untilAborted(hooks.beforeStop(hookTurn, mt.text, stopContinuations), signal);
          throwIfAborted(signal);
          if (d.stop === undefined && d.block !== undefined) {
            stopContinuations++;
            await appendHookMessage(deps, sid, turnId, d.block);
            continue;
          }
        }
        result.answer = mt.text;
        break;
      }
      result.tool_calls += calls.length;
      await runCalls(deps, hookTurn, calls, (call) => {
        unanswered = unanswered.filter((c) => c !== call);
      });
    }
  } catch (e) {
    const err = signal.aborted ? abortError(signal) : toAirlockError(e, "internal");
    result.status = err.code === "cancelled" ? "cancelled" : "failed";
    result.error = { code: err.code, message: err.message };
    result.answer = null;
    if (err.code === "internal") console.error(`airlock: turn ${turnId} of ${sid} failed:`, e);
  } finally {
    try {
      if (unanswered.length) await answerUnanswered(deps, sid, turnId, unanswered, result);
      result.usage = (await deps.usage?.turnUsage(turnId)) ?? null;
      await store.finishTurn(turnId, result.status, { answer: result.answer, error: result.error ? `${result.error.code}: ${result.error.message}` : null });
    } catch (e) {
      console.error(`airlock: recording the end of turn ${turnId} failed:`, e);
    }
    await deps.turnLeases?.release(turnId);
    inflight.unregister(sid, turnId);
    if (result.error) bus.publish(sid, "error", { session_id: sid, turn_id: turnId, ...result.error });
    bus.publish(sid, "turn_finished", {
      session_id: sid,
      turn_id: turnId,
      status: result.status,
      ...(result.answer !== null ? { answer: result.answer } : {}),
      ...(result.error ? { error: result.error } : {}),
      ...(result.usage ? { usage: result.usage } : {}),
    });
  }
  return result;
}

/** Stores and publishes a user-side message written by hooks (context or feedback), marked `name: "hook"`. */
async function appendHookMessage(deps: LoopDeps, sid: string, turnId: string, content: string): Promise<void> {
  const m = await deps.store.appendMessage({ session_id: sid, turn_id: turnId, role: "user", content, name: HOOK_MESSAGE_NAME });
  deps.bus.publish(sid, "message", { ...m }, { persisted: true });
}

/** What became of one call of a model turn: its outcome (absent: it did not end within its cancel grace) and its PostToolUse hooks' word. */
interface CallEnd {
  outcome?: ToolOutcome;
  /** Why there is no outcome (the turn's or the batch's cancel error). */
  lost?: unknown;
  after?: HookDirective;
  afterError?: unknown;
}

/**
 * Runs the calls of one model turn CONCURRENTLY, each through the gate (which takes its permit, so
 * `limits.max_concurrent_calls` bounds how many execute at once; a call parked on a card holds none and
 * holds no other call up), and stores their results in the model's order, so every provider's pairing
 * rules hold (all results of an assistant message follow it, in its order).
 *
 * - PostToolUse hooks of a call run as soon as that call has returned (concurrently with the calls
 *   still running); its hook context is stored with its result.
 * - A PostToolUse hook's `continue: false` cancels the calls still running at once (they are answered
 *   as they end: `cancelled`), and the turn ends `hook_stopped` once the results are stored. (A PreToolUse
 *   hook's cancels the whole turn in the gate, so every other call is cancelled as on any cancel.)
 * - Cancel: each call gets CALL_CANCEL_GRACE_MS to end on its own and report it (all at once, not one
 *   after another); a call that ended is stored with its real outcome, one that did not is left behind
 *   and answered `cancelled` in its place.
 * `stored(call)` is told of each call whose result was stored. Throws the turn's cancel error, a
 * PostToolUse failure, or `hook_stopped`, after storing every result it has.
 */
async function runCalls(deps: LoopDeps, turn: HookTurn, calls: ToolCallRequest[], stored: (call: ToolCallRequest) => void): Promise<void> {
  const { signal, turnId } = turn;
  const sid = turn.session.id;
  const batch = new AbortController();
  const callSignal = AbortSignal.any([signal, batch.signal]);
  const callTurn: HookTurn = { ...turn, signal: callSignal };
  /** The `hook_stopped` of the first PostToolUse stop in time, which cancelled the calls still running. */
  let stopped: AirlockError | undefined;
  const stop = (call: ToolCallRequest, reason: string): void => {
    if (stopped) return;
    stopped = new AirlockError("hook_stopped", `a PostToolUse hook stopped the turn after ${call.name} ran (continue: false): ${reason}`);
    batch.abort(new AirlockError("cancelled", `${stopped.message}; this call was cancelled`));
  };
  const ends = calls.map(async (call): Promise<CallEnd> => {
    let outcome: ToolOutcome;
    // what ran: a PreToolUse hook's updatedInput replaces the model's arguments (PostToolUse is told those)
    let ran = call;
    try {
      // a call gets CALL_CANCEL_GRACE_MS to end on its own signal (its process tree killed, its card
      // withdrawn) and report that; one that does not is left behind and answered `cancelled`
      outcome = await untilAborted(runCall(deps, sid, turnId, call, callSignal, (args) => (ran = { ...call, arguments: args })), callSignal, CALL_CANCEL_GRACE_MS);
    } catch (e) {
      return { lost: e };
    }
    if (!deps.hooks || !outcome.ok || callSignal.aborted) return { outcome };
    // PostToolUse: the call ran; a cancel while its hooks run still stores the result (then ends the turn)
    try {
      const after = await untilAborted(deps.hooks.afterToolCall(callTurn, ran, outcome), callSignal);
      if (after.stop !== undefined) stop(call, after.stop);
      return { outcome, after };
    } catch (e) {
      return { outcome, afterError: e };
    }
  });
  /** The first reason, in the model's order, to end the turn once these results are stored. */
  let end: unknown;
  for (let i = 0; i < calls.length; i++) {
    const call = calls[i]!;
    const r = await ends[i]!;
    // a call's hook failure or cancel caused by another call's stop is not a reason of its own
    const own = !batch.signal.aborted || signal.aborted;
    // not ended within its cancel grace: left behind, and answered with the cancel here, in its place
    const outcome: ToolOutcome = r.outcome ?? { ok: false, error: toAirlockError(r.lost, "cancelled").toJSON() };
    if (!r.outcome && own) end ??= r.lost;
    const rendered = renderOutcome(outcome);
    const msg = await deps.store.appendMessage({
      session_id: sid,
      turn_id: turnId,
      role: "tool",
      content: r.after?.context.length ? [rendered, ...r.after.context].join("\n\n") : rendered,
      tool_call_id: call.id,
      name: call.name,
      is_error: !outcome.ok,
    });
    stored(call);
    deps.bus.publish(sid, "message", { ...msg }, { persisted: true });
    if (r.afterError !== undefined && own) {
      end ??= r.afterError;
      // a PostToolUse failure ends the turn: the calls still running are cancelled
      if (!batch.signal.aborted) batch.abort(new AirlockError("cancelled", "another call of this model turn ended the turn; this call was cancelled"));
    }
  }
  end ??= stopped;
  if (end !== undefined) throw end;
}

/** Runs one model-requested call through the gate inside its ALS calling context; `onRewrite`: told a hook's rewritten input. Never throws. */
async function runCall(deps: LoopDeps, sid: string, turnId: string, call: ToolCallRequest, signal: AbortSignal, onRewrite?: (args: Record<string, unknown>) => void): Promise<ToolOutcome> {
  if (call.invalid !== undefined) {
    // never judged nor run; the watchers see it as a call answered with an error, as the model does
    const error = {
      code: "invalid_arguments" as const,
      message: `the arguments of ${call.name} were not valid JSON (${truncate(call.invalid, 200)}); call it again with a JSON object`,
    };
    deps.bus.publish(sid, "tool_request", { session_id: sid, call_id: call.id, tool: call.name, arguments: call.invalid, from_script: false });
    deps.bus.publish(sid, "tool_result", { session_id: sid, call_id: call.id, tool: call.name, ok: false, error });
    return { ok: false, error };
  }
  try {
    return await GateContext.provide({ sessionId: sid, turnId, callId: call.id }, () =>
      deps.gate.call({ name: call.name, args: call.arguments ?? {}, callId: call.id, fromScript: false, signal, ...(onRewrite ? { onRewrite } : {}) }),
    );
  } catch (e) {
    if (signal.aborted) return { ok: false, error: cancelError(signal).toJSON() };
    const err = toAirlockError(e, "internal");
    if (err.code === "internal") console.error(`airlock: tool call ${call.name} threw:`, e);
    return { ok: false, error: err.toJSON() };
  }
}

/**
 * Tool results for calls a cancelled/failed turn never ran or never saw end, so the next turn's history is
 * valid for every provider. The code is `cancelled` for a cancelled turn, else the turn's own error code
 * (`token_budget`, `hook_stopped`, …), with its message.
 */
async function answerUnanswered(deps: LoopDeps, sid: string, turnId: string, calls: ToolCallRequest[], result: TurnResult): Promise<void> {
  const why = result.status === "cancelled" ? "the turn was cancelled before this call returned" : `the turn failed before this call returned${result.error ? `: ${result.error.message}` : ""}`;
  const code = result.status === "cancelled" ? "cancelled" : (result.error?.code ?? "internal");
  const msgs = await deps.store.appendMessages(
    calls.map((c) => ({
      session_id: sid,
      turn_id: turnId,
      role: "tool" as const,
      content: JSON.stringify({ error: { code, message: why } }),
      tool_call_id: c.id,
      name: c.name,
      is_error: true,
    })),
  );
  for (const m of msgs) deps.bus.publish(sid, "message", { ...m }, { persisted: true });
}

/** The tool message content the model sees: a string result as is, anything else as JSON; errors as `{"error": {...}}`. */
export function renderOutcome(o: ToolOutcome): string {
  if (o.ok) return typeof o.result === "string" ? o.result : (JSON.stringify(o.result) ?? "null");
  return JSON.stringify({ error: o.error });
}

/** How long a cancelled tool call may take to end on its own before the turn ends without it, ms. */
const CALL_CANCEL_GRACE_MS = 500;

/**
 * `p`, or a rejection with the turn's `cancelled` error once `signal` has been aborted for `graceMs`
 * (0: at once), whichever is first:
 * whatever the turn waits on (an MCP server starting, a provider that never sends, a tool that does
 * not honour its signal), cancel ends the turn at once. What `p` was doing is stopped by its own
 * signal handling; its late result is dropped (an unanswered call gets a `cancelled` result).
 */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal, graceMs = 0): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const giveUp = (): void => reject(cancelError(signal));
    const onAbort = (): void => {
      if (graceMs > 0) timer = setTimeout(giveUp, graceMs);
      else giveUp();
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
    const settle = (): void => {
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
    };
    p.then(
      (v) => {
        settle();
        resolve(v);
      },
      (e: unknown) => {
        settle();
        reject(e);
      },
    );
  });
}

function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw cancelError(signal);
}

/**
 * Why an aborted turn ended: the run's `token_budget` error when the runtime stopped the run's turns
 * for it (the turn then fails), else the turn's `cancelled` error.
 */
function abortError(signal: AbortSignal): AirlockError {
  const r = signal.reason;
  if (r instanceof AirlockError && r.code === "token_budget") return r;
  return cancelError(signal);
}

function cancelError(signal: AbortSignal): AirlockError {
  const r = signal.reason;
  if (r instanceof AirlockError) return r.code === "cancelled" ? r : new AirlockError("cancelled", r.message);
  return new AirlockError("cancelled", "the turn was cancelled");
}

function truncate(s: string, n: number): string {
  return s.length > n ? `${s.slice(0, n)}…` : s;
}
