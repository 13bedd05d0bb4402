/**
 * @module server/routes/sessions
 * Sessions over HTTP (SPEC §6): create, list, show, reply (SSE of the turn until `turn_finished`),
 * observe (SSE opening with a `snapshot`, resumable with `Last-Event-ID`), cancel.
 */
import { Hono } from "hono";
import { isAbsolute } from "node:path";
import { z } from "zod";
import type { AnyEvent } from "../../bus/bus.ts";
import type { Snapshot } from "../../bus/events.ts";
import { Mode, Privacy, SandboxPolicyName } from "../../config/schema.ts";
import { AirlockError } from "../../errors.ts";
import type { Runtime } from "../../runtime.ts";
import { currentOwner, ownerIsGone } from "../../store/owner.ts";
import { sseResponse, type SseStreams } from "../../bus/sse.ts";
import type { CancelAnswer, SessionCreated, SessionDetail, SessionList, SessionUsage } from "../api-schemas.ts";
import { parseBody } from "../validate.ts";

export const CreateSessionBody = z.strictObject({
  /** Absolute: the server cannot know the client's cwd, so a relative path is refused (SPEC §9). */
  workspace: z
    .string()
    .min(1)
    .refine((p) => isAbsolute(p), "expected an absolute path (the server does not know the client's working directory)")
    .optional(),
  mode: Mode.optional(),
  sandbox: SandboxPolicyName.optional(),
  privacy: Privacy.optional(),
  headless: z.boolean().optional(),
  provider: z.enum(["openai", "openai-responses", "anthropic", "scripted"]).optional(),
  model: z.string().min(1).optional(),
  parent_session_id: z.string().min(1).optional(),
  title: z.string().max(200).optional(),
});

export type CreateSessionBody = z.input<typeof CreateSessionBody>;

export const ReplyBody = z.strictObject({
  message: z.string().min(1),
});
export type ReplyBody = z.input<typeof ReplyBody>;

/** `GET /sessions`: how many sessions when `?limit=` is absent, and the most it may ask for (docs/api.md). */
export const DEFAULT_LIST_LIMIT = 200;
export const MAX_LIST_LIMIT = 1000;

/** `?limit=` of `GET /sessions`: a whole number from 1 to `MAX_LIST_LIMIT`, digits only. */
export const ListLimit = z
  .string()
  .regex(/^\d{1,7}$/)
  .transform(Number)
  .pipe(z.number().int().min(1).max(MAX_LIST_LIMIT));

/**
 * Reads `?limit=` (absent → `DEFAULT_LIST_LIMIT`).
 * @throws AirlockError `bad_request` naming `limit` for anything but an integer 1–1000 (`5000`, `abc`, `0`, ``).
 */
export function parseListLimit(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_LIST_LIMIT;
  const r = ListLimit.safeParse(raw);
  if (r.success) return r.data;
  throw new AirlockError(
    "bad_request",
    `query: limit: expected an integer from 1 to ${MAX_LIST_LIMIT}, got ${JSON.stringify(raw)}; leave it out for the newest ${DEFAULT_LIST_LIMIT}`,
    { fields: ["limit"] },
  );
}

export interface SessionRoutesOptions {
  /** SSE heartbeat period, ms (default 15 000). */
  heartbeatMs?: number;
  /** Where the SSE streams register, so a stopping server ends them cleanly (bus/sse.ts). */
  streams?: SseStreams;
}

/** The snapshot a late observer starts from: the session, its stored messages and the cards it may see. */
export async function snapshotOf(rt: Runtime, sessionId: string): Promise<Snapshot> {
  // the in-memory parts first (in the caller's tick), then the stored ones
  const pending = rt.cards.listForSession(sessionId);
  const inFlight = rt.inflight.has(sessionId);
  const session = await rt.store.requireSession(sessionId);
  return {
    session,
    messages: await rt.store.listMessages(sessionId),
    pending_actions: pending,
    // here, or (PostgreSQL) on another node of the fleet
    in_flight: inFlight || (await rt.remoteInFlight(sessionId)).length > 0,
  };
}

