/**
 * @module server/serve
 * Binds the API with `Bun.serve` (`idleTimeout: 0`: SSE streams stay open; heartbeats keep proxies
 * awake). The server is registered with the runtime, so `rt.close()` stops it: its SSE streams end cleanly
 * after the events the shutdown publishes (SPEC §6).
 */
import { SseStreams } from "../bus/sse.ts";
import type { Runtime } from "../runtime.ts";
import { createApp, type AppOptions } from "./app.ts";

/** How long a stop outside the runtime's close (a test's `handle.stop()`) waits for the SSE streams to end, ms. */
const STOP_GRACE_MS = 5_000;
/** The least time a stop gives its connections to close before it closes them, even past the deadline, ms. */
const STOP_FLOOR_MS = 200;

export interface ServerHandle {
  /** `http://HOST:PORT` with the actual port (useful with port 0). */
  url: string;
  hostname: string;
  port: number;
  /**
   * `url` with the loopback address bound (`http://127.0.0.1:PORT`, `http://[::1]:PORT`) when the host is a name that
   * resolved to one (`localhost`), else `url`: what `serve.lock` records, since a name can also resolve to the other
   * loopback address, whose same port any local user may bind (the client would send its token there).
   */
  lockUrl: string;
  /**
   * Stops accepting connections, ends every open SSE stream cleanly (what was published to it is written, then
   * the chunked body ends), waits for the connections to close until the runtime's close deadline (5 s after
   * `rt.close()` started; 5 s from now outside it; at least 200 ms), then closes those left. Idempotent.
   */
  stop(): Promise<void>;
}

/**
 * Starts the HTTP API for `rt` on `host:port` (port 0 = a free port).
 * @throws the bind error (e.g. EADDRINUSE) as thrown by Bun.serve.
 */
export function startServer(rt: Runtime, opts: { host?: string; port?: number } & AppOptions = {}): ServerHandle {
  const hostname = opts.host ?? rt.config.server.host;
  const streams = new SseStreams();
  let listenAddress: { address: string; port: number } | undefined;
  const app = createApp(rt, { ...opts, host: hostname, streams, listenAddress: () => listenAddress });
  const server = Bun.serve({
    hostname,
    port: opts.port ?? rt.config.server.port,
    fetch: app.fetch,
    idleTimeout: 0,
    // No transport cap: Bun would answer a bare 413 without JSON. The body-limit middleware (app.ts)
    // refuses an over-limit Content-Length before reading, and stops a chunked body at the limit.
    maxRequestBodySize: Number.MAX_SAFE_INTEGER,
  });
  // (Bun's Server has `address`, the bound socket's, but its types do not say so)
  const bound = (server as unknown as { address?: { address?: string } }).address?.address;
  // the proof names the address bound (server/server-proof.ts); none known: no proof is given (500 internal)
  listenAddress = bound ? { address: bound, port: server.port! } : undefined;
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    // no new connection; each open one closes once its response is complete (Bun resolves `closed` when all did)
    const closed = server.stop(false);
    // each SSE stream writes what was published to it (the cancelled turns' ends, the withdrawn cards) and ends
    // its chunked body; a client that does not read holds the stop no later than the runtime's close deadline
    streams.endAll();
    // (at least STOP_FLOOR_MS: slow SessionEnd hooks that used the deadline up must not cut the streams short)
    const deadline = rt.closeDeadline ?? Date.now() + STOP_GRACE_MS;
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([closed, new Promise((r) => (timer = setTimeout(r, Math.max(STOP_FLOOR_MS, deadline - Date.now()))))]);
    clearTimeout(timer);
    await server.stop(true);
  };
  rt.onClose(stop);
  const shownHost = hostname.includes(":") ? `[${hostname}]` : hostname;
  const url = `http://${shownHost}:${server.port}`;
  // notification links point here unless `notify.console_url` names another base (a tunnel)
  rt.notify.setServerUrl(url);
  const named = !/^[\d.]+$/.test(hostname) && !hostname.includes(":");
  const lockUrl = named && bound === "127.0.0.1" ? `http://127.0.0.1:${server.port}` : named && bound === "::1" ? `http://[::1]:${server.port}` : url;
  return { url, hostname, port: server.port!, lockUrl, stop };
}
