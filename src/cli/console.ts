/**
 * @module cli/console
 * `airlock console`: prints the link that opens the watcher's console of a running `airlock serve`,
 * `http://HOST:PORT/#t=<api-token>`. The token rides in the fragment, which browsers never send to the
 * server; the page moves it into sessionStorage and strips it from the address bar.
 */
import type { ServerClientOptions } from "./server-client.ts";

/** Options of `airlock console`. */
export interface ConsoleOptions extends ServerClientOptions {
  /** `--json`: print `{"url"}` instead of the bare link. */
  json?: boolean;
}

/** The console link for `base` (`http://HOST:PORT`, no trailing slash) and `apiToken`. */
export function consoleLink(base: string, apiToken: string): string {
  return `${base.replace(/\/+$/, "")}/#t=${encodeURIComponent(apiToken)}`;
}

/**
 * Prints the console link for the server (`--url`, else `$AIRLOCK_URL`, else the live server recorded in the data
 * dir's `serve.lock`, else the config's `server.host:server.port`: cli/context.ts `serverTarget`), with the API token
 * from the data dir (created if missing); on the config's address only once what answers there proved it holds that
 * token (cli/server-client.ts `proofFailure`: `GET /server-proof`, no token sent). It then asks the server's `/health` (no token sent, 1.5 s at most): when
 * nothing answers, `airlock: warning: no airlock serve answers at URL now: WHY. The link above opens only once a
 * server listens there.` on stderr, then where the URL came from and what to do (never to start a second server
 * while a live one holds the data dir); for a URL not from the config the link is printed and the exit code is 0
 * either way: the command prints a link, it does not check that server (docs/console.md).
 * @returns 0. @throws AirlockError `usage` / `config_invalid` for a bad data dir or config; `server_unreachable`
 *   (nothing printed on stdout) when the URL came from the config and no proof came from there.
 */
export async function consoleCommand(opts: ConsoleOptions, env: Record<string, string | undefined> = process.env): Promise<number> {
  const { resolveContext, serverTarget } = await import("./context.ts");
  const { ensureTokens } = await import("../config/paths.ts");
  const { connectFailure, proofRefusal, provenConfigTarget, unreachable, unreachableAdvice } = await import("./server-client.ts");
  const { writeJson, writeStderr, writeStdout } = await import("./output.ts");
  const ctx = await resolveContext(opts, env);
  const tokens = ensureTokens(ctx.dataDir);
  const target = await provenConfigTarget(await serverTarget(ctx, opts.url, env, tokens.approverToken), tokens.apiToken, ctx.dataDir);
  const base = target.base;
  if (target.from === "config") {
    // the link carries the token: printed only for a server that proved it is this data dir's (nothing was sent)
    const refusal = await proofRefusal(base, tokens.apiToken, ctx.dataDir);
    if (refusal !== null) throw unreachable(refusal.why, target, ctx.dataDir, refusal.answered);
  }
  const link = consoleLink(base, tokens.apiToken);
  if (opts.json) writeJson({ url: link });
  else writeStdout(`${link}\n`);
  const failure = await healthFailure(base, connectFailure);
  if (failure !== null) {
    writeStderr(
      `airlock: warning: no airlock serve answers at ${base} now: ${failure}. The link above opens only once a server listens there.\n` +
        `  The URL came from ${target.fromText}.\n${unreachableAdvice(target, ctx.dataDir)}\n`,
    );
  }
  return 0;
}

/** Why `GET /health` at `base` got no airlock serve's answer within 1.5 s, in a few words (`connectFailure`), or null when one answered. */
async function healthFailure(base: string, connectFailure: (e: unknown) => string): Promise<string | null> {
  try {
    const r = await fetch(`${base.replace(/\/+$/, "")}/health`, { signal: AbortSignal.timeout(1500) });
    return r.ok ? null : `what answers there said HTTP ${r.status} to GET /health`;
  } catch (e) {
    return connectFailure(e);
  }
}
