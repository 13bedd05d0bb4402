/**
 * @module console/routes
 * The watcher's console over HTTP. Public (no bearer token; the page holds no data): `GET /` (HTML with a
 * strict CSP), `GET /console.js`, `GET /console.css`. Behind the token: `GET /console/events` (one SSE
 * stream for the whole server: sessions, turns and every pending card with its chain) and
 * `GET /sessions/:id/actions/:request_id/preview` (the diff a file-writing card would make).
 */
import { Hono, type Context } from "hono";
import type { Card } from "../card/pending.ts";
import type { AnyEvent } from "../bus/bus.ts";
import { BoundedSet } from "../bounded.ts";
import { AirlockError, assertNever } from "../errors.ts";
import type { Runtime } from "../runtime.ts";
import { sseResponse, type SseStreams } from "../bus/sse.ts";
import { ancestors, sessionName } from "../session/graph.ts";
import type { CardPreview, ChainLink, ConsoleCard, ConsoleSnapshot } from "./api-schemas.ts";
import type { ConsoleAssets } from "./bundle.ts";
import { EMBEDDED } from "./embedded.ts";
import { previewCard } from "./preview.ts";

/** The page's Content-Security-Policy: only its own script, style and API; no inline code, no framing. */
export const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** The public paths of the console (served without the bearer token). */
export const CONSOLE_PUBLIC_PATHS = ["/", "/console.js", "/console.css"] as const;

/** One file as served: its bytes and their gzip. */
interface Served {
  type: string;
  body: Uint8Array<ArrayBuffer>;
  gzip: Uint8Array<ArrayBuffer>;
}

let assets: Promise<Record<(typeof CONSOLE_PUBLIC_PATHS)[number], Served>> | undefined;

/** The page's files: embedded in the binary, or bundled once on first use when running from source. */
function loadAssets(): Promise<Record<(typeof CONSOLE_PUBLIC_PATHS)[number], Served>> {
  assets ??= (async () => {
    // The compiled binary has the bundle embedded (build/build.ts); it never bundles at run time.
    if (!EMBEDDED && import.meta.url.includes("$bunfs")) throw new AirlockError("internal", "the console's page is not embedded in this binary; rebuild it with bun build/build.ts");
    const a: ConsoleAssets = EMBEDDED ?? (await (await import("./bundle.ts")).bundleConsole());
    const enc = new TextEncoder();
    const one = (type: string, text: string): Served => {
      const body = enc.encode(text);
      return { type, body, gzip: Bun.gzipSync(body) };
    };
    return {
      "/": one("text/html; charset=utf-8", a.html),
      "/console.js": one("text/javascript; charset=utf-8", a.js),
      "/console.css": one("text/css; charset=utf-8", a.css),
    };
  })();
  assets.catch(() => {
    assets = undefined;
  });
  return assets;
}

async function serveAsset(c: Context, p: (typeof CONSOLE_PUBLIC_PATHS)[number]): Promise<Response> {
  const f = (await loadAssets())[p];
  const gz = /\bgzip\b/.test(c.req.header("accept-encoding") ?? "");
  const headers: Record<string, string> = {
    "content-type": f.type,
    "cache-control": "no-store",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "content-security-policy": CONSOLE_CSP,
    "x-frame-options": "DENY",
    vary: "accept-encoding",
  };
  if (gz) headers["content-encoding"] = "gzip";
  return new Response(gz ? f.gzip : f.body, { status: 200, headers });
}

/** `GET /`, `/console.js`, `/console.css`: mount after the Host guard and before the bearer check. */
export function consolePublicRoutes(): Hono {
  const app = new Hono();
  for (const p of CONSOLE_PUBLIC_PATHS) app.get(p, (c) => serveAsset(c, p));
  return app;
}

/** A chain link, and a card as the console's feed sends it: their schemas are in console/api-schemas.ts. */
export type { ChainLink, ConsoleCard };

/** The name a session shows in a chain label (session/graph.ts). */
export { sessionName };

/** Adds the chain (root → home) to a card. @throws AirlockError from the session graph. */
export async function withChain(rt: Pick<Runtime, "store">, card: Card): Promise<ConsoleCard> {
  const ids = [...(await ancestors(rt.store, card.home_session_id))].reverse().concat(card.home_session_id);
  const chain = await Promise.all(ids.map(async (id) => ({ id, name: sessionName(await rt.store.getSession(id), id) })));
  return { ...card, surfaced_in: chain[0]!.id, chain, answer_in: chain[0]!.id };
}

