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
import type { Session, ToolCallRequest } from "../session/types.ts";
import type { Store } from "../store/store.ts";
import type { ToolOutcome, ToolSpec } from "../tool/tool.ts";
import type { Inflight } from "../session/inflight.ts";
import type { Provider } from "./providers/provider.ts";

/** The part of the gate the loop needs (src/gate/gate.ts implements it). */
export interface GateLike {
  call(req: { name: string; args: unknown; callId: string; fromScript: boolean; parentCallId?: string; onRewrite?: (args: Record<string, unknown>) => void }): Promise<ToolOutcome>;
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
 * @throws AirlockError `session_busy` when the session already runs a turn.
 * The returned `done` never rejects: failures are a `failed` TurnResult.
 */
export function startTurn(deps: LoopDeps, session: Session, userMessage: string, opts: { parentSignal?: AbortSignal } = {}): StartedTurn {
  const { store, bus, inflight } = deps;
  if (inflight.has(session.id)) {
    throw new AirlockError("session_busy", `session ${session.id} is already running a turn; wait for turn_finished or POST /sessions/${session.id}/cancel`);
  }
  const controller = new AbortController();
  const turn = store.startTurn(session.id);
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
  const done = runTurnBody(deps, session, turn.id, userMessage, signal).finally(unlink);
  return { turnId: turn.id, signal, done };
}

async function runTurnBody(deps: LoopDeps, session: Session, turnId: string, userMessage: string, signal: AbortSignal): Promise<TurnResult> {
  const { store, bus, inflight } = deps;
  const sid = session.id;
  const result: TurnResult = { session_id: sid, turn_id: turnId, status: "completed", answer: null, error: null, tool_calls: 0, iterations: 0 };
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
    const user = store.appendMessage({ session_id: sid, turn_id: turnId, role: "user", content: userMessage });
    bus.publish(sid, "message", { ...user }, { persisted: true });
    if (startContext.length) appendHookMessage(deps, sid, turnId, startContext.join("\n\n"));
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
      result.iterations++;
      const mt = await untilAborted(provider.complete({
        session: { id: sid, parent_session_id: session.parent_session_id, spawn_index: session.spawn_index },
        ...(deps.model ? { model: deps.model } : {}),
        system: deps.system,
        messages: store.listMessages(sid),
        tools,
        signal,
        onDelta: (text) => bus.publish(sid, "delta", { session_id: sid, turn_id: turnId, text }),
      }), signal);
      throwIfAborted(signal);
      const calls = mt.tool_calls.map((c) => (c.id ? c : { ...c, id: newId("call") }));
      const assistant = store.appendMessage({
        session_id: sid,
        turn_id: turnId,
        role: "assistant",
        content: mt.text,
        ...(calls.length ? { tool_calls: calls } : {}),
        ...(mt.provider_state ? { provider_state: mt.provider_state } : {}),
      });
      bus.publish(sid, "message", { ...assistant }, { persisted: true });
      if (calls.length === 0) {
        if (hooks) {
          const d = await untilAborted(hooks.beforeStop(hookTurn, mt.text, stopContinuations), signal);
          throwIfAborted(signal);
          if (d.stop === undefined && d.block !== undefined) {
            stopContinuations++;
            appendHookMessage(deps, sid, turnId, d.block);
            continue;
          }
        }
        result.answer = mt.text;
        break;
      }
      unanswered = [...calls];
      for (const call of calls) {
        throwIfAborted(signal);
        result.tool_calls++;
        // A call gets CALL_CANCEL_GRACE_MS to end on its own signal (its process tree killed, its card
        // withdrawn) and report that; one that does not is left behind and answered `cancelled`.
        // what ran: a PreToolUse hook's updatedInput replaces the model's arguments (PostToolUse is told those)
        let ran = call;
        const outcome = await untilAborted(runCall(deps, sid, turnId, call, signal, (args) => (ran = { ...call, arguments: args })), signal, CALL_CANCEL_GRACE_MS);
        // PostToolUse: the call ran; a cancel while its hooks run still stores the result (then ends the turn)
        let after: HookDirective | null = null;
        let afterError: unknown;
        if (hooks && outcome.ok) {
          try {
            after = await untilAborted(hooks.afterToolCall(hookTurn, ran, outcome), signal);
          } catch (e) {
            afterError = e;
          }
        }
        unanswered = unanswered.filter((c) => c !== call);
        const rendered = renderOutcome(outcome);
        const msg = store.appendMessage({
          session_id: sid,
          turn_id: turnId,
          role: "tool",
          content: after?.context.length ? [rendered, ...after.context].join("\n\n") : rendered,
          tool_call_id: call.id,
          name: call.name,
          is_error: !outcome.ok,
        });
        bus.publish(sid, "message", { ...msg }, { persisted: true });
        if (afterError !== undefined) throw afterError;
        if (after?.stop !== undefined) throw new AirlockError("hook_stopped", `a PostToolUse hook stopped the turn after ${call.name} ran (continue: false): ${after.stop}`);
      }
    }
  } catch (e) {
    const err = signal.aborted ? cancelError(signal) : toAirlockError(e, "internal");
    result.status = err.code === "cancelled" ? "cancelled" : "failed";
    result.error = { code: err.code, message: err.message };
    result.answer = null;
    if (err.code === "internal") console.error(`airlock: turn ${turnId} of ${sid} failed:`, e);
  } finally {
    try {
      if (unanswered.length) answerUnanswered(deps, sid, turnId, unanswered, result);
      store.finishTurn(turnId, result.status, { answer: result.answer, error: result.error ? `${result.error.code}: ${result.error.message}` : null });
    } catch (e) {
      console.error(`airlock: recording the end of turn ${turnId} failed:`, e);
    }
    inflight.unregister(sid, turnId);
    if (result.error) bus.publish(sid, "error", { session_id: sid, turn_id: turnId, ...result.error });
    bus.publish(sid, "turn_finished", {
      session_id: sid,
      turn_id: turnId,
      status: result.status,
      ...(result.answer !== null ? { answer: result.answer } : {}),
      ...(result.error ? { error: result.error } : {}),
    });
  }
  return result;
}

