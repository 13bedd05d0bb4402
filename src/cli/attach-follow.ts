/**
 * @module cli/attach-follow
 * The client side of `airlock attach`: follows one session tree of a running `airlock serve` over SSE.
 * The console feed (`GET /console/events`) says which sessions exist and which ran a turn when attach
 * connected, announces new ones, and carries every card with its chain; one `GET /sessions/:id/events` stream per session of the tree carries its turns, tool
 * calls and messages, resumed with `Last-Event-ID` (a session found mid-turn is replayed from its first
 * event: `<epoch>-0`). When any stream drops, every stream is closed and reopened with backoff; the feed's
 * fresh snapshot then says which cards are pending (docs/api.md "Server-Sent Events").
 */
import { createParser } from "eventsource-parser";
import { EVENT_NAMES, type AnyEvent, type EventName } from "../bus/bus.ts";
import type { ActionResolved } from "../bus/events.ts";
import { BoundedSet } from "../bounded.ts";
import type { ConsoleCard } from "../console/routes.ts";
import { AirlockError, ERROR_CODES, type ErrorCode } from "../errors.ts";
import { chainOf, type Link } from "./attach-format.ts";
import type { ServerClient } from "./server-client.ts";

/** One SSE event as read: its name, id and parsed JSON data. */
export interface SseMessage {
  event: string;
  id: string | undefined;
  data: any;
}

/**
 * How long, after one stream ended cleanly, attach keeps reading the others before it reconnects, ms: `airlock serve`
 * stopping ends each stream on its own (SPEC §6), and the session's stream may still hold a cancelled turn's end.
 */
export const CLEAN_END_GRACE_MS = 2000;

/** The first and the longest wait between reconnect attempts, ms. */
export const BACKOFF_MS = { first: 250, max: 5000 } as const;

/**
 * Reads one SSE response: calls `onEvent` for each event until the stream ends (resolves) or `signal`
 * aborts (resolves). @throws AirlockError with the server's code on an HTTP error answer (401, 404 …);
 * a plain Error when the connection fails or drops.
 */
export async function readSse(url: string, headers: Record<string, string>, signal: AbortSignal, onEvent: (m: SseMessage) => void): Promise<void> {
  const res = await fetch(url, { headers: { accept: "text/event-stream", ...headers }, signal });
  if (res.status !== 200) throw await httpError(res);
  if (!res.body) throw new Error(`${url}: no body`);
  const parser = createParser({
    onEvent(m) {
      let data: unknown = null;
      try {
        data = m.data ? JSON.parse(m.data) : null;
      } catch {
        return;
      }
      onEvent({ event: m.event ?? "message", id: m.id, data });
    },
  });
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      parser.feed(value);
    }
  } catch (e) {
    if (signal.aborted) return;
    throw e;
  } finally {
    reader.releaseLock();
  }
}

/** An HTTP error answer of the server as an AirlockError with its code (`internal` when it names none). */
async function httpError(res: Response): Promise<AirlockError> {
  let body: Record<string, any> = {};
  try {
    body = (await res.json()) as Record<string, any>;
  } catch {
    // not JSON: not airlock serve
  }
  const code: ErrorCode = (ERROR_CODES as readonly string[]).includes(body.error) ? (body.error as ErrorCode) : "server_unreachable";
  return new AirlockError(code, `${res.url} answered HTTP ${res.status}: ${body.message ?? "not airlock serve"}`);
}

/** What the follower tells `attach`. Every callback is synchronous; none may throw. */
export interface FollowSink {
  /** A bus event (turns, tool calls, messages) of a session of the tree, with its chain from the root. */
  event(ev: AnyEvent, chain: Link[]): void;
  /** A fresh snapshot: every card of the tree pending now, oldest first (replaces what was pending). */
  resync(cards: ConsoleCard[]): void;
  /** A card parked in the tree. */
  card(card: ConsoleCard): void;
  /** A card ended (any card of the server: the sink keeps the ones it knows). */
  resolved(r: ActionResolved): void;
  /**
   * A connection line: `lost` when the server went away (with the wait before the next try), `moved` when a reconnect
   * attempt follows the data dir's server to a new URL (`ServerClient.refind`), `back` when a snapshot came after a loss,
   * `refused` when a reconnect attempt sent nothing because `ServerClient.recheck` gave a reason (what answers at the
   * config's address gave no server proof, a recorded server stopped): that reason, said once until it changes or the
   * connection is back (the attempts go on).
   */
  connection(state: "lost" | "moved" | "back" | "refused", detail: string): void;
  /** The set of the tree's sessions running a turn changed (or a snapshot came). */
  activity(): void;
}