/** The feed's opening state: recent sessions (newest first), the sessions running a turn, every pending card. */
export async function feedSnapshot(rt: Runtime): Promise<ConsoleSnapshot> {
  // what is in memory is taken in the caller's tick; the stored parts are read after
  const pending = rt.cards.listAll();
  const inFlight = rt.inflight.sessions();
  const cards: ConsoleCard[] = [];
  for (const c of pending) {
    try {
      cards.push(await withChain(rt, c));
    } catch {
      cards.push({ ...c, chain: [{ id: c.home_session_id, name: c.home_session_id }], answer_in: c.home_session_id });
    }
  }
  // and (PostgreSQL) the sessions whose turn runs on another node of the fleet
  const elsewhere = (await rt.remoteInFlight()).filter((id) => !inFlight.includes(id));
  return { sessions: await rt.store.listSessions({ limit: 500 }), in_flight: [...inFlight, ...elsewhere], pending_actions: cards };
}

/** Options of the console's API routes. */
export interface ConsoleRoutesOptions {
  /** Heartbeat period of the feed, ms (default 15 000). */
  heartbeatMs?: number;
  /** Where the feed's streams register, so a stopping server ends them cleanly (bus/sse.ts). */
  streams?: SseStreams;
}

/** `GET /console/events` and `GET /sessions/:id/actions/:request_id/preview` (mounted behind the bearer check). */
export function consoleApiRoutes(rt: Runtime, opts: ConsoleRoutesOptions = {}): Hono {
  const app = new Hono();

  // ids count up per stream ("1", "2", …): the feed mixes every session's bus, so no bus numbering applies
  app.get("/console/events", (c) =>
    sseResponse(c, String, opts.heartbeatMs, opts.streams, (out) => {
      const resolved = new BoundedSet<string>(10_000);
      /** Forwards the feed's events (turns and cards) of every session; the rest stay on the session's own stream. */
      const forwardOne = async (ev: AnyEvent): Promise<void> => {
        switch (ev.type) {
          case "delta":
          case "message":
          case "tool_request":
          case "tool_result":
          case "hook_message":
            return;
          case "action_required": {
            let card: ConsoleCard;
            try {
              card = await withChain(rt, ev.data);
            } catch {
              return;
            }
            if (card.answer_in !== ev.session_id) return; // one copy per card: the root's
            out.next(ev.type, card);
            return;
          }
          case "action_resolved": {
            const rid = ev.data.request_id;
            if (resolved.has(rid)) return;
            resolved.add(rid);
            out.next(ev.type, ev.data);
            return;
          }
          case "turn_started":
          case "turn_finished":
          case "error":
            out.next(ev.type, { ...ev.data, session_id: ev.session_id });
            return;
          default:
            return assertNever(ev, "bus event");
        }
      };
      // One tick: the snapshot's in-memory parts and the subscription, so no event falls between them; the
      // events wait in order behind the snapshot (cards' chains are read from the store, one event after another).
      let queue: Promise<void> = feedSnapshot(rt).then((snapshot) => out.next("snapshot", snapshot));
      const forward = (ev: AnyEvent): void => {
        queue = queue.then(() => forwardOne(ev)).catch((e: unknown) => console.error("airlock: the console feed could not forward an event:", e));
      };
      const off = rt.bus.subscribeAll(forward);
      // a snapshot that cannot be built must not leave the listener subscribed to every session's bus
      queue = queue.catch((e: unknown) => {
        off();
        console.error("airlock: the console feed's snapshot could not be built:", e);
      });
      // the events already forwarded to the chain are written before the stream ends (the server stopping)
      return () => {
        off();
        return queue;
      };
    }),
  );

  app.get("/sessions/:id/actions/:request_id/preview", async (c) => {
    const id = c.req.param("id");
    const rid = c.req.param("request_id");
    await rt.store.requireSession(id);
    const card = rt.cards.listForSession(id).find((x) => x.request_id === rid);
    if (!card) throw new AirlockError("not_found", `no pending card ${rid} in session ${id}; list them with GET /sessions/${id}/actions`);
    const home = await rt.store.requireSession(card.home_session_id);
    return c.json(previewCard(card, home.workspace, rt.dataDir) satisfies CardPreview);
  });

  return app;
}
