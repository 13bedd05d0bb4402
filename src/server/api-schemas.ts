/**
 * @module server/api-schemas
 * The answers of the HTTP API as zod schemas (SPEC §6), one per shape, schema and type sharing a name. Each
 * route types its reply with the type (`c.json(x satisfies SessionList)`) and server/openapi.ts documents it
 * with the schema, so a reply and its documentation are never written twice; the typed client (`client/`)
 * imports the types. Request bodies stay beside their routes (they validate there).
 */
import { z } from "zod";
import { version } from "../../package.json" with { type: "json" };
import { Card } from "../bus/events.ts";
import { ERROR_CODES } from "../errors.ts";
import { Message, Session, UsageSummary } from "../session/types.ts";

/** The error object of every failure: `{error: CODE, message, ...details}` (details such as `limit_bytes`, `issues`, `fields`, `run`). */
export const ApiError = z.looseObject({
  error: z.enum(ERROR_CODES),
  message: z.string(),
});
export type ApiError = z.infer<typeof ApiError>;

/** `GET /health`: `notify` counts notifications sent and failed since start. */
export const Health = z.strictObject({
  status: z.literal("ok"),
  version: z.string().meta({ examples: [version] }),
  notify: z.strictObject({ sent: z.number().int(), failed: z.number().int() }),
});
export type Health = z.infer<typeof Health>;

/** `GET /server-proof`: HMAC-SHA-256 under the API token over the domain, the address and port the server is bound to and the nonce (server/server-proof.ts), lowercase hex. */
export const ServerProof = z.strictObject({
  proof: z.string().regex(/^[0-9a-f]{64}$/),
});
export type ServerProof = z.infer<typeof ServerProof>;

/** `POST /sessions`: the session, plus `warnings` for a root whose workspace's Claude Code hooks are not (fully) run. */
export const SessionCreated = z.object({ ...Session.shape, warnings: z.array(z.string()).optional() });
export type SessionCreated = z.infer<typeof SessionCreated>;

/** `GET /sessions`: newest first. */
export const SessionList = z.strictObject({ sessions: z.array(Session) });
export type SessionList = z.infer<typeof SessionList>;

/** One turn of a session as stored (store/store.ts `Turn`); times are ISO strings. */
export const TurnRecord = z.strictObject({
  id: z.string(),
  session_id: z.string(),
  status: z.enum(["running", "completed", "failed", "cancelled", "interrupted"]),
  answer: z.string().nullable(),
  error: z.string().nullable(),
  started_at: z.string(),
  finished_at: z.string().nullable(),
});
export type TurnRecord = z.infer<typeof TurnRecord>;

/** `GET /sessions/:id`: the session with whether a turn runs, its messages and its turns. */
export const SessionDetail = z.object({
  ...Session.shape,
  in_flight: z.boolean(),
  /** Its running turn when another process of this machine runs it (an `airlock run` on the same data dir), not this server: its events and cards are not on this server's streams. Null otherwise. */
  turn_elsewhere: z.strictObject({ turn_id: z.string(), pid: z.number().int() }).nullable(),
  messages: z.array(Message),
  turns: z.array(TurnRecord),
  /** Tokens of its own model calls, and of its subtree's (null: no call reported usage). */
  usage: z.lazy(() => SessionUsage),
});
export type SessionDetail = z.infer<typeof SessionDetail>;

/** `GET /sessions/:id/usage` (and `usage` of `GET /sessions/:id`): the session's own tokens and its subtree's; null where no call reported usage. */
export const SessionUsage = z.strictObject({ session: UsageSummary.nullable(), subtree: UsageSummary.nullable() });
export type SessionUsage = z.infer<typeof SessionUsage>;

/** `POST /sessions/:id/cancel`: `cancelled` false when nothing was running. */
export const CancelAnswer = z.strictObject({ session_id: z.string(), cancelled: z.boolean() });
export type CancelAnswer = z.infer<typeof CancelAnswer>;

/** `GET /actions`, `GET /sessions/:id/actions`: pending cards. */
export const CardList = z.strictObject({ actions: z.array(Card) });
export type CardList = z.infer<typeof CardList>;

