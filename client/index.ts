/**
 * @module client
 * A typed client of airlock's local HTTP API (docs/api.md, `GET /openapi.json`), for Bun and Node ≥ 20.
 * Its only runtime dependency is `fetch`: every type comes from the zod schemas the server validates and
 * answers with (src/server/api-schemas.ts, src/bus/events.ts, the routes' bodies), imported as types only.
 *
 * ```ts
 * const airlock = createClient({ url: "http://127.0.0.1:7420", token, approverToken });
 * const s = await airlock.sessions.create({ workspace: "/home/me/project" });
 * for await (const ev of airlock.events(s.id)) if (ev.type === "action_required") await airlock.cards.answer(ev.data.request_id, "allow_once");
 * ```
 */
import type { z } from "zod";
import type { Card, EventData, EventName, Snapshot } from "../src/bus/events.ts";
import type { ErrorCode } from "../src/errors.ts";
import type { AuditQueryParams } from "../src/store/audit-log.ts";
import type {
  AuditList,
  CancelAnswer,
  CardList,
  CardOutcome,
  Health,
  RunList,
  RunView,
  Schedule,
  ScheduleDeleted,
  ScheduleList,
  SessionCreated,
  SessionDetail,
  SessionList,
  SessionRuleList,
  SessionRuleRemoved,
} from "../src/server/api-schemas.ts";
import type { CardPreview } from "../src/console/api-schemas.ts";
import type { DecisionBody } from "../src/server/routes/actions.ts";
import type { NewScheduleBody } from "../src/server/routes/schedules.ts";
import type { CreateSessionBody } from "../src/server/routes/sessions.ts";

export type {
  AuditList,
  CancelAnswer,
  Card,
  CardList,
  CardOutcome,
  CardPreview,
  CreateSessionBody,
  ErrorCode,
  Health,
  NewScheduleBody,
  RunList,
  RunView,
  Schedule,
  ScheduleList,
  SessionCreated,
  SessionDetail,
  SessionList,
  Snapshot,
};

/** The name of the header that carries the approver token (card/authority.ts `APPROVER_HEADER`). */
export const APPROVER_HEADER = "X-Airlock-Approver";

/** One event of a session's stream: `type` is the SSE event name, `id` its SSE id (opaque), `data` its payload. */
export type BusEvent = { [E in EventName]: { type: E; id: string; data: EventData<E> } }[EventName];
/** What `events()` yields: the `snapshot` (first, and again when a resume cannot be served) and every bus event. */
export type SessionEvent = BusEvent | { type: "snapshot"; id: string; data: Snapshot };

/** A card decision: `allow_once`, `allow_session` (also stores the card's `suggested_rule` for the session tree), `deny`. */
export type Decision = DecisionBody["decision"];

/** The query of `audit()`: each value as the server reads it (`since`: an audit id or an ISO time; `limit`: 1–1000). */
export type AuditQuery = { [K in keyof z.input<typeof AuditQueryParams>]?: string | number };

/**
 * Every failure of a call, as the server named it: `code` (an AirlockError code, docs/api.md's error table),
 * `status` (its HTTP status; 0 when no answer came: `code` is then `server_unreachable`), `message`, and the
 * error object's other fields in `details` (e.g. `limit_bytes`, `issues`, `run`).
 */