/** A running follower. */
export interface Follower {
  /** Resolves when `stop()` was called, rejects with a fatal error (the session is gone, the token is refused). */
  done: Promise<void>;
  /** Stops every stream; `done` resolves. */
  stop(): void;
  /** The tree's sessions running a turn now. */
  running(): ReadonlySet<string>;
  /** Whether a snapshot of the feed has been read since the last (re)connect. */
  synced(): boolean;
}

/** Where and how the follower connects. */
export interface FollowOptions {
  /**
   * The server: its base URL (no trailing slash), read at every (re)connect, and `refind`, called before each reconnect
   * attempt (cli/server-client.ts `ServerClient.refind`: a server restarted on another port is followed there, and
   * one whose lock is gone is looked for at the config's address again), and
   * `recheck`, asked before each request: why `base` must not be sent the token now, or null (`ServerClient.recheck`:
   * a URL from `serve.lock` whose server stopped). A reason fails that request as a dropped connection does: the
   * follower waits and asks again, never connecting meanwhile.
   */
  server: Pick<ServerClient, "base" | "refind" | "recheck">;
  /** The API token (sent as `Authorization: Bearer`). */
  apiToken: string;
  /** The session whose tree is followed (usually a root): it and every session under it. */
  target: string;
  sink: FollowSink;
  /** Reconnect waits, ms (default {@link BACKOFF_MS}). */
  backoff?: { first: number; max: number };
  /** How long the other streams may take to end after one ended cleanly, ms (default {@link CLEAN_END_GRACE_MS}). */
  cleanEndGraceMs?: number;
}

interface Known {
  parent: string | null;
  name: string;
}

/** The name a session shows in a chain (the console's rule: its title, else `root` / `subagent#N`). */
function nameOf(s: Record<string, any>): string {
  if (typeof s.title === "string" && s.title) return s.title;
  return s.parent_session_id ? `subagent#${s.spawn_index ?? "?"}` : "root";
}

/**
 * Follows the session tree of `o.target` until `stop()`. Network failures reconnect with backoff
 * (`first` ms doubling up to `max`); an HTTP error answer (401 `unauthorized`, 404 `session_not_found`) is fatal.
 */
