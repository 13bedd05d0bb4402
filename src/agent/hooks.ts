/**
 * @module agent/hooks
 * The hook events around the agent loop (Claude Code's hooks reference, code.claude.com/docs/en/hooks,
 * is the source of each event's input and meaning): `SessionStart` and `UserPromptSubmit` when a turn
 * starts, `PostToolUse` after a call ran, `Stop` / `SubagentStop` when the model would end the turn,
 * `Notification` when a card parks, `SessionEnd` when the runtime closes, `PreCompact` for history
 * shrinking. {@link AgentHooks} runs them through src/hook/ and tells the loop what to do (the loop's
 * `LoopHooks` port); what a hook says to the person is published as `hook_message`.
 */
import type { Bus } from "../bus/bus.ts";
import type { Config, HookEvent } from "../config/schema.ts";
import { assertNever } from "../errors.ts";
import { claudeToolInput, claudeToolName } from "../gate/inspectors/hooks.ts";
import { matchingHooks, matchQuery, runEventHooks, type HookAnswer, type HookCommonInput, type HookFailureCode, type HookInput, type SessionEndReason, type SessionStartSource } from "../hook/index.ts";
import { commonHookInput, hookContextFor, type HookSite } from "../hook/session.ts";
import type { Session, ToolCallRequest } from "../session/types.ts";
import type { AnyEvent } from "../bus/events.ts";
import type { ToolDef, ToolOutcome } from "../tool/tool.ts";
import type { HookDirective, HookTurn, LoopHooks } from "./loop.ts";

/** What the loop's hooks need from the runtime. */
export interface AgentHookDeps extends HookSite {
  bus: Bus;
  /** Session rows (Notification reads the card's home session). */
  store: HookSite["store"] & { getSession(id: string): Promise<Session | null>; listTurns(sessionId: string): Promise<{ id: string }[]> };
  /** The session's effective config (its `hooks`, `mode`, `limits`, `allow_unenforced`). */
  configFor(session: Session): Readonly<Config>;
  /**
   * False when no hook of `event` can apply to the session, told from memory (session/config.ts
   * `SessionConfigs.mayHaveHooks`); true when some may (then the session is read and its config asked). Absent: always true.
   */
  mayHaveHooks?(sessionId: string, event: HookEvent): boolean;
  /** A tool's definition by airlock name, for Claude Code's tool name and input in `PostToolUse`. */
  tool(name: string): Pick<ToolDef, "name" | "claude" | "schema"> | undefined;
}

/** How long `SessionEnd` hooks may run when the runtime closes, ms (then they are killed). */
export const SESSION_END_GRACE_MS = 5_000;

/** What an event does with a hook that failed (crashed, timed out, printed a broken answer). */
type OnFailure = "block" | "report";

/** The input fields of `E` beyond the common ones. */
type EventFields<E extends HookEvent> = Omit<Extract<HookInput, { hook_event_name: E }>, "hook_event_name" | keyof HookCommonInput>;

/** An empty directive: go on as if no hook ran (a fresh one each time: callers own what they get). */
const nothing = (): HookDirective => ({ context: [] });

/**
 * The loop's hooks ({@link LoopHooks}) and the hooks fired outside a turn (`Notification`,
 * `SessionEnd`), for one runtime. Nothing runs, and nothing is built, for an event whose list in the
 * session's effective config is empty.
 */
export class AgentHooks implements LoopHooks {
  /** Root sessions that started a turn in this process (`SessionStart` fired, if any; each gets `SessionEnd` on close). */
  private readonly started = new Set<string>();
  /** `SessionStart` context not yet stored because its turn's prompt was refused. */
  private readonly pendingStart = new Map<string, string[]>();
  /** Aborted by {@link close}: kills `Notification` hooks still running. */
  private readonly closing = new AbortController();
  private readonly detached = new Set<Promise<void>>();

  constructor(private readonly deps: AgentHookDeps) {}

