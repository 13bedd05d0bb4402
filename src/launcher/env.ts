/**
 * @module launcher/env
 * The environment of every host process airlock starts (tools and hooks), rebuilt from an
 * allow-list (SPEC §9): nothing passes because it was merely present in airlock's own environment.
 */

/** Names copied from airlock's environment (SPEC §9), plus every `LC_*`. */
export const ENV_ALLOW = ["PATH", "HOME", "LANG", "TERM", "TZ", "USER", "LOGNAME"] as const;

/**
 * Names that never pass, not even as explicit extras: `*_KEY`, `*_TOKEN`, `*_SECRET`, `*PASSWORD*`,
 * `*CREDENTIAL*`, `*COOKIE*`, `*PRIVATE_KEY*`, `*_DSN`, `*_PWD`, and `PASS` / `AUTH` as a whole word of the
 * name (`LC_MY_PASS`, `LC_AUTH`, `NPM_AUTH_TOKEN`; not `GIT_AUTHOR_NAME`, not `PWD`).
 */
const SECRET_NAME =
  /(_KEY|_TOKEN|_SECRET|_CREDENTIALS?|_PAT|_APIKEY|_DSN|_PWD)$|^(DATABASE_URL|AWS_SECRET_ACCESS_KEY|AWS_SESSION_TOKEN)$|(^|_)(PASS|AUTH)(_|$)|PASSWORD|PASSWD|SECRET|TOKEN|CREDENTIAL|COOKIE|PRIVATE_KEY/i;

/** True when a variable name looks like it carries a credential (and so never reaches a host process). */
export function isSecretName(name: string): boolean {
  return SECRET_NAME.test(name);
}

const DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/**
 * The allow-listed environment: `PATH`, `HOME`, `LANG`, `LC_*`, `TERM`, `TZ`, `USER`, `LOGNAME`
 * from `source` (default `process.env`), except names that look secret ({@link isSecretName}, e.g.
 * `LC_MY_TOKEN`), then `extra` on top (e.g. `BUN_BE_BUN` for `interpreter__js`).
 * Extras whose name looks secret are dropped unless `opts.allowSecretNames` (for a user-configured
 * MCP server env, never for model-driven tools). `PATH` defaults to a standard system path.
 */
export function sanitizedEnv(
  extra: Record<string, string> = {},
  opts: { source?: Record<string, string | undefined>; allowSecretNames?: boolean } = {},
): Record<string, string> {
  const source = opts.source ?? process.env;
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(source)) {
    if (v === undefined) continue;
    // The secret-name filter applies to allow-listed families too (`LC_MY_TOKEN` never passes).
    if (((ENV_ALLOW as readonly string[]).includes(k) || /^LC_[A-Z_]+$/.test(k)) && !isSecretName(k)) env[k] = v;
  }
  env.PATH ??= DEFAULT_PATH;
  for (const [k, v] of Object.entries(extra)) {
    if (!opts.allowSecretNames && isSecretName(k)) continue;
    env[k] = v;
  }
  return env;
}
