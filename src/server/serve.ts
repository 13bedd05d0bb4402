/**
 * @module server/serve
 * Binds the API with `Bun.serve` (`idleTimeout: 0`: SSE streams stay open; heartbeats keep proxies
 * awake). The server is registered with the runtime, so `rt.close()` stops it.
 */
import type { Runtime } from "../runtime.ts";
import { createApp, type AppOptions } from "./app.ts";

export interface ServerHandle {
  /** `http://HOST:PORT` with the actual port (useful with port 0). */
  url: string;
  hostname: string;
  port: number;
  /** Stops accepting and closes open connections (SSE streams included). Idempotent. */
  stop(): Promise<void>;
}

/**
 * Starts the HTTP API for `rt` on `host:port` (port 0 = a free port).
 * @throws the bind error (e.g. EADDRINUSE) as thrown by Bun.serve.
 */
export function startServer(rt: Runtime, opts: { host?: string; port?: number } & AppOptions = {}): ServerHandle {
  const hostname = opts.host ?? rt.config.server.host;
  const app = createApp(rt, { ...opts, host: hostname });
  const server = Bun.serve({
    hostname,
    port: opts.port ?? rt.config.server.port,
    fetch: app.fetch,
    idleTimeout: 0,
    // No transport cap: Bun would answer a bare 413 without JSON. The body-limit middleware (app.ts)
    // refuses an over-limit Content-Length before reading, and stops a chunked body at the limit.
    maxRequestBodySize: Number.MAX_SAFE_INTEGER,
  });
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await server.stop(true);
  };
  rt.onClose(stop);
  const shownHost = hostname.includes(":") ? `[${hostname}]` : hostname;
  const url = `http://${shownHost}:${server.port}`;
  // notification links point here unless `notify.console_url` names another base (a tunnel)
  rt.notify.setServerUrl(url);
  return { url, hostname, port: server.port!, stop };
}
