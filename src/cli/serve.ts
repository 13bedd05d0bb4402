/**
 * @module cli/serve
 * `airlock serve`: starts the HTTP API (SPEC §6) on the store (the data dir's SQLite file, or PostgreSQL),
 * with the scheduler, until SIGINT/SIGTERM. `--role` (PostgreSQL only) splits the API from the workers.
 */
import { join } from "node:path";
import { AirlockError } from "../errors.ts";
import { roleRefusal, servesApi, type ServeRole } from "../fleet/role.ts";
import type { CommonOptions } from "./context.ts";
import { signalEchoFilter } from "./signal-echo.ts";

/** Options of `airlock serve` (parsed and validated by `main.ts`). */
export interface ServeOptions extends CommonOptions {
  /** `--host`: interface to bind; default the config's `server.host` (127.0.0.1). */
  host?: string;
  /** `--port`: integer 0–65535 (0 = any free port); default the config's `server.port` (7420). */
  port?: number;
  /** `--headless`: every session created by this server is headless (asks refused at once, never parked); refused (`usage`) with `--role worker`, which creates no session. */
  headless?: boolean;
  /** `--role`: `all` (default), `api` (API and SSE; turns queued for workers) or `worker` (runs queued turns, no port bound); the last two need a PostgreSQL store (fleet/role.ts). */
  role?: ServeRole;
}

/**
 * Runs the server until SIGINT/SIGTERM: one runtime on the data dir (turns a previous process left
 * running are marked `interrupted`), the HTTP API on `host:port`, the scheduler. Prints
 * `airlock: listening on http://HOST:PORT` (the actual port when 0) on stderr, then
 * `airlock: store: SQLite PATH | PostgreSQL URL (from storage: | $AIRLOCK_DATABASE_URL); role: ROLE` (the URL's
 * password redacted; a worker prints it too).
 * @returns 0 after a clean stop.
 * @throws AirlockError `data_dir_in_use` when another live `airlock serve` holds the data dir (its pid and URL in the
 *   message); `data_dir_unusable` for a read-only or full data dir; `usage` / `config_invalid` for a bad config; `usage` (exit 2, a setup problem)
 *   when the address cannot be bound: the port is in use, the host is not an address of this machine or cannot be
 *   listened on (`localhost.`), or the port is privileged (see `bindError`); `usage` for a bracketed `--host [::1]`
 *   (the config's is `config_invalid`); `usage` for a `--role` other than `all` on the SQLite store (fleet/role.ts),
 *   and for `--role worker --headless` (headless is fixed where sessions are created: the api nodes);
 *   `storage_unavailable` on PostgreSQL when the user cannot create or use the schedule queue's schema
 *   `pgboss` (the message names the GRANT; store/pg-grants.ts).
 *   A `--role worker` binds no port and prints `airlock: worker: …` on stderr instead of the listening line.
 */
export async function serve(opts: ServeOptions): Promise<number> {
  const role = opts.role ?? "all";
  // headless is a property of a session, fixed where it is created (an api or all node); a worker creates none
  if (role === "worker" && opts.headless === true) {
    throw new AirlockError("usage", "--headless has no effect on --role worker: headless is fixed when a session is created, on the node that creates it; pass --headless to the api nodes (airlock serve --role api --headless), and every worker honours it");
  }
  const { writeStderr } = await import("./output.ts");
  // armed before the slow start-up: Bun arms a signal handler on a later tick, so one installed just after
  // the banner let a SIGTERM sent on seeing it meet the default action (killed mid-start, the WAL and lock left)
  const stop = watchStop(writeStderr);
  try {
    return await serveUntil(opts, role, stop.stopped);
  } finally {
    stop.dispose();
  }
}

