/**
 * @module agent/providers/early
 * The one slot for `airlock run`'s early request (SPEC §2, "the early request"; `cli/early-request.ts` sends
 * it): a chat-completions request already in flight before the runtime, the store and the SDK are up, and
 * its adoption by the `openai` adapter's first request. The adapter's SDK client fetches through
 * {@link earlyAwareFetch}: its first request is compared with the early one (method, URL, body bytes, and the
 * `authorization`, `content-type` and `accept` headers) and, when all are equal, answered with the early
 * request's response instead of being sent again; on any difference the early request is aborted, the
 * SDK's own is sent, and the field that differed is reported. Only the first request of the process is ever
 * compared: the slot is emptied by it, adopted or not. No zod, no SDK: `cli/early-request.ts` imports this
 * before the config is validated.
 */

/** The headers compared on adoption. The early request also sends the SDK's `user-agent` (not compared: a constant both send); the SDK's `x-stainless-*` headers are not sent early. */
export const COMPARED_HEADERS = ["authorization", "content-type", "accept"] as const;

/** A request sent early, waiting for the adapter's first request. */
export interface EarlyRequest {
  /** Always `POST`. */
  method: "POST";
  /** The URL it was sent to. */
  url: string;
  /** The exact body bytes sent, as text (JSON). */
  body: string;
  /** The compared headers as sent (lower-case names). */
  headers: Readonly<Record<(typeof COMPARED_HEADERS)[number], string>>;
  /** The response of the request in flight (rejects when it fails or is aborted). */
  response: Promise<Response>;
  /** Aborts the request in flight (its response's body too); idempotent. */
  abort(): void;
  /** Told once when the adapter's first request differed: the field (`method`, `url`, `body`, or a header name). */
  onMismatch(field: string): void;
}

let pending: EarlyRequest | undefined;
/** The field of the last early request that was not adopted, until taken. */
let mismatched: string | undefined;

/** Puts `req` in the slot (aborting one already there: only one early request per process). */
export function offerEarlyRequest(req: EarlyRequest): void {
  pending?.abort();
  pending = req;
}

/**
 * Empties the slot and aborts the request in it, if it was never adopted: the run ended (or failed) before
 * its first model request. A no-op once adopted or when nothing was sent.
 * @returns whether an unadopted early request was aborted.
 */
export function withdrawEarlyRequest(): boolean {
  const p = pending;
  pending = undefined;
  p?.abort();
  return p !== undefined;
}

/** The field in which the adapter's first request differed from the early one (then not adopted), once; undefined otherwise. */
export function takeEarlyMismatch(): string | undefined {
  const f = mismatched;
  mismatched = undefined;
  return f;
}

/** Whether an early request is waiting to be adopted. */
export function earlyRequestPending(): boolean {
  return pending !== undefined;
}

/**
 * The field in which the SDK's request (`url`, `init`) differs from `early`, or undefined when equal. The body
 * must be a string (the SDK's JSON) equal byte for byte; headers are compared by their lower-case names.
 */
export function differingField(early: EarlyRequest, url: string, init: RequestInit | undefined): string | undefined {
  if ((init?.method ?? "GET").toUpperCase() !== early.method) return "method";
  if (url !== early.url) return "url";
  if (typeof init?.body !== "string" || init.body !== early.body) return "body";
  const headers = new Headers(init.headers);
  for (const name of COMPARED_HEADERS) if ((headers.get(name) ?? "") !== early.headers[name]) return name;
  return undefined;
}

/**
 * The `fetch` the `openai` SDK client is given: the process's first request through it is matched against the
 * early request in the slot ({@link differingField}). Equal → the early response, its abort tied to the SDK's
 * signal (a timeout or a cancelled turn aborts it as it would the SDK's own); different → the early request is
 * aborted, `onMismatch` told, and the request sent as usual. Every later request (retries included) is a
 * plain `fetch`.
 */
export function earlyAwareFetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
  const early = pending;
  if (early === undefined) return fetch(input, init);
  pending = undefined;
  const url = typeof input === "string" ? input : input instanceof URL ? input.toString() : input.url;
  const field = input instanceof Request ? "request" : differingField(early, url, init);
  if (field !== undefined) {
    early.abort();
    mismatched = field;
    early.onMismatch(field);
    return fetch(input, init);
  }
  const signal = init?.signal;
  if (signal) {
    if (signal.aborted) early.abort();
    else signal.addEventListener("abort", () => early.abort(), { once: true });
  }
  return early.response;
}