/** Stores and publishes a user-side message written by hooks (context or feedback), marked `name: "hook"`. */
function appendHookMessage(deps: LoopDeps, sid: string, turnId: string, content: string): void {
  const m = deps.store.appendMessage({ session_id: sid, turn_id: turnId, role: "user", content, name: HOOK_MESSAGE_NAME });
  deps.bus.publish(sid, "message", { ...m }, { persisted: true });
}

/** Runs one model-requested call through the gate inside its ALS calling context; `onRewrite`: told a hook's rewritten input. Never throws. */
async function runCall(deps: LoopDeps, sid: string, turnId: string, call: ToolCallRequest, signal: AbortSignal, onRewrite?: (args: Record<string, unknown>) => void): Promise<ToolOutcome> {
  if (call.invalid !== undefined) {
    return {
      ok: false,
      error: {
        code: "invalid_arguments",
        message: `the arguments of ${call.name} were not valid JSON (${truncate(call.invalid, 200)}); call it again with a JSON object`,
      },
    };
  }
  try {
    return await GateContext.provide({ sessionId: sid, turnId, callId: call.id }, () =>
      deps.gate.call({ name: call.name, args: call.arguments ?? {}, callId: call.id, fromScript: false, ...(onRewrite ? { onRewrite } : {}) }),
    );
  } catch (e) {
    if (signal.aborted) return { ok: false, error: cancelError(signal).toJSON() };
    const err = toAirlockError(e, "internal");
    if (err.code === "internal") console.error(`airlock: tool call ${call.name} threw:`, e);
    return { ok: false, error: err.toJSON() };
  }
}

/** Tool results for calls a cancelled/failed turn never ran, so the next turn's history is valid for every provider. */
function answerUnanswered(deps: LoopDeps, sid: string, turnId: string, calls: ToolCallRequest[], result: TurnResult): void {
  const why = result.status === "cancelled" ? "the turn was cancelled before this call ran" : "the turn failed before this call ran";
  const msgs = deps.store.appendMessages(
    calls.map((c) => ({
      session_id: sid,
      turn_id: turnId,
      role: "tool" as const,
      content: JSON.stringify({ error: { code: result.status === "cancelled" ? "cancelled" : "internal", message: why } }),
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

function cancelError(signal: AbortSignal): AirlockError {
  const r = signal.reason;
  if (r instanceof AirlockError) return r.code === "cancelled" ? r : new AirlockError("cancelled", r.message);
  return new AirlockError("cancelled", "the turn was cancelled");
}

function truncate(s: string, n: number): string {
  return s.length > n ? `${s.slice(0, n)}…` : s;
}