async function serveUntil(opts: ServeOptions, role: ServeRole, stopped: Promise<void>): Promise<number> {
  const { resolveContext } = await import("./context.ts");
  const { writeStderr } = await import("./output.ts");
  const { createRuntime } = await import("../runtime.ts");
  const { startServer } = await import("../server/serve.ts");
  const { acquireServeLock } = await import("../store/serve-lock.ts");
  const { consoleLink } = await import("./console.ts");
  const ctx = await resolveContext(opts);
  const host = opts.host ?? ctx.config.server.host;
  const port = opts.port ?? ctx.config.server.port;
  // (the config's server.host is checked by its schema; --host the same way: a bracketed address would be shown as [[::1]])
  if (/[[\]]/.test(host)) throw new AirlockError("usage", `--host ${host}: write an IPv6 address without brackets, e.g. --host ::1 (not [::1])`);
  const { chooseStorage } = await import("../store/storage.ts");
  const storage = chooseStorage(ctx.config.storage);
  // --role api|worker needs the store several processes share (PostgreSQL); on SQLite one process serves every role
  const refused = roleRefusal(role, storage.kind === "postgres" ? "postgres" : "sqlite");
  if (refused) throw refused;
  // one server per data dir (its scheduler would fire every schedule twice otherwise): data_dir_in_use names the other.
  // SQLite only: on PostgreSQL several servers share the database by design (docs/scale-out.md)
  const lock = storage.kind === "sqlite" ? acquireServeLock(ctx.dataDir) : { release() {}, sign(_approverToken: string) {}, setUrl(_url: string | null) {} };
  let rt;
  try {
    // the lock is signed with the approver token (a MAC the client commands check before they follow the URL it
    // records: store/serve-lock.ts recordedServer); the tokens after the lock, whose write says first when the data
    // dir cannot be written (data_dir_unusable)
    const { ensureTokens } = await import("../config/paths.ts");
    const tokens = ensureTokens(ctx.dataDir);
    lock.sign(tokens.approverToken);
    rt = await createRuntime({ config: ctx.config, configDir: ctx.configDir, configPath: ctx.configPath, dataDir: ctx.dataDir, headless: opts.headless === true, role, tokens });
  } catch (e) {
    lock.release();
    throw e;
  }
  rt.onClose(() => lock.release());
  const { redactUrl } = await import("../store/pg-url.ts");
  const storeLine = `airlock: store: ${
    storage.kind === "sqlite" ? `SQLite ${join(ctx.dataDir, "airlock.db")}` : `PostgreSQL ${redactUrl(storage.url)} (from ${storage.source === "env" ? "$AIRLOCK_DATABASE_URL" : "storage:"})`
  }; role: ${role}\n`;
  if (storage.kind === "postgres") {
    // schedules run on pg-boss, which needs its own schema: refuse to start with schedules silently dead
    try {
      const { readPgGrants, queueGrantError } = await import("../store/pg-grants.ts");
      const refusedQueue = queueGrantError(await readPgGrants(rt.store.sql), redactUrl(storage.url));
      if (refusedQueue) throw refusedQueue;
    } catch (e) {
      await rt.close();
      throw e;
    }
  }
  if (!servesApi(role)) {
    // a worker serves no HTTP API (it binds no port): it claims queued turns and works schedule fires
    try {
      rt.checkProvider();
      const { schedulePortFor } = await import("../scheduler/service.ts");
      schedulePortFor(rt);
    } catch (e) {
      await rt.close();
      throw e;
    }
    writeStderr(
      `airlock: worker: running turns queued by api nodes and schedule fires from the PostgreSQL store (data dir ${ctx.dataDir}); serving no HTTP API (no port bound${opts.host !== undefined || opts.port !== undefined ? "; --host/--port ignored" : ""})\n` +
        storeLine,
    );
    await stopped;
    await rt.close();
    writeStderr("airlock: stopped\n");
    return 0;
  }
  let server;
  try {
    rt.checkProvider(); // a missing provider.script fails at startup (config_invalid, exit 2), not at the first turn
    server = startServer(rt, { host, port });
    lock.setUrl(server.lockUrl);
    // registered after the server's stop, so run before it (LIFO): the URL leaves the lock before the listener closes,
    // since the port is free for any local user while the server drains its streams (up to its close deadline) and
    // a lock still naming it would send the client commands' tokens there. If the lock cannot be rewritten, it goes.
    rt.onClose(() => {
      try {
        lock.setUrl(null);
      } catch {
        lock.release();
      }
    });
  } catch (e) {
    await rt.close();
    throw bindError(e, host, port);
  }
  // a wildcard bind is dialled (and its Host accepted) as loopback of its family: the curl hint and the console link name it
  const dialBase = consoleBase(server.lockUrl, server.hostname, server.port);
  writeStderr(
    `airlock: listening on ${server.url} (data dir ${ctx.dataDir})${opts.headless ? "; headless: every ask is refused at once" : ""}\n` +
      storeLine +
      (role === "api" ? "airlock: role api: turns asked for here are queued for a worker (airlock serve --role worker|all on this database); schedule fires are only enqueued here\n" : "") +
      `airlock: API token in ${rt.tokens.apiTokenPath}; approver token in ${rt.tokens.approverTokenPath}\n` +
      `airlock: try: curl -s -H "Authorization: Bearer $(cat ${rt.tokens.apiTokenPath})" ${dialBase}/sessions\n` +
      `airlock: console: ${consoleLink(dialBase, rt.tokens.apiToken)}\n` +
      `airlock: walkthrough: docs/quickstart.md\n`,
  );
  await stopped;
  await rt.close();
  writeStderr(`airlock: stopped; ${server.url} no longer answers\n`);
  return 0;
}