/** The answer to deciding a card (card/pending.ts `CardOutcome`); `allow_session` adds the stored `rule` and its `rule_id`. */
export const CardOutcome = z.strictObject({
  request_id: z.string(),
  decision: z.enum(["allow_once", "allow_session", "deny", "expired", "cancelled"]),
  decided_in: z.string().optional(),
  reason: z.string().optional(),
  rule: z.string().optional(),
  rule_id: z.string().optional(),
});
export type CardOutcome = z.infer<typeof CardOutcome>;

/** One "Allow for this session" rule of a session tree (store/session-rules.ts `SessionRule`). */
export const SessionRule = z.strictObject({
  id: z.string(),
  root_session_id: z.string(),
  rule: z.string(),
  request_id: z.string().nullable(),
  added_in: z.string().nullable(),
  actor: z.string().nullable(),
  created_at: z.string(),
});
export type SessionRule = z.infer<typeof SessionRule>;

/** `GET /sessions/:id/rules`: oldest first. */
export const SessionRuleList = z.strictObject({ rules: z.array(SessionRule) });
export type SessionRuleList = z.infer<typeof SessionRuleList>;

/** `DELETE /sessions/:id/rules/:rule_id`. */
export const SessionRuleRemoved = z.strictObject({ removed: SessionRule });
export type SessionRuleRemoved = z.infer<typeof SessionRuleRemoved>;

/** One row of the decision log (store/store.ts `AuditRow`; docs/api.md "Decision log"): `detail` is the row's JSON, parsed. */
export const AuditRow = z.strictObject({
  id: z.number().int(),
  at: z.string(),
  kind: z.string(),
  // store/store.ts types these columns as optional; a row read from the table always has them (null when empty)
  request_id: z.string().nullish(),
  session_id: z.string().nullish(),
  home_session_id: z.string().nullish(),
  decision: z.string().nullish(),
  outcome: z.enum(["accepted", "refused", "recorded"]),
  code: z.string().nullish(),
  actor: z.string().nullish(),
  detail: z.unknown(),
});
export type AuditRow = z.infer<typeof AuditRow>;

/** `GET /audit`: newest first. */
export const AuditList = z.strictObject({ audit: z.array(AuditRow) });
export type AuditList = z.infer<typeof AuditList>;

/** A schedule as the API shows it (scheduler/scheduler.ts `ScheduleView`: without the recipe text, with its next fire and running run). */
export const Schedule = z.strictObject({
  id: z.string(),
  name: z.string(),
  cron: z.string(),
  recipe_path: z.string(),
  params: z.record(z.string(), z.unknown()),
  enabled: z.boolean(),
  created_at: z.string(),
  last_fire_at: z.string().nullable(),
  /** ISO time of the next cron fire, null when none (scheduler/scheduler.ts `ScheduleView`). */
  next_fire_at: z.string().nullable(),
  /** The run going on now, if any. */
  running_run_id: z.string().nullable(),
});
export type Schedule = z.infer<typeof Schedule>;

/** `GET /schedules`. */
export const ScheduleList = z.strictObject({ schedules: z.array(Schedule) });
export type ScheduleList = z.infer<typeof ScheduleList>;

/** `DELETE /schedules/:id`. */
export const ScheduleDeleted = z.strictObject({ id: z.string(), deleted: z.literal(true) });
export type ScheduleDeleted = z.infer<typeof ScheduleDeleted>;

/**
 * A run as `GET /runs/:id` serves it (server/routes/schedules.ts `runView`): the headless result object
 * (SPEC §7) at the top level once it finished (its other keys kept), plus the run's own fields.
 */
export const RunView = z.looseObject({
  session_id: z.string().nullable(),
  status: z.string(),
  result: z.unknown(),
  tool_calls: z.unknown(),
  refused_calls: z.array(z.unknown()),
  error: z.unknown(),
  duration_ms: z.unknown(),
  run_id: z.string(),
  schedule_id: z.string().nullable(),
  schedule_removed: z.boolean(),
  trigger: z.enum(["cron", "manual", "catch-up"]),
  started_at: z.string(),
  finished_at: z.string().nullable(),
  reason: z.string().nullable(),
});
export type RunView = z.infer<typeof RunView>;

/** `GET /runs`, `GET /schedules/:id/runs`: newest first. */
export const RunList = z.strictObject({ runs: z.array(RunView) });
export type RunList = z.infer<typeof RunList>;
