/**
 * @module cli/server-client
 * The small authenticated JSON client the `actions`, `schedule` and `attach` commands use to talk to a running
 * `airlock serve` (found as cli/context.ts `serverTarget` says), and how its answers become CLI errors: the server's code and message, plus an
 * `airlock: hint:` line naming the CLI command to run instead of the HTTP route the message names.
 */
import { AirlockError, assertNever, ERROR_CODES, type ErrorCode } from "../errors.ts";
import type { CommonOptions, ServerTarget } from "./context.ts";

/** Options of every command that talks to the server. */
export interface ServerClientOptions extends CommonOptions {
  /**
   * `--url URL`: the running server; else `$AIRLOCK_URL`; else the live server recorded in the data dir's `serve.lock`;
   * else `http://<server.host>:<server.port>` from the config (cli/context.ts `serverTarget`).
   */
  url?: string;
}

/** One HTTP answer: its status and its JSON body. */
export interface ApiResponse {
  status: number;
  body: Record<string, any>;
}

export interface ServerClient {
  /** Base URL without a trailing slash (changed only by {@link ServerClient.refind}). */
  readonly base: string;
  /** The data dir the tokens were read from. */
  dataDir: string;
  /** Where `base` came from (cli/context.ts `serverTarget`). */
  readonly target: ServerTarget;
  /**
   * Reads the data dir's `serve.lock` again (store/serve-lock.ts `recordedServer`, with all its checks) when `base`
   * was not given by the person (`--url`, `$AIRLOCK_URL`): when a live server recorded there listens on another URL
   * (a server restarted with `--port 0`), that URL becomes `base` and the line saying so is returned. When `base` came
   * from the lock and no live server is recorded there any more (state `none`: the lock gone, stale or not trusted),
   * the whole target is resolved again (cli/context.ts `serverTarget`, then {@link provenConfigTarget}): the config's
   * address, sent a token only once it proves ({@link ServerClient.recheck}), and the line saying so is returned (a
   * server back on the config's port without a lock, e.g. a PostgreSQL store, is found). Else null: a URL the person
   * gave is kept, and so is `base` while a recorded server starts or stops, or when the target cannot be resolved
   * (another uid holds the config's port: the next attempt asks again).
   */
  refind(): Promise<string | null>;
  /**
   * Why `base` must not be sent a token now, or null. A URL from the data dir's `serve.lock` is followed only while
   * the lock still names a live server listening there (store/serve-lock.ts `recordedServer`, read again each time):
   * once that server stopped, its port is any local user's to take (a long-lived `attach` reconnects for hours).
   * The config's address: the reason when another uid holds its loopback port (cli/context.ts `foreignListener`),
   * else when what answers there does not prove, to a fresh nonce, that it holds the data dir's API token and
   * listens on that port ({@link proofFailure}: one `GET /server-proof` per check, no token sent).
   * Null for `--url` and `$AIRLOCK_URL`.
   */
  recheck(): Promise<string | null>;
  /**
   * Resolves when `base` may be sent a token now ({@link ServerClient.recheck} gives no reason).
   * @throws AirlockError `server_unreachable` with the reason, where the URL came from and what to do; nothing sent.
   */
  ensureSendable(): Promise<void>;
  /**
   * Sends one request with the API token and parses the JSON answer.
   * @throws AirlockError `server_unreachable` when nothing answers at `base`, or what answers is not airlock serve, or
   *   (nothing sent) `base` came from `serve.lock` and the lock no longer names a live server there, or from the
   *   config and what answers there gave no proof ({@link ServerClient.recheck}).
   */
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<ApiResponse>;
  /**
   * Sends one request as `call` does and returns the JSON body when the answer's status is `ok` (default 200).
   * @throws AirlockError `server_unreachable` as `call`; any other status: the server's own error (`apiError`),
   *   with the hint `hint` gives for that answer (a CLI command to run instead).
   */
  send(method: string, path: string, opts?: SendOptions): Promise<Record<string, any>>;
}

