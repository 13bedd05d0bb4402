/**
 * @module console/api-schemas
 * The console's HTTP answers as zod schemas (schema and type share a name): the feed's events
 * (`GET /console/events`) and a card's preview. The routes type their replies with these types and
 * server/openapi.ts documents them with the schemas.
 */
import { z } from "zod";
import { ActionResolved, Card, TurnError, TurnFinished, TurnStarted } from "../bus/events.ts";
import { Session } from "../session/types.ts";

/** One link of a card's chain in the console's feed: a session id and the name shown for it. */
export const ChainLink = z.strictObject({ id: z.string(), name: z.string() });
export type ChainLink = z.infer<typeof ChainLink>;

/** A card as the console's feed sends it: with its chain (root first, home last) and the session to answer from. */
export const ConsoleCard = z.strictObject({ ...Card.shape, chain: z.array(ChainLink), answer_in: z.string() });
export type ConsoleCard = z.infer<typeof ConsoleCard>;

/** The console feed's `snapshot`: recent sessions (newest first), the sessions running a turn, every pending card. */
export const ConsoleSnapshot = z.strictObject({
  sessions: z.array(Session),
  in_flight: z.array(z.string()),
  pending_actions: z.array(ConsoleCard),
});
export type ConsoleSnapshot = z.infer<typeof ConsoleSnapshot>;

/** The events of `GET /console/events`, by name (the feed forwards turns and cards of every session). */
export const ConsoleEvents = {
  snapshot: ConsoleSnapshot,
  turn_started: TurnStarted,
  action_required: ConsoleCard,
  action_resolved: ActionResolved,
  turn_finished: TurnFinished,
  error: TurnError,
} as const;

/** `GET /sessions/:id/actions/:request_id/preview` (console/preview.ts `Preview`). */
export const CardPreview = z.strictObject({
  request_id: z.string(),
  tool: z.string(),
  path: z.string(),
  exists: z.boolean(),
  size: z.number().int(),
  diff: z.array(z.strictObject({ op: z.enum([" ", "-", "+"]), text: z.string() })),
  exact: z.boolean(),
  problem: z.string().optional(),
});
export type CardPreview = z.infer<typeof CardPreview>;
