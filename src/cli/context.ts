/**
 * @module cli/context
 * What every command starts from: the data dir, the validated config and the tokens, resolved
 * from the shared `--data-dir` / `--config` flags and the environment.
 */
import type { Config } from "../config/schema.ts";
import { AirlockError, assertNever } from "../errors.ts";
import type { RecordedServer } from "../store/serve-lock.ts";

/** Flags every command accepts (SPEC §2). */
export interface CommonOptions {
  /** `--data-dir DIR`: overrides `$AIRLOCK_HOME` / `$XDG_DATA_HOME/airlock` / `~/.local/share/airlock`. */
  dataDir?: string;
  /** `--config FILE`: the config file; default `<data dir>/airlock.yaml` (missing = defaults). */
  config?: string;
}

/** The resolved context of one CLI invocation. */
export interface CliContext {
  /** Absolute path of the data dir (exists, created 0700 if it was missing). */
  dataDir: string;
  /** The validated, deeply frozen config. */
  config: Readonly<Config>;
  /** Absolute path of the config file read, or null when the defaults apply. */
  configPath: string | null;
  /** Directory relative paths of the config resolve against. */
  configDir: string;
  /** The config file's text as parsed (UTF-8), or null when the defaults apply (no file). */
  configText: string | null;
}

/**
 * Resolves the data dir and loads the config.
 * @throws AirlockError `usage` (data dir unusable) or `config_invalid` (config file missing/invalid).
 */
export async function resolveContext(opts: CommonOptions, env: Record<string, string | undefined> = process.env, configText?: string): Promise<CliContext> {
  const { resolveDataDir } = await import("../config/paths.ts");
  const { loadConfig } = await import("../config/load.ts");
  const dataDir = resolveDataDir({ flag: opts.dataDir, env });
  const loaded = loadConfig({ configPath: opts.config, dataDir, ...(configText !== undefined ? { text: configText } : {}) });
  return { dataDir, config: loaded.config, configPath: loaded.path, configDir: loaded.dir, configText: loaded.text };
}

/**
 * The address a client dials for the bind address `host`: a wildcard (`0.0.0.0`, `::`, which no client can dial and
 * the server's Host check refuses) as the loopback address of its family (`127.0.0.1`, `::1`), as store/serve-lock.ts
 * does for a lock's URL; any other host as it is.
 */
export function dialHost(host: string): string {
  return host === "0.0.0.0" ? "127.0.0.1" : host === "::" ? "::1" : host;
}

/**
 * `http://<server.host>:<server.port>` from the config (IPv6 hosts bracketed; a wildcard host as the loopback address
 * of its family: {@link dialHost}): where `airlock serve` listens by default, and where the client commands look when
 * nothing else names a server.
 */
export function configuredServerUrl(ctx: CliContext): string {
  const dialled = dialHost(ctx.config.server.host);
  const host = dialled.includes(":") ? `[${dialled}]` : dialled;
  return `http://${host}:${ctx.config.server.port}`;
}

/**
 * {@link configuredServerUrl} with a host name (`localhost`) resolved once to its addresses, in the resolver's order
 * (IPv6 bracketed; duplicates dropped): the client commands send the server proof, and every request after it, to one
 * address, the first of these that proves it (cli/server-client.ts `provenConfigTarget`). A name left to the HTTP
 * client may be dialled as the other loopback address (fetch tries `::1` first for `localhost`), whose same port any
 * local process may bind, and the proof (server/server-proof.ts) covers the address it was answered for. An address
 * host gives itself; a name that does not resolve is kept (the request then fails saying so).
 */
export async function configuredServerBases(ctx: CliContext): Promise<string[]> {
  const host = ctx.config.server.host;
  const { isIP } = await import("node:net");
  if (isIP(host.replace(/^\[|\]$/g, "")) !== 0) return [configuredServerUrl(ctx)];
  const { lookup } = await import("node:dns/promises");
  let addresses: string[];
  try {
    addresses = (await lookup(host, { all: true })).map((a) => a.address);
  } catch {
    return [configuredServerUrl(ctx)];
  }
  const bases = [...new Set(addresses.map((a) => `http://${a.includes(":") ? `[${a}]` : a}:${ctx.config.server.port}`))];
  return bases.length > 0 ? bases : [configuredServerUrl(ctx)];
}

/**
 * Why the config's address `base` must not be sent a token, or null: its host is loopback (`127.0.0.1`, `::1`,
 * `localhost`) or a wildcard, and a socket of another uid listens on its port on this machine (store/serve-lock.ts
 * `listenersOn`). Another local user who binds the port while no server of the data dir holds it would get the token
 * (and a console link's page reads it from the fragment). Other hosts are not checked (another machine's port).
 */
export async function foreignListener(base: string): Promise<string | null> {
  const { listenersOn } = await import("../store/serve-lock.ts");
  let u: URL;
  try {
    u = new URL(base);
  } catch {
    return null;
  }
  if (!["127.0.0.1", "[::1]", "localhost", "0.0.0.0", "[::]"].includes(u.hostname)) return null;
  const port = Number(u.port || 80);
  const me = process.geteuid?.();
  const other = (listenersOn(port) ?? []).find((r) => r.uid !== me);
  return other === undefined
    ? null
    : `port ${port} on this machine is held by uid ${other.uid}, not by the user airlock runs as (${me}), so no airlock serve of this data dir listens there and nothing is sent to ${base}`;
}