  /**
   * Runs the hooks of `event` for `session` (every matching handler, in parallel) and reads what they
   * say: context for the model, a block, a stop; systemMessage / stop / failure (where `onFailure` is
   * `report`) are published as `hook_message`. A failure with `onFailure: "block"` is a block carrying
   * its code. Returns an empty directive at no cost when the event's list is empty.
   * @throws AirlockError `session_not_found` / `session_graph_invalid` when the session's chain cannot be read.
   */
  private async fire<E extends HookEvent>(
    event: E,
    session: Session,
    fields: EventFields<E>,
    o: { turnId?: string; signal?: AbortSignal; onFailure: OnFailure; config?: Readonly<Config> },
  ): Promise<HookDirective> {
    const config = o.config ?? this.deps.configFor(session);
    const matchers = config.hooks[event];
    if (matchers.length === 0) return nothing();
    // `fields` is typed per event (EventFields<E>); TypeScript cannot narrow the union on a generic E
    let common: HookCommonInput;
    try {
      common = await commonHookInput(session, config, this.deps);
    } catch (e) {
      // the transcript could not be brought up to date (or the chain read): every matching hook fails, never runs blind
      const query = matchQuery({ hook_event_name: event, ...(await commonHookInput(session, config, { ...this.deps, transcriptPath: () => "" }).catch(() => ({ session_id: session.id }))), ...fields } as unknown as HookInput);
      const reason = `the hook input could not be built, so the hook was not run: ${(e as Error).message}`;
      const failed = matchingHooks(matchers, query).map((h): HookAnswer => ({ hook: h.command, event, suppressOutput: false, failure: { code: "hook_error", reason } }));
      return this.read(event, session, failed, o.turnId, o.onFailure);
    }
    const input = { hook_event_name: event, ...common, ...fields } as unknown as HookInput;
    const answers = await runEventHooks(matchers, input, hookContextFor(session, config, this.deps, o.signal));
    return this.read(event, session, answers, o.turnId, o.onFailure);
  }

  /** Turns answers into one directive, publishing what is for the person. */
  private read(event: HookEvent, session: Session, answers: HookAnswer[], turnId: string | undefined, onFailure: OnFailure): HookDirective {
    const out: HookDirective = { context: [] };
    const blocks: string[] = [];
    const stops: string[] = [];
    const say = (a: HookAnswer, kind: "system_message" | "stopped" | "failed", message: string, code?: HookFailureCode) =>
      this.deps.bus.publish(session.id, "hook_message", {
        session_id: session.id,
        ...(turnId ? { turn_id: turnId } : {}),
        event,
        hook: a.hook,
        kind,
        message,
        ...(code ? { code } : {}),
      });
    for (const a of answers) {
      if (a.failure) {
        if (onFailure === "block") blocks.push(`${a.failure.code}: ${a.failure.reason}`);
        else say(a, "failed", a.failure.reason, a.failure.code);
        continue;
      }
      if (a.systemMessage !== undefined) say(a, "system_message", a.systemMessage);
      if (a.stop) {
        stops.push(a.stop.reason);
        say(a, "stopped", a.stop.reason);
      }
      if (a.blocked !== undefined) blocks.push(a.blocked);
      else if (a.decision === "block") blocks.push(a.reason || `hook ${JSON.stringify(a.hook)} blocked it`);
      if (a.text !== undefined) out.context.push(a.text);
      if (a.additionalContext !== undefined) out.context.push(a.additionalContext);
    }
    if (blocks.length) out.block = blocks.join("\n");
    if (stops.length) out.stop = stops.join("\n");
    return out;
  }

  /**
   * A turn starts, before its prompt is stored. For a root session only (Claude Code fires neither
   * event for subagents): `SessionStart` at the session's first turn in this process (`source:
   * "startup"` when it has no earlier turn, `"resume"` when it has: it was created before this process
   * started), then `UserPromptSubmit` with `prompt` (Claude Code's hooks reference, "SessionStart",
   * "UserPromptSubmit"). Exit 2 or `decision: "block"` of `UserPromptSubmit` — or a `UserPromptSubmit`
   * hook that failed (it may be a guard: airlock fails closed where Claude Code goes on) — refuses the
   * prompt (`block`, the reasons); additionalContext and plain stdout of either event are `context`.
   * `SessionStart` failures are reported and the turn goes on.
   */
  async turnStart(turn: HookTurn, prompt: string): Promise<HookDirective> {
    const { session, turnId, signal } = turn;
    if (session.parent_session_id !== null) return nothing();
    const config = this.deps.configFor(session);
    const context: string[] = [...(this.pendingStart.get(session.id) ?? [])];
    this.pendingStart.delete(session.id);
    let stop: string | undefined;
    const firstHere = !this.started.has(session.id);
    this.started.add(session.id);
    if (firstHere && config.hooks.SessionStart.length > 0) {
      const earlier = (await this.deps.store.listTurns(session.id)).some((t) => t.id !== turnId);
      const source: SessionStartSource = earlier ? "resume" : "startup";
      const d = await this.fire("SessionStart", session, { source }, { turnId, signal, onFailure: "report", config });
      context.push(...d.context.map((c) => hookNote("SessionStart", c)));
      stop = d.stop;
    }
    if (stop !== undefined) {
      if (context.length) this.pendingStart.set(session.id, context);
      return { context: [], stop };
    }
    const d = await this.fire("UserPromptSubmit", session, { prompt }, { turnId, signal, onFailure: "block", config });
    if (d.stop !== undefined || d.block !== undefined) {
      // the prompt is not stored: SessionStart's context waits for the next turn that gets through
      if (context.length) this.pendingStart.set(session.id, context);
      return { context: [], ...(d.stop !== undefined ? { stop: d.stop } : {}), ...(d.block !== undefined ? { block: `a UserPromptSubmit hook blocked the prompt, which was not sent to the model: ${d.block}` } : {}) };
    }
    return { context: [...context, ...d.context.map((c) => hookNote("UserPromptSubmit", c))] };
  }

