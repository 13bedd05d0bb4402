/**
 * @module bus/events
 * The events of the bus as zod schemas, one per event, keyed by event name in {@link Events} (SPEC §6).
 * They are the contract of what SSE clients and `stream-json` lines carry: `publish` takes only
 * `EventData<E>` of its event (a wrong or missing field fails `tsc`), subscribers get {@link AnyEvent},
 * a union they `switch` on by `type`, and `bus/events.test.ts` checks docs/api.md and docs/spec.md
 * against these schemas. The wire shapes of a card (and the files it binds) live here too, so the bus
 * depends on nothing above it (card/ re-exports them), as script/protocol.ts does for the worker.
 */
import { z } from "zod";
import { HOOK_EVENTS } from "../config/schema.ts";
import { ERROR_CODES } from "../errors.ts";
import { Message, Session, UsageSummary } from "../session/types.ts";

/**
 * One named file as it was when hashed (card/bound-files.ts hashes it). `path`: workspace-relative, as the
 * call spells it. `kind`: `file` (a regular file: `size` bytes, `sha256` hex), `missing`, `symlink` (`link` is
 * the link text; `sha256`/`size` of the regular file it leads to, if any), `other` (a folder, FIFO, socket,
 * device: never opened), `too_large` (a regular file over `BIND_MAX_BYTES`: `size` only).
 */
export const FileBinding = z.object({
  path: z.string(),
  kind: z.enum(["file", "missing", "symlink", "other", "too_large"]),
  size: z.number().optional(),
  sha256: z.string().optional(),
  link: z.string().optional(),
  /** The real folder the file is in, present only when a symlink on the way (`sub` → elsewhere) leads out of the spelled folder. */
  parent: z.string().optional(),
});
export type FileBinding = z.infer<typeof FileBinding>;

/** The card as published in `action_required` and listed by `GET /sessions/:id/actions` (SPEC §5). */
export const Card = z.strictObject({
  request_id: z.string(),
  home_session_id: z.string(),
  surfaced_in: z.string(),
  tool: z.string(),
  arguments: z.unknown(),
  inspector: z.string(),
  reason: z.string(),
  requires_user_proof: z.boolean(),
  expires_at: z.string(),
  user_only: z.literal(true),
  /** The workspace files the call names (its script, its write target) with their sha256, as hashed when the card was raised; present when it names any. An allow runs only if they are unchanged. */
  files: z.array(FileBinding).optional(),
  /** The card an allow of which was refused as `approval_stale` because a named file changed; this card asks about the new content. */
  replaces: z.string().optional(),
  /** The narrowest permission rule covering the call (Claude Code's syntax, e.g. `Bash(npm run test:*)`), offered as "Allow for this session" (`allow_session`); absent on the floor's, elevation's, a rule's or a hook's asks. */
  suggested_rule: z.string().optional(),
  /** Why allowing will not help: a write the sandbox policy the call would run under still refuses, e.g. `allowing this will not help: the sandbox policy workspace-write will still refuse writing /etc/x (…)`; present only when that is certain (gate/will-fail.ts). */
  will_fail: z.string().optional(),
});
export type Card = z.infer<typeof Card>;

/** An error as events carry it: an AirlockError code and its message. */
export const EventError = z.strictObject({ code: z.enum(ERROR_CODES), message: z.string() });
export type EventError = z.infer<typeof EventError>;

/** `turn_started`: a turn of the session began. */
export const TurnStarted = z.strictObject({ session_id: z.string(), turn_id: z.string() });
export type TurnStarted = z.infer<typeof TurnStarted>;

/** `delta`: streamed model text (not stored; the whole text arrives in the next `message`). */
export const Delta = z.strictObject({ session_id: z.string(), turn_id: z.string(), text: z.string() });
export type Delta = z.infer<typeof Delta>;

/** `message`: a message as stored in the conversation (the one persisted event). */
export const NewMessage = z.strictObject(Message.shape);
export type NewMessage = z.infer<typeof NewMessage>;

/**
 * `tool_request`: the gate received a call (from the model, or from a script when `from_script`). Published
 * again for the same `call_id`, with `rewritten_by` (the hooks), when PreToolUse hooks rewrote its input:
 * the last one shows the input that is judged and runs.
 */
export const ToolRequest = z.strictObject({
  session_id: z.string(),
  call_id: z.string(),
  tool: z.string(),
  arguments: z.unknown(),
  from_script: z.boolean(),
  rewritten_by: z.string().optional(),
});
export type ToolRequest = z.infer<typeof ToolRequest>;

