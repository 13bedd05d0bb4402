/**
 * @module agent/providers/errors
 * The provider failures both SDK adapters share, as AirlockErrors with a message that says what to do:
 * HTTP status → code (401/403 `provider_auth`, never retried; 429 `provider_rate_limit`; 408/409/5xx
 * retryable `provider_error`), connection failures, idle streams, malformed streams. Each adapter maps
 * its own SDK's error classes onto these (provider-streams.md §1–2, checklist items 20–22, 25).
 */
import { AirlockError } from "../../errors.ts";
import { retryAfterMs } from "./retry.ts";

/** The server could not be reached (retryable). */
export function connectionError(baseURL: string, message: string, partialText: string): AirlockError {
  // the SDKs' messages end with their own full stop ("Connection error."): one, not two
  return new AirlockError("provider_error", `Could not reach the model server at ${baseURL}: ${message.replace(/[.\s]+$/, "")}. Check that it is running and provider.base_url is right.`, {
    retryable: true,
    partial_text: partialText,
  });
}

/** The stream went silent for `timeoutS` seconds (not retried: the request may still be running). */
export function idleTimeout(timeoutS: number, partialText: string): AirlockError {
  return new AirlockError("provider_error", `The model server sent nothing for ${timeoutS} s; gave up. Raise provider.timeout_s or check the server.`, {
    partial_text: partialText,
    retryable: false,
  });
}

/** The stream could not be parsed. `hint` says what to check for this provider. */
export function malformedStream(baseURL: string, message: string, partialText: string, hint = ""): AirlockError {
  return new AirlockError("provider_error", `The model server at ${baseURL} sent a malformed stream (${message}).${hint ? ` ${hint}` : ""}`, {
    retryable: false,
    partial_text: partialText,
  });
}

/** Anything else that went wrong during the call. */
export function otherError(baseURL: string, e: unknown, partialText: string): AirlockError {
  const msg = e instanceof Error ? e.message : String(e);
  return new AirlockError("provider_error", `The call to the model server at ${baseURL} failed: ${msg}.`, { retryable: false, partial_text: partialText });
}

/**
 * An HTTP error status from the model server. `extra` is kept in the error's details; `rejectHint`
 * says what to check when the request itself was rejected (4xx other than 401/403/408/409/429).
 */
export function httpStatusError(o: {
  status: number;
  detail: string;
  baseURL: string;
  keyVar: string;
  headers: Headers | undefined | null;
  extra: Record<string, unknown>;
  rejectHint: string;
}): AirlockError {
  const { status, detail, baseURL, keyVar, extra } = o;
  if (status === 401 || status === 403) {
    return new AirlockError("provider_auth", `The model server at ${baseURL} refused the API key (HTTP ${status}: ${detail}). Check the key in ${keyVar}.`, { ...extra, retryable: false });
  }
  if (status === 429) {
    return new AirlockError("provider_rate_limit", `The model server at ${baseURL} is rate-limiting requests (HTTP 429: ${detail}). Wait and retry, or lower the request rate.`, {
      ...extra,
      retryable: true,
      retry_after_ms: retryAfterMs(o.headers),
    });
  }
  if (status >= 500 || status === 408 || status === 409) {
    return new AirlockError("provider_error", `The model server at ${baseURL} failed (HTTP ${status}: ${detail}). Retry later.`, {
      ...extra,
      retryable: true,
      retry_after_ms: retryAfterMs(o.headers),
    });
  }
  if (/overloaded/i.test(detail) || /overloaded/i.test(String(extra.type ?? ""))) {
    // some gateways answer "overloaded" with a 4xx status; it is transient all the same
    return new AirlockError("provider_error", `The model server at ${baseURL} is overloaded (HTTP ${status}: ${detail}). Retry later.`, {
      ...extra,
      retryable: true,
      retry_after_ms: retryAfterMs(o.headers),
    });
  }
  return new AirlockError("provider_error", `The model server at ${baseURL} rejected the request (HTTP ${status}: ${detail}). ${o.rejectHint}`, { ...extra, retryable: false });
}

/**
 * True when an answer is an HTML page rather than the API's JSON or event stream: its `content-type` is
 * `text/html`, or its body text starts with `<!doctype html` or `<html` (proxies and captive portals, whose
 * pages say nothing an API client can act on).
 */
export function isHtmlAnswer(contentType: string, bodyText: string): boolean {
  if (/^\s*text\/html/i.test(contentType)) return true;
  return /^\s*(\d{3}\s+)?<(!doctype\s+html|html[\s>])/i.test(bodyText);
}

/**
 * An HTML page where the API was expected (a proxy, a captive portal, a wrong `base_url`): never retried,
 * since the same page would come back. `url` is the endpoint that was asked; `status` its HTTP status.
 */
export function htmlPageError(url: string, status: number, baseURL: string, extra: Record<string, unknown> = {}): AirlockError {
  return new AirlockError(
    "provider_error",
    `The model server sent an HTML page from ${url} (HTTP ${status}) instead of an API answer: a proxy, a captive portal or a wrong provider.base_url is in the way. Check that ${baseURL} reaches the API (open it in a browser, or try curl); not retried.`,
    { ...extra, status, retryable: false, html: true },
  );
}