export function follow(o: FollowOptions): Follower {
  const backoff = o.backoff ?? BACKOFF_MS;
  const cleanEndGraceMs = o.cleanEndGraceMs ?? CLEAN_END_GRACE_MS;
  const headers = { authorization: `Bearer ${o.apiToken}` };
  const known = new Map<string, Known>();
  const lastIds = new Map<string, string>();
  const running = new Set<string>();
  /** Cards the feed said ended (bounded): a card whose showing waited on its session's stream is dropped if in here. */
  const endedCards = new BoundedSet<string>(10_000);
  /** The base URL of the current generation. */
  let base = o.server.base;
  let epoch: string | null = null;
  let stopped = false;
  let isSynced = false;
  /** The last reason `o.server.recheck` gave (null: none since it was said), and the one said last. */
  let refusal: string | null = null;
  let saidRefusal: string | null = null;
  const stopAc = new AbortController();

  /** {@link readSse}, once `o.server.recheck` allows it (else a plain Error, as a failed connection). */
  const sse = async (url: string, h: Record<string, string>, signal: AbortSignal, onEvent: (m: SseMessage) => void): Promise<void> => {
    const why = await o.server.recheck();
    if (why !== null) {
      refusal = why;
      throw new Error(why);
    }
    return readSse(url, h, signal, onEvent);
  };
  const inTree = (id: string): boolean => chainOf(id, known).some((l) => l.id === o.target);
  const remember = (s: Record<string, any>): void => {
    if (typeof s.id === "string") known.set(s.id, { parent: s.parent_session_id ?? null, name: nameOf(s) });
  };
  /** Learns a session and its unknown ancestors over HTTP; resolves false when one cannot be read. */
  const learn = async (id: string): Promise<boolean> => {
    for (let cur: string | null = id, n = 0; cur && n < 64; n++) {
      const k = known.get(cur);
      if (k) {
        cur = k.parent;
        continue;
      }
      const why = await o.server.recheck();
      if (why !== null) {
        refusal = why;
        return false;
      }
      const res = await fetch(`${base}/sessions/${encodeURIComponent(cur)}`, { headers, signal: stopAc.signal });
      if (res.status !== 200) return false;
      const s = (await res.json()) as Record<string, any>;
      remember(s);
      cur = s.parent_session_id ?? null;
    }
    return true;
  };

  async function generation(): Promise<void> {
    base = o.server.base;
    const ac = new AbortController();
    const onStop = (): void => ac.abort();
    stopAc.signal.addEventListener("abort", onStop);
    /** Each followed session's stream of this generation: resolves once it delivered its first event (or ended). */
    const open = new Map<string, Promise<void>>();
    let isEnded = false;
    let resolveEnded!: (e?: unknown) => void;
    const finished = new Promise<unknown>((resolve) => (resolveEnded = resolve));
    /** The streams of this generation still being read. */
    const live = new Set<Promise<void>>();
    let grace: ReturnType<typeof setTimeout> | undefined;
    /**
     * A stream ended: with an error (the connection failed or dropped, an HTTP error answer) the generation ends at
     * once; at a clean end (a server that stops ends each stream after what was published to it: a cancelled turn's
     * turn_finished, its withdrawn cards) the others are read to their own ends, for at most `cleanEndGraceMs`.
     */
    const ended = (e?: unknown): void => {
      isEnded = true;
      if (e !== undefined || live.size === 0) return resolveEnded(e);
      grace ??= setTimeout(() => resolveEnded(), cleanEndGraceMs);
    };
    const track = (p: Promise<void>): void => {
      live.add(p);
      p.then(
        () => (live.delete(p), ended()),
        (e) => (live.delete(p), ended(e ?? new Error("the stream failed"))),
      );
    };

    /** Opens the session's own stream (once per generation); replayed from the start when `fromStart`. */
    const openSession = (id: string, fromStart: boolean): Promise<void> => {
      const already = open.get(id);
      if (already) return already;
      if (ac.signal.aborted || isEnded) return Promise.resolve();
      const h: Record<string, string> = { ...headers };
      const last = lastIds.get(id) ?? (fromStart && epoch ? `${epoch}-0` : undefined);
      if (last) h["last-event-id"] = last;
      let first!: () => void;
      const gotFirst = new Promise<void>((r) => (first = r));
      const stream = sse(`${base}/sessions/${encodeURIComponent(id)}/events`, h, ac.signal, (m) => {
        first();
        if (m.id) {
          lastIds.set(id, m.id);
          const dash = m.id.lastIndexOf("-");
          if (id === o.target && dash > 0) epoch = m.id.slice(0, dash);
        }
        if (m.event === "snapshot") {
          if (m.data?.session) remember(m.data.session);
          return;
        }
        if (!(EVENT_NAMES as readonly string[]).includes(m.event)) return;
        const type = m.event as EventName;
        // cards come from the feed (with their chain, once per card); the rest from the session's own stream
        if (type === "action_required" || type === "action_resolved" || type === "delta") return;
        o.sink.event({ id: 0, session_id: id, type, data: m.data, persisted: type === "message" } as AnyEvent, chainOf(id, known));
        // what runs is read from the session's own stream, in order with its lines (the feed's copy may come first)
        if (type === "turn_started" || type === "turn_finished") {
          if (type === "turn_started") running.add(id);
          else running.delete(id);
          o.sink.activity();
        }
      });
      track(stream);
      const ready = Promise.race([gotFirst, finished.then(() => {})]);
      open.set(id, ready);
      return ready;
    };

    try {
      // the target's own stream first: its ids carry the server's epoch, which replays a new session from its start
      await openSession(o.target, false);
      if (ac.signal.aborted || isEnded) {
        const why = await finished;
        if (why instanceof AirlockError) throw why;
        return;
      }
      const feed = sse(`${base}/console/events`, headers, ac.signal, (m) => {
        const d = m.data ?? {};
        switch (m.event) {
          case "snapshot": {
            for (const s of d.sessions ?? []) remember(s);
            running.clear();
            for (const id of d.in_flight ?? []) if (typeof id === "string") running.add(id);
            const cards = ((d.pending_actions ?? []) as ConsoleCard[]).filter((c) => c.chain?.some((l) => l.id === o.target));
            void (async () => {
              for (const id of [...running]) if (!known.has(id)) await learn(id).catch(() => false);
              for (const id of [...running]) if (!inTree(id)) running.delete(id);
              for (const id of known.keys()) if (inTree(id)) void openSession(id, false);
              isSynced = true;
              wait = backoff.first;
              if (reconnecting) {
                reconnecting = false;
                saidRefusal = null;
                o.sink.connection("back", `reconnected to ${base}; the pending cards are as the server lists them now`);
              }
              o.sink.resync(cards);
              o.sink.activity();
            })();
            return;
          }
          case "turn_started": {
            const id = d.session_id as string;
            void (async () => {
              if (!known.has(id) && !(await learn(id).catch(() => false))) return;
              if (!inTree(id)) return;
              // a session of the tree not followed yet (a new subagent): its stream from its first event
              void openSession(id, true);
            })();
            return;
          }
          case "action_required": {
            const card = d as ConsoleCard;
            if (!card.chain?.some((l) => l.id === o.target)) return;
            card.chain.forEach((l, i) => {
              if (!known.has(l.id)) known.set(l.id, { parent: i > 0 ? card.chain[i - 1]!.id : null, name: l.name });
            });
            // shown after the lines of its session that led to it: a new subagent's stream is opened (from its
            // first event) and the card waits for it; a card ended meanwhile is never shown
            const deliver = (): void => {
              if (!endedCards.has(card.request_id)) o.sink.card(card);
            };
            void openSession(card.home_session_id, true).then(deliver, deliver);
            return;
          }
          case "action_resolved":
            endedCards.add((d as ActionResolved).request_id);
            o.sink.resolved(d as ActionResolved);
            return;
          default:
            return;
        }
      });
      track(feed);
      const why = await finished;
      if (why instanceof AirlockError) throw why;
    } finally {
      clearTimeout(grace);
      stopAc.signal.removeEventListener("abort", onStop);
      ac.abort();
    }
  }

  let wait = backoff.first;
  let reconnecting = false;
  const done = (async () => {
    while (!stopped) {
      isSynced = false;
      try {
        await generation();
      } catch (e) {
        if (e instanceof AirlockError) {
          if (stopped) return;
          throw e;
        }
      }
      if (stopped) return;
      running.clear();
      if (!reconnecting) o.sink.connection("lost", `the connection to ${base} dropped; reconnecting (first try in ${(wait / 1000).toFixed(1)} s, then up to every ${(backoff.max / 1000).toFixed(0)} s)`);
      reconnecting = true;
      if (refusal !== null && refusal !== saidRefusal) o.sink.connection("refused", `${refusal} (still trying again, up to every ${(backoff.max / 1000).toFixed(0)} s)`);
      saidRefusal = refusal ?? saidRefusal;
      refusal = null;
      await new Promise<void>((r) => {
        const t = setTimeout(r, wait);
        stopAc.signal.addEventListener("abort", () => (clearTimeout(t), r()), { once: true });
      });
      wait = Math.min(backoff.max, wait * 2);
      if (stopped) return;
      const moved = await o.server.refind();
      if (moved !== null) o.sink.connection("moved", moved);
    }
  })();

  return {
    done,
    stop() {
      stopped = true;
      stopAc.abort();
    },
    running: () => running,
    synced: () => isSynced,
  };
}