/** How {@link ServerClient.send} sends and checks one request. */
export interface SendOptions {
  /** The status of a success (200, 201, 202). Default 200. */
  ok?: number;
  /** The JSON body to send. */
  body?: unknown;
  /** Extra headers (e.g. `X-Airlock-Approver`). */
  headers?: Record<string, string>;
  /** The hint after an error answer (see `apiError`), or undefined for none. */
  hint?: (r: ApiResponse) => string | undefined;
}

/** A `SendOptions.hint` for a 404 answer only. */
export function notFoundHint(hint: string): (r: ApiResponse) => string | undefined {
  return (r) => (r.status === 404 ? hint : undefined);
}

/**
 * Resolves the server's URL (`--url`, else `$AIRLOCK_URL`, else the live server recorded in the data dir's
 * `serve.lock`, else the config's `server.host:port`: cli/context.ts `serverTarget`) and the API token (from the
 * data dir), and returns a client for it. A URL from the config is sent a token only after it proved, on each
 * request, that it holds that token ({@link ServerClient.recheck}, {@link proofFailure}).
 * @throws AirlockError `usage` / `config_invalid` from the data dir or config.
 */
export async function connect(opts: ServerClientOptions, env: Record<string, string | undefined> = process.env): Promise<ServerClient> {
  const { resolveContext, serverTarget, foreignListener, lockTarget } = await import("./context.ts");
  const { ensureTokens } = await import("../config/paths.ts");
  const { recordedServer } = await import("../store/serve-lock.ts");
  const ctx = await resolveContext(opts, env);
  const tokens = ensureTokens(ctx.dataDir);
  const token = tokens.apiToken;
  // (a config's host name with several addresses: the one that proves is used from here on, before any token is sent)
  let current = await provenConfigTarget(await serverTarget(ctx, opts.url, env, tokens.approverToken), token, ctx.dataDir);
  /** Whether the last reason of `recheck` was that another program answers (or listens) at the config's address. */
  let taken = false;
  const client: ServerClient = {
    get base() {
      return current.base;
    },
    get target() {
      return current;
    },
    dataDir: ctx.dataDir,
    async refind() {
      if (current.from === "--url" || current.from === "$AIRLOCK_URL") return null;
      const recorded = recordedServer(ctx.dataDir, tokens.approverToken);
      if (recorded.state === "none" && current.from === "serve.lock") {
        let next: ServerTarget;
        try {
          next = await provenConfigTarget(await serverTarget(ctx, undefined, env, tokens.approverToken), token, ctx.dataDir);
        } catch {
          return null; // (another uid holds the config's port, or a server is starting: asked again at the next attempt)
        }
        const was = current.base;
        current = next;
        return next.from === "config"
          ? `no live airlock serve of the data dir ${ctx.dataDir} is recorded any more; trying ${next.base === was ? `${was} again, now from` : `${next.base} in place of ${was}, from`} ${next.fromText} (a token goes there only once it proves it is that server)`
          : next.base === was
            ? null
            : `the airlock serve of the data dir ${ctx.dataDir} now listens on ${next.base} (${next.fromText}); following it there`;
      }
      if (recorded.state !== "listening" || recorded.url === current.base) return null;
      current = lockTarget(recorded);
      return `the airlock serve of the data dir ${ctx.dataDir} now listens on ${recorded.url} (pid ${recorded.pid}, as its ${recorded.lockPath} says); following it there`;
    },
    async recheck() {
      const { base, from } = current;
      taken = false;
      if (from === "config") {
        const foreign = await foreignListener(base);
        const refusal = foreign !== null ? { why: `${foreign}.`, answered: true } : await proofRefusal(base, token, ctx.dataDir);
        taken = refusal?.answered ?? false;
        return refusal?.why ?? null;
      }
      if (from !== "serve.lock") return null;
      const now = recordedServer(ctx.dataDir, tokens.approverToken);
      if (now.state === "listening" && now.url === base) return null;
      return `the airlock serve recorded in ${now.lockPath} no longer listens at ${base} (${now.state === "listening" ? `it records ${now.url} now` : now.state === "starting" ? `its server (pid ${now.pid}) is starting or stopping` : now.why}), so nothing is sent there`;
    },
    async ensureSendable() {
      const target = current;
      const gone = await client.recheck();
      if (gone !== null) throw unreachable(gone, { ...target, recorded: recordedServer(ctx.dataDir, tokens.approverToken) }, ctx.dataDir, taken);
    },
    async call(method, path, body, headers = {}) {
      const target = current;
      const base = target.base;
      await client.ensureSendable();
      let res: Response;
      try {
        res = await fetch(base + path, {
          method,
          headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
      } catch (e) {
        throw unreachable(`cannot reach airlock serve at ${base}: ${connectFailure(e)}.`, target, ctx.dataDir);
      }
      const text = await res.text();
      try {
        return { status: res.status, body: JSON.parse(text) as Record<string, any> };
      } catch {
        throw unreachable(`what answers at ${base} is not airlock serve: ${method} ${path} got HTTP ${res.status} with a body that is not JSON.`, target, ctx.dataDir);
      }
    },
    async send(method, path, o = {}) {
      const r = await client.call(method, path, o.body, o.headers);
      if (r.status !== (o.ok ?? 200)) throw apiError(r, o.hint?.(r));
      return r.body;
    },
  };
  return client;
}

/**
 * `target`, or when it came from the config and its host name resolved to several addresses (cli/context.ts
 * `configuredServerBases`), the target of the first of them that proves to hold `apiToken` ({@link proofFailure}; no
 * token sent): the server binds one of the name's addresses, which the resolver may list second. None proving:
 * `target` unchanged (its next proof says why). Other targets are returned as they are, with no request.
 */
export async function provenConfigTarget(target: ServerTarget, apiToken: string, dataDir: string): Promise<ServerTarget> {
  if (target.from !== "config" || !target.alternates?.length) return target;
  for (const base of [target.base, ...target.alternates]) {
    if ((await proofFailure(base, apiToken, dataDir)) === null) return { ...target, base, alternates: [] };
  }
  return target;
}

/** How long the server proof may take before the address counts as not proven, ms. */
const PROOF_TIMEOUT_MS = 10_000;

/**
 * Why what answers at `base` (the config's `server.host:server.port`) must not be sent `apiToken`, or null when it
 * proved it is the data dir's airlock serve: a fresh random nonce (32 bytes) goes to `GET /server-proof` (no token
 * sent), and the answer's `proof` must equal, compared in constant time, HMAC-SHA-256 under `apiToken` over the
 * nonce and `base`'s address and port (server/server-proof.ts; `base` holds an address, not a name: cli/context.ts
 * `configuredServerBases`), or the wildcard of its family (`0.0.0.0`, `::`: a server bound there holds the port on
 * every address of the family). A server of the data dir on another port or address (relayed to) proves its own,
 * not this one; a name's proof cannot be checked (which address fetch dials is not known), so it never matches. Reasons: `cannot reach airlock serve at BASE: WHY.` when nothing answers (within
 * 10 s), else `what answers at BASE could not prove it is the airlock serve of the data dir DIR (WHY), so nothing
 * was sent there.` ({@link proofRefusal} also says which of the two it is).
 */
export async function proofFailure(base: string, apiToken: string, dataDir: string): Promise<string | null> {
  return (await proofRefusal(base, apiToken, dataDir))?.why ?? null;
}

/**
 * Why a token must not be sent to what answers at `base`, as {@link proofFailure} says (`why`), and whether something
 * answered there (`answered`: an HTTP answer that is no proof, i.e. another program, or another data dir's server,
 * holds that port), or null when it proved it is the data dir's airlock serve.
 */
export async function proofRefusal(base: string, apiToken: string, dataDir: string): Promise<{ why: string; answered: boolean } | null> {
  const { randomBytes } = await import("node:crypto");
  const { serverProof, proofMatches } = await import("../server/server-proof.ts");
  const nonce = randomBytes(32).toString("hex");
  const unproven = (why: string, answered = true) => ({
    why: `what answers at ${base} could not prove it is the airlock serve of the data dir ${dataDir} (${why}), so nothing was sent there.`,
    answered,
  });
  let port: number;
  let address: string;
  try {
    const u = new URL(base);
    port = Number(u.port || (u.protocol === "https:" ? 443 : 80));
    address = u.hostname.replace(/^\[|\]$/g, "");
  } catch {
    return unproven("the URL is not valid", false);
  }
  let res: Response;
  try {
    res = await fetch(`${base}/server-proof?nonce=${nonce}`, { redirect: "manual", signal: AbortSignal.timeout(PROOF_TIMEOUT_MS) });
  } catch (e) {
    return { why: `cannot reach airlock serve at ${base}: ${connectFailure(e)}.`, answered: false };
  }
  const text = await res.text().catch(() => "");
  if (res.status !== 200) return unproven(`GET /server-proof got HTTP ${res.status}`);
  let proof: unknown;
  try {
    proof = (JSON.parse(text) as { proof?: unknown } | null)?.proof;
  } catch {
    return unproven("GET /server-proof got a body that is not JSON");
  }
  // a server bound to the wildcard of the dialled address's family holds that port on every address of the family:
  // no other socket can bind one of them beside it (server/serve.ts sets no SO_REUSEPORT), so none can relay there
  const { isIPv4, isIPv6 } = await import("node:net");
  const wildcard = isIPv4(address) ? "0.0.0.0" : isIPv6(address) ? "::" : null;
  const proven = proofMatches(proof, serverProof(apiToken, address, port, nonce)) || (wildcard !== null && proofMatches(proof, serverProof(apiToken, wildcard, port, nonce)));
  return proven ? null : unproven("its proof for a fresh nonce does not match this data dir's API token and that address and port");
}

/**
 * `what` (one sentence), then where the URL came from and what to do, each on an indented line of its own
 * ({@link unreachableAdvice}; `taken`: another program answers at `target.base`, as {@link proofRefusal} says).
 */
export function unreachable(what: string, target: ServerTarget, dataDir: string, taken = false): AirlockError {
  return new AirlockError("server_unreachable", `${what}\n  The URL came from ${target.fromText}.\n${unreachableAdvice(target, dataDir, taken)}`);
}

/**
 * Why a request got no answer, in a few words, from a fetch error (its `code`: `ECONNREFUSED`, `ENOTFOUND`, …, or a
 * `TimeoutError`): "the connection was refused, so nothing listens on that port", "the connection timed out", … . An error of
 * another kind gives its own message, without Bun's "Is the computer able to access the url?".
 */
export function connectFailure(e: unknown): string {
  const err = (e ?? {}) as { code?: unknown; name?: unknown; message?: unknown };
  switch (typeof err.code === "string" ? err.code : "") {
    case "ECONNREFUSED":
    case "ConnectionRefused":
      return "the connection was refused, so nothing listens on that port";
    case "ENOTFOUND":
    case "EAI_NONAME":
    case "EAI_AGAIN":
      return "the host name does not resolve";
    case "ETIMEDOUT":
    case "ConnectionTimedOut":
      return "the connection timed out";
    case "ECONNRESET":
    case "ConnectionClosed":
      return "the connection was closed before an answer came";
    case "EHOSTUNREACH":
    case "ENETUNREACH":
      return "the host cannot be reached over the network";
    default:
      break;
  }
  if (err.name === "TimeoutError") return "the connection timed out";
  const text = String(err.message ?? e)
    .replace(/\s*Is the computer able to access the url\?/i, "")
    .trim();
  return text || "the connection failed";
}

/**
 * What to do when nothing (or not airlock serve) answers at `target.base`, as indented lines (no trailing newline).
 * While a live server holds the data dir (its `serve.lock`), starting another is never advised: a second
 * `airlock serve` on it exits 2 `data_dir_in_use`. With `taken` (another program answers at the config's address, or
 * another user listens on its port) starting one is not advised either (it would find the port in use): stopping that
 * program, another `server.port`, or `--url` of the server meant is.
 */
export function unreachableAdvice(target: ServerTarget, dataDir: string, taken = false): string {
  const r = target.recorded;
  switch (r.state) {
    case "listening":
      if (r.url !== target.base) {
        return (
          `  The airlock serve of the data dir ${dataDir} runs as pid ${r.pid} and listens on ${r.url} (its ${r.lockPath} says so).\n` +
          `  Talk to it with --url ${r.url}, or leave out ${target.from === "$AIRLOCK_URL" ? "$AIRLOCK_URL (unset AIRLOCK_URL)" : "--url"} and airlock finds it.`
        );
      }
      return (
        `  The airlock serve of the data dir ${dataDir} runs as pid ${r.pid} (its ${r.lockPath} says so) but does not answer there.\n` +
        `  See its terminal or log, or stop it (kill ${r.pid}) and start it again. A second airlock serve on this data dir would be refused with data_dir_in_use.`
      );
    case "starting":
      return (
        `  The airlock serve of the data dir ${dataDir} runs as pid ${r.pid} but is starting or stopping: it has recorded no URL in ${r.lockPath} now.\n` +
        `  Try again in a moment, or see its terminal or log. A second airlock serve on this data dir would be refused with data_dir_in_use.`
      );
    case "none":
      if (taken && target.from === "config") {
        let port = "its port";
        try {
          port = `port ${new URL(target.base).port}`;
        } catch {}
        return (
          `  ${port[0]!.toUpperCase()}${port.slice(1)} is taken by another program (not the airlock serve of the data dir ${dataDir}), so an airlock serve started now would find it in use.\n` +
          `  Stop that program, or set server.port in the config to a free port (airlock serve then listens there),\n` +
          `  or pass the URL of the airlock serve meant with --url http://HOST:PORT, with --data-dir set to its data dir.`
        );
      }
      return (
        `  To start one, run in another terminal: airlock serve --data-dir ${dataDir}\n` +
        `  If one runs already, pass its URL with --url http://HOST:PORT (or export AIRLOCK_URL=http://HOST:PORT),\n` +
        `  with --data-dir set to that server's data dir, where its API token is.`
      );
    default:
      return assertNever(r);
  }
}

/**
 * Turns an API error answer into an AirlockError with the server's own code (so exit codes follow
 * `exitCodeFor`) and message, followed by `hint` on its own `airlock: hint:` line. `hint` reads
 * `what to do with: <command>`; it is left out when the server's message already names that command.
 */
export function apiError(r: ApiResponse, hint?: string): AirlockError {
  const code: ErrorCode = (ERROR_CODES as readonly string[]).includes(r.body.error) ? (r.body.error as ErrorCode) : "internal";
  let message =
    r.status === 401 ? `${r.body.message ?? "unauthorized"} (the API token in the data dir does not match the server's; pass the server's --data-dir)` : (r.body.message ?? `HTTP ${r.status}`);
  // `hint` ends with the command (after its last ": "); a server message that already names it needs no hint.
  if (hint && !message.includes(hint.slice(hint.lastIndexOf(": ") + 2))) message += `\nairlock: hint: ${hint}`;
  return new AirlockError(code, message, r.body.request_id ? { request_id: r.body.request_id } : {});
}