export class AirlockApiError extends Error {
  override readonly name = "AirlockApiError";
  constructor(
    readonly code: ErrorCode,
    readonly status: number,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

export interface ClientOptions {
  /** Base URL of `airlock serve`, e.g. `http://127.0.0.1:7420`. */
  url: string;
  /** The api-token (`<data dir>/api-token`; `airlock token` prints where). */
  token: string;
  /** The approver token (`<data dir>/approver-token`): sent with an allow, needed on a card with `requires_user_proof`. */
  approverToken?: string;
  /** The fetch to use (default `globalThis.fetch`). */
  fetch?: typeof fetch;
}

export interface EventsOptions {
  /** Resume after this event id (sent as `Last-Event-ID`); absent: start with a snapshot. */
  lastEventId?: string;
  /** Ends the iteration (no error) when aborted. */
  signal?: AbortSignal;
  /** First reconnect delay, ms (default 250); doubles per failed attempt up to `maxDelayMs` (default 5000). */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Failed connection attempts in a row before giving up with the last error (default 20). */
  maxAttempts?: number;
}

/** One parsed SSE frame. */
interface Frame {
  event: string;
  id: string | undefined;
  data: string;
}

/** Parses a `text/event-stream` body into frames (WHATWG "server-sent events" parsing: fields, comments, blank-line dispatch). */
async function* readFrames(body: ReadableStream<Uint8Array>): AsyncGenerator<Frame> {
  const reader = body.getReader();
  const dec = new TextDecoder();
  let buf = "";
  let event = "";
  let id: string | undefined;
  let data: string[] = [];
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += dec.decode(value, { stream: true });
      let nl: number;
      while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + (buf.startsWith("\r\n", nl) ? 2 : 1));
        if (line === "") {
          if (data.length) yield { event: event || "message", id, data: data.join("\n") };
          event = "";
          id = undefined;
          data = [];
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const val = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "event") event = val;
        else if (field === "data") data.push(val);
        else if (field === "id") id = val;
      }
    }
  } finally {
    reader.releaseLock();
    await body.cancel().catch(() => {});
  }
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });

/**
 * Creates a client of the API at `opts.url`. Every method resolves with the answer's JSON (typed from the
 * server's schemas) or rejects with an {@link AirlockApiError}.
 */