/**
 * Where the config's server address comes from, in words: `server.host/server.port of the config FILE`, or, with no
 * config file, `the default server.host/server.port (no config file at <data dir>/airlock.yaml)`.
 */
export function configOrigin(ctx: CliContext): string {
  return ctx.configPath !== null ? `server.host/server.port of the config ${ctx.configPath}` : `the default server.host/server.port (no config file at ${ctx.dataDir}/airlock.yaml)`;
}

/** The server a client command talks to, and where its URL came from. */
export interface ServerTarget {
  /** Base URL, no trailing slash. */
  base: string;
  /** Where `base` came from, for messages: `--url`, `$AIRLOCK_URL`, the lock's live server, or the config. */
  from: "--url" | "$AIRLOCK_URL" | "serve.lock" | "config";
  /** `from` in words, e.g. `the live airlock serve (pid 4242) recorded in /d/serve.lock`. */
  fromText: string;
  /** What the data dir's `serve.lock` says about a live server (store/serve-lock.ts `recordedServer`), whatever `from` is. */
  recorded: RecordedServer;
  /**
   * From the config only: the other addresses its host name resolved to ({@link configuredServerBases}), tried in turn
   * when `base` gives no server proof (cli/server-client.ts `provenConfigTarget`).
   */
  alternates?: string[];
}

/** The target of a live server recorded in the data dir's `serve.lock` (its URL, and where it came from in words). */
export function lockTarget(recorded: Extract<RecordedServer, { state: "listening" }>): ServerTarget {
  return { base: recorded.url, from: "serve.lock", fromText: `the live airlock serve (pid ${recorded.pid}) recorded in ${recorded.lockPath}`, recorded };
}

/**
 * The URL of the `airlock serve` the client commands (`console`, `actions`, `schedule`, `attach`) talk to: `--url`
 * (`url`), else `$AIRLOCK_URL` (non-empty), else the live server recorded in the data dir's `serve.lock` (trusted only
 * as store/serve-lock.ts `recordedServer` says: this user's file, writable by no one else, its process alive, its
 * URL's MAC under `approverToken`, the data dir's approver token or null), else {@link configuredServerBases} (which
 * the callers send a token only once it proved it holds the data dir's API token: cli/server-client.ts
 * `proofFailure`). A trailing slash is dropped.
 * @throws AirlockError `server_unreachable` without `--url`/`$AIRLOCK_URL` while the lock's live server has no URL
 *   recorded (starting or stopping: it listens nowhere, so no address is given the token), or when the config's
 *   loopback port is held by another uid ({@link foreignListener}).
 */
export async function serverTarget(ctx: CliContext, url: string | undefined, env: Record<string, string | undefined>, approverToken: string | null): Promise<ServerTarget> {
  const { recordedServer } = await import("../store/serve-lock.ts");
  const recorded = recordedServer(ctx.dataDir, approverToken);
  if (url) return { base: url.replace(/\/+$/, ""), from: "--url", fromText: "--url", recorded };
  if (env.AIRLOCK_URL) return { base: env.AIRLOCK_URL.replace(/\/+$/, ""), from: "$AIRLOCK_URL", fromText: "$AIRLOCK_URL", recorded };
  switch (recorded.state) {
    case "listening":
      return lockTarget(recorded);
    case "starting":
      // a live server with no URL in its lock listens nowhere (it records its URL as soon as it listens, and takes it
      // out before it closes its listener): whatever answers at the config's address (or at a port it just gave up)
      // is not it, so the API token goes nowhere
      throw new AirlockError(
        "server_unreachable",
        `no URL to send the API token to: the airlock serve (pid ${recorded.pid}) holding the data dir ${ctx.dataDir} has recorded none in ${recorded.lockPath} ` +
          `(it is starting or stopping, and listens nowhere then; whatever answers at the config's server.host/server.port is not it).\n` +
          `  Try again in a moment, or see its terminal or log; a second airlock serve on this data dir would be refused (data_dir_in_use).`,
        { pid: recorded.pid },
      );
    case "none": {
      const [base, ...alternates] = await configuredServerBases(ctx);
      const foreign = await foreignListener(base!);
      if (foreign !== null) {
        throw new AirlockError(
          "server_unreachable",
          `${foreign}; ${recorded.why}.\n  The URL came from ${configOrigin(ctx)}.\n` +
            `  Start this data dir's server: airlock serve --data-dir ${ctx.dataDir} --port 0 (it records its URL in ${recorded.lockPath}),\n` +
            `  or pass --url http://HOST:PORT of the one running.`,
          { port: Number(new URL(base!).port || 80) },
        );
      }
      return { base: base!, from: "config", fromText: `${configOrigin(ctx)}, as ${recorded.why}`, recorded, alternates };
    }
    default:
      return assertNever(recorded);
  }
}
