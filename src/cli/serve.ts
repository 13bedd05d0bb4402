/**
 * @module cli/serve
 * `airlock serve`: starts the HTTP API (SPEC §6) on the embedded SQLite store in the data dir,
 * with the scheduler, until SIGINT/SIGTERM.
 */
import type { CommonOptions } from "./context.ts";

/** Options of `airlock serve` (parsed and validated by `main.ts`). */
export interface ServeOptions extends CommonOptions {
  /** `--host`: interface to bind; default the config's `server.host` (127.0.0.1). */
  host?: string;
  /** `--port`: integer 0–65535 (0 = any free port); default the config's `server.port` (7420). */
  port?: number;
}

/**
 * Runs the server until it is stopped.
 * TODO(server engineer): open the store in `ctx.dataDir`, `ensureTokens(ctx.dataDir)`, build the Hono app,
 * `Bun.serve({hostname, port})`, print `listening on http://HOST:PORT` to stderr (the actual port when 0),
 * start the scheduler, and on SIGINT/SIGTERM drain and return 0.
 * @returns the exit code (0 after a clean stop).
 * @throws AirlockError `usage` / `config_invalid` for a bad data dir or config.
 */
export async function serve(opts: ServeOptions): Promise<number> {
  const { resolveContext, notImplemented } = await import("./context.ts");
  const ctx = await resolveContext(opts);
  const host = opts.host ?? ctx.config.server.host;
  const port = opts.port ?? ctx.config.server.port;
  void host;
  void port;
  return notImplemented("serve");
}
