/**
 * @module server/routes/audit
 * The decision log over HTTP (SPEC §6): `GET /audit?session=&since=&decision=&limit=` — audit rows
 * (`call_judged`, `card_parked`, `card_decision`, `card_stale`), newest first, behind the API token.
 */
import { Hono } from "hono";
import { AuditQueryParams, queryAudit } from "../../store/audit-log.ts";
import type { Store } from "../../store/store.ts";
import type { AuditList } from "../api-schemas.ts";
import { parseQuery } from "../validate.ts";

/** What the route needs from the runtime. */
export interface AuditRuntime {
  readonly store: Store;
}

/**
 * The audit route, with its full path (mounted behind the auth middleware). `session` includes the
 * session's whole subtree; `since` is an audit id (rows after it) or an ISO time (rows at or after it);
 * `decision` matches a row's decision or code; `limit` 1–1000, default 100.
 * Errors (thrown, rendered by app.onError): 400 `bad_request` naming the parameter, 404 `session_not_found`.
 */
export function auditRoutes(rt: AuditRuntime): Hono {
  const app = new Hono();
  app.get("/audit", async (c) => {
    const q = parseQuery(c, AuditQueryParams);
    return c.json({ audit: await queryAudit(rt.store, q) } satisfies AuditList);
  });
  return app;
}