/**
 * `stopped` resolves on the first SIGINT or SIGTERM (said on stderr). The handlers stay until `dispose()`:
 * a repeat within a few milliseconds is the same Ctrl-C delivered twice (the terminal's process group and
 * `npm start`'s forwarding, cli/signal-echo.ts) and is ignored, so the shutdown finishes (WAL emptied, lock
 * released); a later one exits at once (130), as `airlock run` does.
 */
function watchStop(writeStderr: (s: string) => void): { stopped: Promise<void>; dispose(): void } {
  const isEcho = signalEchoFilter();
  let stopping = false;
  let resolve!: () => void;
  const stopped = new Promise<void>((r) => (resolve = r));
  const onSignal = (sig: NodeJS.Signals) => {
    if (isEcho()) return;
    if (stopping) {
      writeStderr(`airlock: ${sig} again: exiting without waiting\n`);
      process.exit(130);
    }
    stopping = true;
    writeStderr(`airlock: ${sig}: stopping (send it again to exit at once)\n`);
    resolve();
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  return {
    stopped,
    dispose() {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
    },
  };
}

/**
 * Turns a failure to bind `host:port` into a usage error saying what to do (Bun's own message, "Failed to
 * start server. Is port N in use?", names neither the host nor the fix): EADDRINUSE, EACCES, EADDRNOTAVAIL, and
 * EINVAL / ENOTFOUND / EAI_NONAME / EAI_AGAIN (a host that cannot be listened on, e.g. `localhost.`). Other errors
 * pass through unchanged.
 */
export function bindError(e: unknown, host: string, port: number): unknown {
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  const fix = "pick another with --port N (npm start -- --port N)";
  switch (code) {
    case "EADDRINUSE":
      return new AirlockError("usage", `port ${port} on ${host} is in use; ${fix} or stop what is using it`);
    case "EACCES":
      return new AirlockError("usage", `not allowed to listen on port ${port} on ${host} (ports below 1024 need privileges); ${fix}`);
    case "EADDRNOTAVAIL":
      return new AirlockError("usage", `cannot listen on ${host}: it is not an address of this machine; pass --host 127.0.0.1 (or set server.host)`);
    case "EINVAL":
    case "ENOTFOUND":
    case "EAI_NONAME":
    case "EAI_AGAIN":
      // a host the system cannot listen on (`localhost.`, a name that does not resolve): not airlock's fault
      return new AirlockError("usage", `cannot listen on ${JSON.stringify(host)} port ${port} (${code}): it is not an address or name of this machine that can be listened on; pass --host 127.0.0.1 (or set server.host to an address such as 127.0.0.1, ::1 or 0.0.0.0)`);
    default:
      return e;
  }
}

/**
 * The base URL the console link and the banner's curl hint use: the server's own URL, except that a wildcard bind is
 * shown as the loopback address of its family (0.0.0.0 as 127.0.0.1, :: as [::1], as `serve.lock` and
 * `airlock console` give it: cli/context.ts `dialHost`), since no client dials a wildcard and the Host check only
 * accepts loopback names or the configured host.
 */
export function consoleBase(url: string, hostname: string, port: number): string {
  return hostname === "0.0.0.0" ? `http://127.0.0.1:${port}` : hostname === "::" ? `http://[::1]:${port}` : url;
}