/** `tool_result`: how the call ended: `result` when `ok`, else `error`. */
export const ToolResult = z.strictObject({
  session_id: z.string(),
  call_id: z.string(),
  tool: z.string(),
  ok: z.boolean(),
  result: z.unknown().optional(),
  error: EventError.optional(),
});
export type ToolResult = z.infer<typeof ToolResult>;

/** `action_resolved`: a card ended; `decided_in` is the session a decision was posted from (absent for `expired`/`cancelled`). */
export const ActionResolved = z.strictObject({
  request_id: z.string(),
  decision: z.enum(["allow_once", "allow_session", "deny", "expired", "cancelled"]),
  decided_in: z.string().optional(),
});
export type ActionResolved = z.infer<typeof ActionResolved>;

/** `error`: the turn failed or was cancelled (sent just before its `turn_finished`). */
export const TurnError = z.strictObject({ session_id: z.string(), turn_id: z.string(), ...EventError.shape });
export type TurnError = z.infer<typeof TurnError>;

/** `turn_finished`: the last event of a turn; `answer` when it completed, `error` when it did not. */
export const TurnFinished = z.strictObject({
  session_id: z.string(),
  turn_id: z.string(),
  status: z.enum(["completed", "failed", "cancelled"]),
  answer: z.string().optional(),
  error: EventError.optional(),
  /** Tokens of the turn's model calls; absent when none reported usage. */
  usage: UsageSummary.optional(),
});
export type TurnFinished = z.infer<typeof TurnFinished>;

/**
 * `hook_message`: what a hook has to say to the person (never to the model): its `systemMessage`
 * (`kind: "system_message"`), a `continue: false` with its `stopReason` (`stopped`), a hook that failed
 * where the event goes on without it (`failed`, with its code), or a hook that was not run and why (`skipped`).
 */
export const HookMessage = z.strictObject({
  session_id: z.string(),
  turn_id: z.string().optional(),
  event: z.enum(HOOK_EVENTS),
  hook: z.string(),
  kind: z.enum(["system_message", "stopped", "failed", "skipped"]),
  message: z.string(),
  code: z.enum(ERROR_CODES).optional(),
});
export type HookMessage = z.infer<typeof HookMessage>;

/**
 * Every event the bus carries, by name, in the order SPEC §6 lists them. Adding one here is all a new
 * event needs to be publishable; the doc test then asks for its row in docs/api.md.
 */
export const Events = {
  turn_started: TurnStarted,
  delta: Delta,
  message: NewMessage,
  tool_request: ToolRequest,
  tool_result: ToolResult,
  action_required: Card,
  action_resolved: ActionResolved,
  turn_finished: TurnFinished,
  error: TurnError,
  hook_message: HookMessage,
} as const;

/** The name of an event the bus carries. */
export type EventName = keyof typeof Events;
/** The payload of event `E` (its `data`). */
export type EventData<E extends EventName> = z.infer<(typeof Events)[E]>;
/** The names of the events the bus carries, in {@link Events} order. */
export const EVENT_NAMES = Object.keys(Events) as EventName[];

/** One published event of type `E`: its id, session, payload, and whether the payload is also stored. */
export interface TypedEvent<E extends EventName> {
  /** Increasing per session, starting at 1 in each server process. */
  id: number;
  session_id: string;
  type: E;
  data: EventData<E>;
  /** True when the content is stored in the conversation (messages); false for ephemeral events. */
  persisted: boolean;
}

/** Any published event: a union discriminated by `type` (switch on it, with `assertNever` in `default`). */
export type AnyEvent = { [E in EventName]: TypedEvent<E> }[EventName];

/**
 * `snapshot`: the first event of `GET /sessions/:id/events` (and the answer to a resume the buffer cannot
 * serve). Not published on the bus: written by the route, its id the last bus id it covers.
 */
export const Snapshot = z.strictObject({
  session: Session,
  messages: z.array(Message),
  pending_actions: z.array(Card),
  in_flight: z.boolean(),
});
export type Snapshot = z.infer<typeof Snapshot>;

/** The names an SSE client sees: `snapshot` and every bus event. */
export const SSE_EVENT_NAMES = ["snapshot", ...EVENT_NAMES] as const;
export type SseEventName = (typeof SSE_EVENT_NAMES)[number];

/**
 * Checks a payload against its event's schema (exact keys: an unknown key is a mismatch).
 * @returns null when it matches, else the first issues as one line (`path: message; …`).
 */
export function eventMismatch(type: EventName, data: unknown): string | null {
  const r = Events[type].safeParse(data);
  if (r.success) return null;
  return r.error.issues
    .slice(0, 3)
    .map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`)
    .join("; ");
}
