/**
 * @module tool/subagent
 * `subagent__spawn` and `subagent__watch` (SPEC §4, §10): a child session inheriting its parent's
 * workspace, mode, sandbox, headless flag, provider/model and privacy tier, running one turn with
 * the instructions as its user message. Cancelling the parent's turn cancels its running children.
 */
import { z } from "zod";
import { AirlockError, type ErrorCode } from "../errors.ts";
import type { Session } from "../session/types.ts";
import type { Turn } from "../store/store.ts";
import { defineTool, type ToolDef } from "./tool.ts";

/** Longest wait of one `subagent__watch` call, seconds. */
export const MAX_WATCH_S = 3600;

/** How a child's turn ended, as its parent sees it (the agent loop's `TurnResult` has these fields). */
export interface ChildResult {
  session_id: string;
  status: string;
  answer: string | null;
  error: { code: ErrorCode; message: string } | null;
}

/**
 * What the subagent tools need of the runtime: a narrow port the composition root (src/runtime.ts)
 * implements, so tools never see the runtime itself.
 */
export interface SubagentPort {
  /** Creates a child session of `parentId` (inheritance and privacy rules apply). @throws AirlockError `privacy_violation`, `session_not_found`. */
  createChild(parentId: string, opts: { privacy?: "public" | "private" }): Promise<Session>;
  /** Starts a turn of `sessionId`; aborting `parentSignal` cancels it. @throws AirlockError `session_busy`. */
  startTurn(sessionId: string, message: string, opts: { parentSignal: AbortSignal }): Promise<{ done: Promise<ChildResult> }>;
  /** The signal of the session's in-flight turn `turnId`, or undefined when that turn is not the one running. */
  turnSignal(sessionId: string, turnId: string): AbortSignal | undefined;
  /** Background child turns by child session id, started in this process. */
  readonly background: Map<string, Promise<ChildResult>>;
  getSession(id: string): Promise<Session | null>;
  listTurns(sessionId: string): Promise<Turn[]>;
}

/** What a finished child reports to its parent. */
function report(r: ChildResult): Record<string, unknown> {
  return { session_id: r.session_id, status: r.status, answer: r.answer, ...(r.error ? { error: r.error } : {}) };
}

export const SpawnArgs = z.strictObject({
  instructions: z.string().min(1).describe("The task for the subagent, as its first user message."),
  background: z.boolean().optional().describe("Return the child's session id at once instead of waiting for its answer."),
  privacy: z.enum(["public", "private"]).optional().describe("Must equal this session's tier (a child inherits it)."),
});

export const WatchArgs = z.strictObject({
  session_id: z.string().min(1).describe("A background child of this session, as returned by subagent__spawn."),
  timeout_s: z
    .number()
    .positive()
    .max(MAX_WATCH_S)
    .default(300)
    .describe("Seconds to wait for the answer; on timeout the result says status running."),
});

/** The two subagent tools (`usesPermit: false`: they mostly wait, and a waiting parent must not starve its child). */
export function subagentTools(rt: SubagentPort): ToolDef[] {
  const spawn = defineTool({
    name: "subagent__spawn",
    description:
      "Start a subagent: a child session with this session's workspace, mode and sandbox that works on `instructions` " +
      "and answers. Waits for its answer ({session_id, status, answer}) unless background is true, which returns " +
      "{session_id} at once; then use subagent__watch to get the answer.",
    schema: SpawnArgs,
    readOnly: true,
    usesPermit: false,
    async execute(args, ctx) {
      const child = await rt.createChild(ctx.session.id, args.privacy ? { privacy: args.privacy } : {});
      // The parent's turn signal: cancelling the parent's turn cancels the child, in the foreground and the background.
      const parentSignal = rt.turnSignal(ctx.session.id, ctx.turnId) ?? ctx.signal;
      const started = await rt.startTurn(child.id, args.instructions, { parentSignal });
      if (args.background) {
        rt.background.set(child.id, started.done);
        return { session_id: child.id };
      }
      return report(await started.done);
    },
  });

  const watch = defineTool({
    name: "subagent__watch",
    description:
      "Wait up to timeout_s seconds for the answer of a background subagent this session spawned. " +
      "Returns {session_id, status, answer}; status is running when it has not finished yet.",
    schema: WatchArgs,
    readOnly: true,
    usesPermit: false,
    async execute(args, ctx) {
      const child = await rt.getSession(args.session_id);
      if (!child || child.parent_session_id !== ctx.session.id) {
        throw new AirlockError("not_found", `${args.session_id} is not a subagent of this session; pass a session_id returned by your own subagent__spawn`);
      }
      const pending = rt.background.get(child.id);
      if (pending) {
        let timer: ReturnType<typeof setTimeout> | undefined;
        let onAbort: (() => void) | undefined;
        const outcome = await Promise.race([
          pending.then((r) => ({ done: r })),
          new Promise<{ timeout: true }>((resolve) => {
            timer = setTimeout(() => resolve({ timeout: true }), args.timeout_s * 1000);
          }),
          new Promise<{ cancelled: true }>((resolve) => {
            onAbort = () => resolve({ cancelled: true });
            if (ctx.signal.aborted) onAbort();
            else ctx.signal.addEventListener("abort", onAbort, { once: true });
          }),
        ]);
        clearTimeout(timer);
        if (onAbort) ctx.signal.removeEventListener("abort", onAbort);
        if ("cancelled" in outcome) throw new AirlockError("cancelled", "the turn was cancelled while waiting for the subagent");
        if ("timeout" in outcome) return { session_id: child.id, status: "running", answer: null };
        return report(outcome.done);
      }
      // Not started in this process (or finished before a restart): report its last stored turn.
      const turns = await rt.listTurns(child.id);
      const last = turns[turns.length - 1];
      if (!last) return { session_id: child.id, status: "not_started", answer: null };
      return { session_id: child.id, status: last.status, answer: last.answer, ...(last.error ? { error: last.error } : {}) };
    },
  });

  return [spawn, watch];
}
