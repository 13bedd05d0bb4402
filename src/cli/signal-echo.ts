/**
 * @module cli/signal-echo
 * One Ctrl-C can arrive twice: the terminal sends SIGINT to its whole foreground process group, and a
 * wrapper in that group that forwards signals to its child (`npm start`'s scripts/start.ts, npm, a
 * supervisor) sends it again a few milliseconds later. `airlock serve` and `airlock run` take a second
 * signal as "exit at once, without waiting", so that echo cut their shutdown short (the WAL not emptied
 * into the database file, the serve lock left behind). A repeat within `ECHO_WINDOW_MS` of the first is
 * taken as that echo and ignored; a person pressing Ctrl-C again is slower than that.
 */

/** How soon after the first signal a second one is taken as the same signal delivered twice, ms. */
export const ECHO_WINDOW_MS = 300;

/**
 * Returns `isEcho()`: false on its first call (the first signal), then true while within `windowMs` of that
 * first call, false after.
 */
export function signalEchoFilter(windowMs = ECHO_WINDOW_MS, now: () => number = () => performance.now()): () => boolean {
  let first: number | undefined;
  return () => {
    const t = now();
    if (first === undefined) {
      first = t;
      return false;
    }
    return t - first < windowMs;
  };
}