  /**
   * A model-requested call ran and succeeded (Claude Code's hooks reference, "PostToolUse": after a tool
   * completes successfully). Input: Claude Code's `tool_name` / `tool_input` (as PreToolUse sends them),
   * `tool_use_id`, `tool_response` (the result the model gets), airlock's `airlock_tool_name`.
   * Exit 2 or `decision: "block"` → its reason, and `additionalContext`, are `context` sent to the model
   * with the result (the call already ran: nothing is hidden or undone). Failures are reported.
   */
  async afterToolCall(turn: HookTurn, call: ToolCallRequest, outcome: ToolOutcome): Promise<HookDirective> {
    const { session, turnId, signal } = turn;
    if (!outcome.ok) return nothing();
    const config = this.deps.configFor(session);
    if (config.hooks.PostToolUse.length === 0) return nothing();
    const def = this.deps.tool(call.name);
    const parsed = def?.schema.safeParse(call.arguments ?? {});
    const fields: EventFields<"PostToolUse"> = {
      tool_name: def ? claudeToolName(def) : call.name,
      tool_input: def && parsed?.success ? claudeToolInput(def, parsed.data, session.workspace) : (call.arguments ?? {}),
      tool_use_id: call.id,
      tool_response: outcome.result,
      airlock_tool_name: call.name,
    };
    const d = await this.fire("PostToolUse", session, fields, { turnId, signal, onFailure: "report", config });
    const context = [
      ...(d.block !== undefined ? [hookNote("PostToolUse", d.block, "feedback")] : []),
      ...d.context.map((c) => hookNote("PostToolUse", c)),
    ];
    return { context, ...(d.stop !== undefined ? { stop: d.stop } : {}) };
  }

  /**
   * The model answered without tool calls (Claude Code's hooks reference, "Stop" / "SubagentStop"):
   * `Stop` for a root session, `SubagentStop` for a subagent, with `stop_hook_active` (true once this
   * turn has continued because of a Stop hook) and `last_assistant_message`. Exit 2 or `decision:
   * "block"` → `block`: the loop continues with the reason. Bounded (airlock's addition, Claude Code has
   * none): after `limits.max_stop_continuations` continuations in one turn the hooks are not run again,
   * a `hook_message` of kind `skipped` says so, and the turn ends. A failed hook is reported and does not
   * keep the turn going.
   * @param continuations how often this turn has already continued because of a Stop hook.
   */
  async beforeStop(turn: HookTurn, lastAssistantMessage: string, continuations: number): Promise<HookDirective> {
    const { session, turnId, signal } = turn;
    const event = session.parent_session_id === null ? "Stop" : "SubagentStop";
    const config = this.deps.configFor(session);
    const matchers = config.hooks[event];
    if (matchers.length === 0) return nothing();
    const bound = config.limits.max_stop_continuations;
    if (continuations >= bound) {
      for (const h of matchingHooks(matchers, null)) {
        this.deps.bus.publish(session.id, "hook_message", {
          session_id: session.id,
          turn_id: turnId,
          event,
          hook: h.command,
          kind: "skipped",
          message: `the ${event} hooks kept this turn going ${continuations} time(s), the bound (limits.max_stop_continuations = ${bound}); they were not run again and the turn ended`,
        });
      }
      return nothing();
    }
    const d = await this.fire(event, session, { stop_hook_active: continuations > 0, last_assistant_message: lastAssistantMessage }, { turnId, signal, onFailure: "report", config });
    return { context: [], ...(d.stop !== undefined ? { stop: d.stop } : d.block !== undefined ? { block: hookNote(event, d.block, "feedback") } : {}) };
  }

