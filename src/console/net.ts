/**
 * @module console/net
 * The page's side of the API: the bearer token (taken from the `#t=` fragment into `sessionStorage`, the
 * fragment then stripped), JSON calls, and Server-Sent Events read with `fetch` + a stream reader (an
 * `EventSource` cannot send the Authorization header), reconnecting with backoff and `Last-Event-ID`.
 */

const TOKEN_KEY = "airlock.token";
const APPROVER_KEY = "airlock.approver";

/** Moves a `#t=<token>` fragment into sessionStorage and strips it from the address bar. Returns the token, or null. */
export function takeToken(): string | null {
  const m = /^#t=([^&]+)/.exec(location.hash);
  if (m) {
    sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(m[1]!));
    history.replaceState(null, "", location.pathname + "#/");
  }
  return sessionStorage.getItem(TOKEN_KEY);
}

/** Stores the API token pasted by the person. */
export function setToken(t: string): void {
  sessionStorage.setItem(TOKEN_KEY, t.trim());
}

/** The approver token kept for this tab, or null. Sent only with decisions. */
export function approverToken(): string | null {
  return sessionStorage.getItem(APPROVER_KEY);
}

/** Keeps (or, with null, forgets) the approver token for this tab. */
export function setApproverToken(t: string | null): void {
  if (t) sessionStorage.setItem(APPROVER_KEY, t.trim());
  else sessionStorage.removeItem(APPROVER_KEY);
}

/** An API answer: HTTP status (0 when the server could not be reached) and the JSON body. */
export interface Answer {
  status: number;
  body: any;
}

/** Calls the API with the bearer token; never throws (network failures are status 0). */
export async function api(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const token = sessionStorage.getItem(TOKEN_KEY) ?? "";
  try {
    const res = await fetch(path, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: any = null;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      parsed = { error: "bad_answer", message: text.slice(0, 500) };
    }
    return { status: res.status, body: parsed };
  } catch (e) {
    return { status: 0, body: { error: "unreachable", message: `the server did not answer (${(e as Error).message})` } };
  }
}

/** Starts a turn: `POST /sessions/:id/reply`, whose stream is dropped once accepted (the turn is watched on /events). */
export async function reply(sessionId: string, message: string): Promise<Answer> {
  const token = sessionStorage.getItem(TOKEN_KEY) ?? "";
  try {
    const res = await fetch(`/sessions/${encodeURIComponent(sessionId)}/reply`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ message }),
    });
    if (res.ok) {
      void res.body?.cancel().catch(() => {});
      return { status: res.status, body: null };
    }
    return { status: res.status, body: await res.json().catch(() => ({ message: res.statusText })) };
  } catch (e) {
    return { status: 0, body: { error: "unreachable", message: (e as Error).message } };
  }
}

/** Connection state of a stream. */
export type StreamState = "connecting" | "live" | "reconnecting" | "unauthorized" | "not found";

/** Callbacks of {@link openStream}. */
export interface StreamHandlers {
  onEvent(name: string, data: any, id: string | null): void;
  onState(s: StreamState, detail?: string): void;
}

/**
 * Reads an SSE route until `signal` aborts, reconnecting after any end or failure with backoff (0.25 s
 * doubling to 8 s, reset once a stream opens) and the last seen id as `Last-Event-ID`. Ids are opaque.
 * A 401 stops it (`unauthorized`), and so does a 404 (`not found`: the session does not exist).
 */
export async function openStream(path: string, h: StreamHandlers, signal: AbortSignal): Promise<void> {
  let lastId: string | null = null;
  let delay = 250;
  while (!signal.aborted) {
    h.onState(lastId === null ? "connecting" : "reconnecting");
    try {
      const headers: Record<string, string> = { authorization: `Bearer ${sessionStorage.getItem(TOKEN_KEY) ?? ""}`, accept: "text/event-stream" };
      if (lastId !== null) headers["last-event-id"] = lastId;
      const res = await fetch(path, { headers, signal, cache: "no-store" });
      if (res.status === 401) {
        h.onState("unauthorized", "the API token was refused");
        return;
      }
      if (res.status === 404) {
        h.onState("not found", "no such session");
        return;
      }
      if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}`);
      h.onState("live");
      delay = 250;
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = "";
      let ev = "message";
      let data: string[] = [];
      let id: string | null = null;
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let nl: number;
        while ((nl = buf.indexOf("\n")) >= 0) {
          const line = buf.slice(0, nl).replace(/\r$/, "");
          buf = buf.slice(nl + 1);
          if (line === "") {
            if (data.length) {
              if (id !== null) lastId = id;
              let parsed: any = null;
              try {
                parsed = JSON.parse(data.join("\n"));
              } catch {
                parsed = data.join("\n");
              }
              h.onEvent(ev, parsed, id);
            }
            ev = "message";
            data = [];
            id = null;
          } else if (line.startsWith(":")) {
            // comment (heartbeat)
          } else {
            const i = line.indexOf(":");
            const field = i < 0 ? line : line.slice(0, i);
            const val = i < 0 ? "" : line.slice(i + 1).replace(/^ /, "");
            if (field === "event") ev = val;
            else if (field === "data") data.push(val);
            else if (field === "id") id = val;
          }
        }
      }
    } catch (e) {
      if (signal.aborted) return;
    }
    if (signal.aborted) return;
    h.onState("reconnecting");
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 8000);
  }
}
