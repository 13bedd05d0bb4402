/**
 * @module cli/early-switch
 * What `airlock run` does before it reads anything (src/boot.ts; docs/performance.md, issue 20, twelfth session):
 * the early request's off switch, and the start of Bun's HTTP client thread, so that the thread's start-up overlaps
 * the early request's reads instead of following its `fetch` (cli/early-request.ts). Imports nothing: src/boot.ts
 * loads it for every argv.
 */

/** `AIRLOCK_EARLY_REQUEST=0` (or `false`, `off`, `no`, any case) turns the early request and its cache off. */
export const EARLY_SWITCH_ENV = "AIRLOCK_EARLY_REQUEST";

/** Whether `AIRLOCK_EARLY_REQUEST` in `env` turns the early request off: `0`, `false`, `off` or `no` (any case, spaces around ignored). */
export function earlySwitchedOff(env: Record<string, string | undefined>): boolean {
  const v = env[EARLY_SWITCH_ENV]?.trim().toLowerCase();
  return v === "0" || v === "false" || v === "off" || v === "no";
}

/** Where the request that starts the HTTP client thread connects: a character device, never a socket. */
export const HTTP_CLIENT_START_SOCKET = "/dev/null";

/**
 * Starts Bun's HTTP client thread now (its start-up, from the first `fetch` to its first `connect`, took 1.5–3 ms
 * of `airlock run`'s path to its early request on a loaded 2-core machine), unless `env` switches the early request
 * off ({@link earlySwitchedOff}). The request that starts it reaches nothing: it goes to the Unix socket at
 * {@link HTTP_CLIENT_START_SOCKET}, a character device, so connect(2) is refused (ECONNREFUSED) before a byte is
 * written; no host name is resolved and no proxy variable is used for a Unix socket. Its rejection is swallowed:
 * no error, no output, no unhandled rejection. Returns at once; never throws.
 */
export function startHttpClient(env: Record<string, string | undefined>): void {
  if (earlySwitchedOff(env)) return;
  try {
    fetch("http://localhost/", { unix: HTTP_CLIENT_START_SOCKET }).catch(() => {});
  } catch {
    // only ever a head start: the first real request starts the thread itself
  }
}