  /**
   * `PreCompact` (Claude Code's hooks reference, "PreCompact"): fired by agent/compact.ts before what is
   * sent of a session's history shrinks, with `trigger` and `custom_instructions`. Cannot block:
   * failures and messages are published as `hook_message`; `stop` is a `continue: false`.
   */
  preCompact(turn: HookTurn, trigger: "manual" | "auto", customInstructions: string): Promise<HookDirective> {
    return this.fire("PreCompact", turn.session, { trigger, custom_instructions: customInstructions }, { turnId: turn.turnId, signal: turn.signal, onFailure: "report" });
  }

  /**
   * Fires `Notification` (Claude Code's hooks reference, "Notification", `notification_type:
   * "permission_prompt"`) for each card that parks, from `action_required` on the bus: once per card,
   * in its home session, with the text a person would see (`message`: the tool, who asks, the reason)
   * and a `title`. Runs detached: the card is parked and published before the hook starts, and nothing
   * waits for it; its failures, messages and `continue: false` are only published as `hook_message`.
   * Returns the unsubscribe function.
   */
  watchCards(): () => void {
    return this.deps.bus.subscribeAll((ev: AnyEvent) => {
      if (ev.type !== "action_required" || ev.data.surfaced_in !== ev.data.home_session_id) return;
      const card = ev.data;
      if (this.closing.signal.aborted) return;
      // no Notification hook for this session (the common case): no session read, no task. That read ran before the
      // card's SSE frame reached the socket (docs/performance.md, "Issue 20, park → root SSE", eighth session)
      if (this.deps.mayHaveHooks?.(card.home_session_id, "Notification") === false) return;
      // started on the next turn of the event loop: the card's publishing to its other surfaces goes first
      const p: Promise<void> = new Promise<void>((resolve) => setImmediate(resolve))
        .then(async () => {
          const session = await this.deps.store.getSession(card.home_session_id);
          if (!session || this.closing.signal.aborted) return;
          let config: Readonly<Config>;
          try {
            config = this.deps.configFor(session);
          } catch {
            return; // the gate refuses this session's calls too
          }
          if (config.hooks.Notification.length === 0) return;
          const who = session.parent_session_id === null ? `session ${session.id}` : `subagent session ${session.id} (of ${session.parent_session_id})`;
          const message = `airlock needs your permission to use ${card.tool} in ${who}: ${card.reason} [${card.inspector}]`;
          await this.fire("Notification", session, { message, notification_type: "permission_prompt", title: "airlock: permission needed" }, {
            signal: this.closing.signal,
            onFailure: "report",
            config,
          });
        })
        .then(() => {})
        .catch((e: unknown) => console.error("airlock: a Notification hook could not run:", e))
        .finally(() => this.detached.delete(p));
      this.detached.add(p);
    });
  }

  /**
   * Fires `SessionEnd` (`reason: "other"`; Claude Code's hooks reference, "SessionEnd") for each root
   * session that started a turn in this process, when the runtime closes; kills detached
   * `Notification` hooks. Waits at most `graceMs` (then the hooks are killed). Never throws.
   */
  async close(graceMs = SESSION_END_GRACE_MS): Promise<void> {
    this.closing.abort();
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(), graceMs);
    const reason: SessionEndReason = "other";
    try {
      await Promise.allSettled([
        ...[...this.detached],
        ...[...this.started].map(async (id) => {
          const session = await this.deps.store.getSession(id);
          if (!session) return;
          await this.fire("SessionEnd", session, { reason }, { signal: timeout.signal, onFailure: "report" });
        }),
      ]);
    } finally {
      clearTimeout(timer);
      this.started.clear();
    }
  }
}

/**
 * How hook text reaches the model: marked with its event, so the model (and a person reading the
 * history) can tell it from the user's words. `feedback`: a block's reason (PostToolUse, Stop).
 */
export function hookNote(event: HookEvent, text: string, kind: "context" | "feedback" = "context"): string {
  switch (kind) {
    case "context":
      return `[${event} hook context]\n${text}`;
    case "feedback":
      return `[${event} hook feedback]\n${text}`;
    default:
      return assertNever(kind, "hook note kind");
  }
}