export function sessionRoutes(rt: Runtime, opts: SessionRoutesOptions = {}): Hono {
  const app = new Hono();

  app.post("/sessions", async (c) => {
    const body = await parseBody(c, CreateSessionBody);
    const session = await rt.createSession(body);
    // a root's hooks from Claude Code's settings: an untrusted workspace's are not run, and the reply says so
    const warnings = session.parent_session_id ? [] : await rt.hookNotes(session.id);
    return c.json((warnings.length ? { ...session, warnings } : session) satisfies SessionCreated, 201);
  });

  app.get("/sessions", async (c) => {
    const limit = parseListLimit(c.req.query("limit"));
    return c.json({ sessions: await rt.store.listSessions({ limit }) } satisfies SessionList);
  });

  app.get("/sessions/:id", async (c) => {
    const id = c.req.param("id");
    const session = await rt.store.requireSession(id);
    const inFlight = rt.inflight.has(id) || (await rt.remoteInFlight(id)).length > 0;
    return c.json({
      ...session,
      in_flight: inFlight,
      turn_elsewhere: inFlight ? null : await turnElsewhere(rt, id),
      messages: await rt.store.listMessages(id),
      turns: await rt.store.listTurns(id),
      // tokens of its model calls: its own, and with every descendant's (null: none reported usage)
      usage: { session: await rt.usage.ofSession(id), subtree: await rt.usage.ofSubtree(id) },
    } satisfies SessionDetail);
  });

  app.get("/sessions/:id/usage", async (c) => {
    const id = c.req.param("id");
    await rt.store.requireSession(id);
    return c.json({ session: await rt.usage.ofSession(id), subtree: await rt.usage.ofSubtree(id) } satisfies SessionUsage);
  });

  app.post("/sessions/:id/reply", async (c) => {
    const id = c.req.param("id");
    await rt.store.requireSession(id);
    const body = await parseBody(c, ReplyBody);
    // Subscribe before starting so turn_started is not missed; a refused start (409) unsubscribes.
    const early: AnyEvent[] = [];
    let sink: ((ev: AnyEvent) => void) | null = null;
    const unsubscribe = rt.bus.subscribe(id, (ev) => (sink ? sink(ev) : early.push(ev)));
    let turnId: string;
    try {
      // on an `--role api` node the turn is queued for a worker; its events come back through the relay
      turnId = (await rt.requestTurn(id, body.message)).turnId;
    } catch (e) {
      unsubscribe();
      throw e;
    }
    // The client leaving does not end the turn: it goes on and can be observed on /events.
    return sseResponse(c, (n) => rt.bus.wireId(n), opts.heartbeatMs, opts.streams, (out, done) => {
      const write = (ev: AnyEvent) => {
        out.event(ev);
        if (ev.type === "turn_finished" && ev.data.turn_id === turnId) done();
      };
      for (const ev of early) write(ev);
      sink = write;
      return unsubscribe;
    });
  });

  app.get("/sessions/:id/events", async (c) => {
    const id = c.req.param("id");
    await rt.store.requireSession(id);
    const lastHeader = c.req.header("last-event-id");
    // Everything in start runs in one tick: no event can fall between the replay/snapshot and the subscription.
    return sseResponse(c, (n) => rt.bus.wireId(n), opts.heartbeatMs, opts.streams, (out, done) => {
      // an id of another server process, one that cannot be parsed, or one the buffer no longer reaches: a fresh
      // snapshot (with the pending cards), never a replay that could skip a card published under another numbering
      const last = rt.bus.parseWireId(lastHeader);
      const missed = last === null ? null : rt.bus.since(id, last);
      // built before subscribing: a snapshot that throws (a damaged row) must not leave the listener behind
      if (missed) {
        const unsubscribe = rt.bus.subscribe(id, (ev) => out.event(ev));
        for (const ev of missed) out.event(ev);
        return unsubscribe;
      }
      // the snapshot's stored part is read after subscribing: live events wait until it is sent, and a message
      // it already holds is not sent again
      const snapshotId = rt.bus.lastId(id);
      const data = snapshotOf(rt, id);
      let held: AnyEvent[] | null = [];
      const unsubscribe = rt.bus.subscribe(id, (ev) => (held ? held.push(ev) : out.event(ev)));
      const sent = data.then(
        (snap) => {
          out.raw("snapshot", snapshotId, snap);
          const stored = new Set(snap.messages.map((m) => m.id));
          const waiting = held ?? [];
          held = null;
          for (const ev of waiting) if (!(ev.type === "message" && stored.has((ev.data as { id?: string }).id ?? ""))) out.event(ev);
        },
        (e: unknown) => {
          // a snapshot that cannot be built (a damaged row) must not leave the listener behind
          unsubscribe();
          held = null;
          console.error(`airlock: the snapshot of session ${id} could not be built:`, e);
          done();
        },
      );
      // a stream ended before its snapshot was sent (the server stopping) still sends it and the events held behind it
      return () => {
        unsubscribe();
        return sent;
      };
    });
  });

  app.post("/sessions/:id/cancel", async (c) => {
    const id = c.req.param("id");
    await rt.store.requireSession(id);
    // here, a queued turn of it, and (PostgreSQL) the node running it
    const cancelled = await rt.cancelEverywhere(id, "cancelled by POST /cancel");
    return c.json({ session_id: id, cancelled } satisfies CancelAnswer);
  });

  return app;
}

/**
 * The session's running turn when another live process of this machine runs it (an `airlock run` on the same
 * data dir): its turn id and pid. Its events and cards are on that process's bus, not this server's. Null when
 * no turn runs, when this process runs it, or when its recorded owner is gone (a turn recovery will interrupt).
 * @throws storage errors.
 */
async function turnElsewhere(rt: Runtime, sessionId: string): Promise<{ turn_id: string; pid: number } | null> {
  const me = currentOwner().pid;
  for (const t of await rt.store.runningTurnOwners(sessionId)) {
    if (t.owner_pid === null || t.owner_pid === me) continue;
    if (ownerIsGone({ pid: t.owner_pid, start: t.owner_start })) continue;
    return { turn_id: t.id, pid: t.owner_pid };
  }
  return null;
}
