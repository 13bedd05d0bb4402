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
 * from the data dir (created if missing). It then asks the server's `/health` (no token sent, 1.5 s at most): when
 * nothing answers, a warning on stderr says so, where the URL came from and what to do (never to start a second
 * server while a live one holds the data dir); the link is printed and the exit code is 0 either way.
 * @returns 0. @throws AirlockError `usage` / `config_invalid` for a bad data dir or config.
 */
export async function consoleCommand(opts: ConsoleOptions, env: Record<string, string | undefined> = process.env): Promise<number> {
  const { resolveContext, serverTarget } = await import("./context.ts");
  const { ensureTokens } = await import("../config/paths.ts");
  const { unreachableAdvice } = await import("./server-client.ts");
  const { writeJson, writeStderr, writeStdout } = await import("./output.ts");
  const ctx = await resolveContext(opts, env);
  const tokens = ensureTokens(ctx.dataDir);
  const target = await serverTarget(ctx, opts.url, env, tokens.approverToken);
  const base = target.base;
  const link = consoleLink(base, tokens.apiToken);
  if (opts.json) writeJson({ url: link });
  else writeStdout(`${link}\n`);
  if (!(await answers(base))) {
    writeStderr(`airlock: nothing answers at ${base} (URL from ${target.fromText}), so the link will not open yet.\n${unreachableAdvice(target, ctx.dataDir)}\n`);
  }
  return 0;
}

/** Whether an airlock serve answers `GET /health` at `base` within 1.5 s. */
async function answers(base: string): Promise<boolean> {
  try {
    const r = await fetch(`${base.replace(/\/+$/, "")}/health`, { signal: AbortSignal.timeout(1500) });
    return r.ok;
  } catch {
    return false;
  }
}