export function createClient(opts: ClientOptions) {
  const base = opts.url.replace(/\/+$/, "");
  const doFetch = opts.fetch ?? globalThis.fetch;

  async function send(method: string, path: string, init: { body?: unknown; query?: Record<string, string | number | undefined>; headers?: Record<string, string>; signal?: AbortSignal } = {}): Promise<Response> {
    const qs = Object.entries(init.query ?? {}).filter((e): e is [string, string | number] => e[1] !== undefined);
    const url = base + path + (qs.length ? `?${new URLSearchParams(qs.map(([k, v]) => [k, String(v)]))}` : "");
    const headers: Record<string, string> = { authorization: `Bearer ${opts.token}`, ...init.headers };
    if (init.body !== undefined) headers["content-type"] = "application/json";
    let res: Response;
    try {
      res = await doFetch(url, { method, headers, body: init.body === undefined ? undefined : JSON.stringify(init.body), signal: init.signal });
    } catch (e) {
      if (init.signal?.aborted) throw e;
      throw new AirlockApiError("server_unreachable", 0, `no answer from ${base} (${(e as Error).message}); is airlock serve running?`);
    }
    if (!res.ok) throw await errorOf(res);
    return res;
  }

  async function json<T>(method: string, path: string, init: Parameters<typeof send>[2] = {}): Promise<T> {
    return (await (await send(method, path, init)).json()) as T;
  }

  const enc = encodeURIComponent;
  const approver = (d: Decision): Record<string, string> => (d !== "deny" && opts.approverToken ? { [APPROVER_HEADER]: opts.approverToken } : {});

  /** Yields the frames of an SSE response as typed events. */
  async function* typed(res: Response): AsyncGenerator<SessionEvent> {
    if (!res.body) return;
    for await (const f of readFrames(res.body)) yield { type: f.event, id: f.id ?? "", data: JSON.parse(f.data) } as SessionEvent;
  }

  return {
    /** `GET /health` (needs no token). */
    health: () => json<Health>("GET", "/health"),
    /** `GET /openapi.json`: the OpenAPI 3.1 document. */
    openapi: () => json<Record<string, unknown>>("GET", "/openapi.json"),

    sessions: {
      /** `POST /sessions`. `workspace` must be absolute (default: the server's cwd). */
      create: (body: CreateSessionBody = {}) => json<SessionCreated>("POST", "/sessions", { body }),
      /** `GET /sessions`, newest first (`limit` 1–1000, default 200). */
      list: (q: { limit?: number } = {}) => json<SessionList>("GET", "/sessions", { query: q }),
      /** `GET /sessions/:id`: the session with `in_flight`, `turn_elsewhere` (its running turn when another process, an `airlock run`, runs it; else null), `messages`, `turns`. */
      get: (id: string) => json<SessionDetail>("GET", `/sessions/${enc(id)}`),
      /**
       * `POST /sessions/:id/reply`: starts a turn (rejects with `session_busy` while one runs) and yields its events
       * until its `turn_finished`. Leaving the iteration early does not stop the turn (use `cancel`).
       */
      reply: async (id: string, message: string, o: { signal?: AbortSignal } = {}): Promise<AsyncGenerator<BusEvent>> =>
        typed(await send("POST", `/sessions/${enc(id)}/reply`, { body: { message }, signal: o.signal })) as AsyncGenerator<BusEvent>,
      /**
       * Starts a turn without following it here (`POST /sessions/:id/reply`, closed after its `turn_started`):
       * resolves with `{session_id, turn_id}`; follow the turn on {@link events}. The turn goes on after the close.
       */
      start: async (id: string, message: string): Promise<EventData<"turn_started">> => {
        const ac = new AbortController();
        const stream = typed(await send("POST", `/sessions/${enc(id)}/reply`, { body: { message }, signal: ac.signal }));
        try {
          const first = (await stream.next()).value;
          if (first?.type !== "turn_started") throw new AirlockApiError("internal", 200, `the reply stream did not open with turn_started (got ${first?.type ?? "nothing"})`);
          return first.data;
        } finally {
          await stream.return(undefined);
          ac.abort();
        }
      },
      /** `POST /sessions/:id/cancel`: `cancelled` false when nothing was running. */
      cancel: (id: string) => json<CancelAnswer>("POST", `/sessions/${enc(id)}/cancel`),
      /** `GET /sessions/:id/rules`: the session tree's "Allow for this session" rules. */
      rules: (id: string) => json<SessionRuleList>("GET", `/sessions/${enc(id)}/rules`),
      /** `DELETE /sessions/:id/rules/:rule_id`. */
      removeRule: (id: string, ruleId: string) => json<SessionRuleRemoved>("DELETE", `/sessions/${enc(id)}/rules/${enc(ruleId)}`),
    },

    cards: {
      /** `GET /actions` (every pending card), or `GET /sessions/:id/actions` (those `sessionId` may answer). */
      list: (sessionId?: string) => json<CardList>("GET", sessionId ? `/sessions/${enc(sessionId)}/actions` : "/actions"),
      /**
       * Decides a card: at its root surface (`POST /actions/:request_id`), or from `o.sessionId`
       * (`POST /sessions/:id/actions/:request_id`). An allow carries the approver token when the client has one.
       */
      answer: (requestId: string, decision: Decision, o: { sessionId?: string; reason?: string } = {}) =>
        json<CardOutcome>("POST", o.sessionId ? `/sessions/${enc(o.sessionId)}/actions/${enc(requestId)}` : `/actions/${enc(requestId)}`, {
          body: { decision, ...(o.reason ? { reason: o.reason } : {}) } satisfies DecisionBody,
          headers: approver(decision),
        }),
      /** `GET /sessions/:id/actions/:request_id/preview`: the diff a pending write/edit card would make. */
      preview: (sessionId: string, requestId: string) => json<CardPreview>("GET", `/sessions/${enc(sessionId)}/actions/${enc(requestId)}/preview`),
    },

    schedules: {
      list: () => json<ScheduleList>("GET", "/schedules"),
      get: (id: string) => json<Schedule>("GET", `/schedules/${enc(id)}`),
      /** `POST /schedules`: `recipe_path` absolute; `recipe_text` when the server should not read it. */
      create: (body: NewScheduleBody) => json<Schedule>("POST", "/schedules", { body }),
      remove: (id: string) => json<ScheduleDeleted>("DELETE", `/schedules/${enc(id)}`),
      /** `POST /schedules/:id/run` (202 with the running run; `conflict` carrying `details.run` while one runs). */
      run: (id: string) => json<RunView>("POST", `/schedules/${enc(id)}/run`),
      /** `GET /schedules/:id/runs`, newest first (`limit` 1–1000, default 100). */
      runs: (id: string, q: { limit?: number } = {}) => json<RunList>("GET", `/schedules/${enc(id)}/runs`, { query: q }),
    },

    runs: {
      /** `GET /runs`: every schedule's runs, newest first. */
      list: (q: { limit?: number } = {}) => json<RunList>("GET", "/runs", { query: q }),
      /** `GET /runs/:id`: the run's result object. */
      get: (id: string) => json<RunView>("GET", `/runs/${enc(id)}`),
    },

    /** `GET /audit`: the decision log, newest first. */
    audit: (q: AuditQuery = {}) => json<AuditList>("GET", "/audit", { query: q }),

    /**
     * `GET /sessions/:id/events` as an async iterator: the `snapshot`, then live events. When the stream
     * ends or the connection fails, it reconnects with `Last-Event-ID` (the last id seen) after a backoff
     * (`baseDelayMs` doubling to `maxDelayMs`); the server replays what was missed or sends a fresh `snapshot`.
     * Ends when `signal` aborts or the loop breaks. Rejects with {@link AirlockApiError} on a 4xx answer
     * (`unauthorized`, `session_not_found`: no retry), or after `maxAttempts` failed attempts in a row.
     */
    async *events(sessionId: string, o: EventsOptions = {}): AsyncGenerator<SessionEvent> {
      let last = o.lastEventId;
      let failures = 0;
      const firstDelay = o.baseDelayMs ?? 250;
      const maxDelay = o.maxDelayMs ?? 5000;
      const maxAttempts = o.maxAttempts ?? 20;
      const ac = new AbortController();
      const onAbort = () => ac.abort();
      o.signal?.addEventListener("abort", onAbort, { once: true });
      try {
        while (!ac.signal.aborted) {
          let error: unknown = null;
          let any = false;
          try {
            const res = await send("GET", `/sessions/${enc(sessionId)}/events`, { headers: last ? { "Last-Event-ID": last } : {}, signal: ac.signal });
            for await (const ev of typed(res)) {
              any = true;
              failures = 0;
              if (ev.id) last = ev.id;
              yield ev;
            }
          } catch (e) {
            if (ac.signal.aborted) return;
            if (e instanceof AirlockApiError && e.status >= 400 && e.status < 500) throw e;
            error = e;
          }
          if (ac.signal.aborted) return;
          // a failed attempt, or a stream that closed before its first event: the backoff grows
          if (error !== null || !any) {
            if (++failures >= maxAttempts) throw error ?? new AirlockApiError("server_unreachable", 0, `the event stream of ${sessionId} closed ${failures} times in a row before any event`);
          }
          await sleep(Math.min(maxDelay, firstDelay * 2 ** Math.max(0, failures - 1)), ac.signal);
        }
      } finally {
        o.signal?.removeEventListener("abort", onAbort);
        ac.abort();
      }
    },
  };
}

/** The client {@link createClient} returns. */
export type AirlockClient = ReturnType<typeof createClient>;

/** Reads a failed answer as an {@link AirlockApiError} (a body that is not the error object: `internal`). */
async function errorOf(res: Response): Promise<AirlockApiError> {
  const text = await res.text().catch(() => "");
  try {
    const { error, message, ...details } = JSON.parse(text) as { error: ErrorCode; message: string } & Record<string, unknown>;
    if (typeof error === "string" && typeof message === "string") return new AirlockApiError(error, res.status, message, details);
  } catch {
    // not JSON: below
  }
  return new AirlockApiError("internal", res.status, `HTTP ${res.status} without an airlock error object: ${text.slice(0, 200)}`);
}
