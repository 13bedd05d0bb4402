/**
 * @module server/middleware/host
 * DNS-rebinding guard (SPEC §6): a request whose `Host` header is not a loopback name
 * (127.0.0.1, localhost, [::1], any port) or the configured host is refused with 421 `forbidden_host`.
 */
import type { MiddlewareHandler } from "hono";
import { AirlockError } from "../../errors.ts";

/** The host part of a `Host` header value (`[::1]:7420` → `::1`, `Localhost:80` → `localhost`); null when malformed. */
export function hostName(header: string): string | null {
  const h = header.trim().toLowerCase();
  if (!h) return null;
  if (h.startsWith("[")) {
    const end = h.indexOf("]");
    if (end < 0) return null;
    const rest = h.slice(end + 1);
    if (rest && !/^:\d{1,5}$/.test(rest)) return null;
    return h.slice(1, end);
  }
  const m = /^([^:]+)(?::(\d{1,5}))?$/.exec(h);
  return m ? m[1]!.replace(/\.$/, "") : null;
}

/** True when `name` (as from {@link hostName}) is loopback or equals the configured host. */
export function isAllowedHost(name: string, configuredHost: string): boolean {
  const configured = hostName(configuredHost.includes(":") && !configuredHost.startsWith("[") ? `[${configuredHost}]` : configuredHost);
  if (name === "localhost" || name === "::1" || name === "127.0.0.1") return true;
  // Binding to a wildcard address does not make every name acceptable: only loopback names pass then.
  if (configured && configured !== "0.0.0.0" && configured !== "::" && name === configured) return true;
  return false;
}

/** Refuses requests whose Host header is missing, malformed, or neither loopback nor `configuredHost`. */
export function hostGuard(configuredHost: string): MiddlewareHandler {
  return async function hostGuardMiddleware(c, next) {
    const raw = c.req.header("host");
    const name = raw ? hostName(raw) : null;
    if (!name || !isAllowedHost(name, configuredHost)) {
      throw new AirlockError(
        "forbidden_host",
        `requests for host ${JSON.stringify(raw ?? "")} are refused (DNS rebinding guard); use http://127.0.0.1:<port> or the configured server.host`,
      );
    }
    await next();
  };
}
