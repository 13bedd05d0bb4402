/**
 * @module server/app
 * The Hono application (SPEC §6): host guard → body limit → bearer auth → routes; one error
 * renderer (server/error-response.ts) answers every failure as `{"error": CODE, "message": TEXT}` with the code's HTTP status.
 */
import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { version } from "../../package.json" with { type: "json" };
import type { SseStreams } from "../bus/sse.ts";
import { consoleApiRoutes, consolePublicRoutes } from "../console/routes.ts";
import { AirlockError } from "../errors.ts";
import type { Runtime } from "../runtime.ts";
import { join } from "node:path";
import type { Health, ServerProof } from "./api-schemas.ts";
import { apiErrorHandler, notFoundResponse } from "./error-response.ts";
import { bearerAuth } from "./middleware/auth.ts";
import { hostGuard } from "./middleware/host.ts";
import { ServerProofQuery, serverProof } from "./server-proof.ts";
import { parseQuery } from "./validate.ts";
import { openApiDocument } from "./openapi.ts";
import { actionsRoutes } from "./routes/actions.ts";
import { auditRoutes } from "./routes/audit.ts";
import { schedulesRoutes } from "./routes/schedules.ts";
import { sessionRoutes } from "./routes/sessions.ts";

export interface AppOptions {
  /** The configured `server.host` (accepted in `Host` headers besides loopback names). Default: the config's. */
  host?: string;
  /** SSE heartbeat period, ms (default 15 000). */
  heartbeatMs?: number;
  /** Where the SSE routes register their streams, so the server ends them cleanly when it stops (server/serve.ts). */
  streams?: SseStreams;
  /**
   * The address and port the server is bound to, once it is (server/serve.ts): what `GET /server-proof` proves.
   * Undefined (or a getter answering undefined: not listening) makes that route answer 500 `internal`.
   */
  listenAddress?: () => { address: string; port: number } | undefined;
  /** Extra route groups mounted behind auth (actions, schedules, runs), each a Hono app with full paths. */
  extraRoutes?: Hono[];
}

/** Builds the API app for `rt`. */
export function createApp(rt: Runtime, opts: AppOptions = {}): Hono {
  const app = new Hono();
  const host = opts.host ?? rt.config.server.host;

  // every failure, of every route group but the schedules' own handler (the same renderer), is rendered here
  app.onError(apiErrorHandler({ dbPath: join(rt.dataDir, "airlock.db"), sharedStore: rt.store.sql.dialect === "postgres" }));
  app.notFound(notFoundResponse);

  app.use("*", hostGuard(host));
  // The console's page, script and style: after the Host guard, before the bearer check (they hold no data).
  app.route("/", consolePublicRoutes());
  app.use(
    "*",
    bodyLimit({
      maxSize: rt.config.limits.max_body_bytes,
      onError: () => {
        const limit = rt.config.limits.max_body_bytes;
        throw new AirlockError("payload_too_large", `the request body is larger than limits.max_body_bytes (${limit} bytes); send less`, { limit_bytes: limit });
      },
    }),
  );
  app.use("*", bearerAuth(() => rt.tokens.apiToken));

  // `notify`: notifications sent and failed since start (counts only: /health needs no token)
  app.get("/health", (c) => {
    const n = rt.notify.stats();
    return c.json({ status: "ok", version, notify: { sent: n.sent, failed: n.failed } } satisfies Health);
  });
  // The server proof (server/server-proof.ts): no token needed, nothing told but the proof of a client's nonce
  app.get("/server-proof", (c) => {
    const { nonce } = parseQuery(c, ServerProofQuery);
    const bound = opts.listenAddress?.();
    if (bound === undefined) throw new AirlockError("internal", "this app is not served on a port (server/serve.ts startServer), so it has no proof to give");
    return c.json({ proof: serverProof(rt.tokens.apiToken, bound.address, bound.port, nonce) } satisfies ServerProof);
  });
  // The OpenAPI 3.1 document of these routes (server/openapi.ts), behind the token like the rest.
  app.get("/openapi.json", (c) => c.body(openApiDocument().text, 200, { "content-type": "application/json; charset=utf-8" }));
  app.route("/", sessionRoutes(rt, { heartbeatMs: opts.heartbeatMs, streams: opts.streams }));
  // Cards (the gate engineer's routes): GET /actions, GET /sessions/:id/actions, POST /sessions/:id/actions/:request_id.
  app.route("/", actionsRoutes(rt));
  // The decision log (store/audit-log.ts): GET /audit.
  app.route("/", auditRoutes(rt));
  // Schedules and runs (scheduler/service.ts: the runtime's scheduler, started here, stopped on rt.close()).
  app.route("/", schedulesRoutes(rt));
  // The console's feed and card previews (src/console/routes.ts).
  app.route("/", consoleApiRoutes(rt, { heartbeatMs: opts.heartbeatMs, streams: opts.streams }));
  for (const r of opts.extraRoutes ?? []) app.route("/", r);
  return app;
}
