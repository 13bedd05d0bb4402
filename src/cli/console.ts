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
 * Prints the console link for the configured server (`--url`, else `$AIRLOCK_URL`, else the config's
 * `server.host:server.port`), with the API token from the data dir (created if missing). Contacts no server.
 * @returns 0. @throws AirlockError `usage` / `config_invalid` for a bad data dir or config.
 */
export async function consoleCommand(opts: ConsoleOptions, env: Record<string, string | undefined> = process.env): Promise<number> {
  const { resolveContext, serverUrl } = await import("./context.ts");
  const { ensureTokens } = await import("../config/paths.ts");
  const { writeJson, writeStdout } = await import("./output.ts");
  const ctx = await resolveContext(opts, env);
  const base = serverUrl(ctx, opts.url ?? (env.AIRLOCK_URL || undefined));
  const link = consoleLink(base, ensureTokens(ctx.dataDir).apiToken);
  if (opts.json) writeJson({ url: link });
  else writeStdout(`${link}\n`);
  return 0;
}
