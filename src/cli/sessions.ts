/**
 * @module cli/sessions
 * `airlock sessions list | show ID`: the stored sessions, read from the store in the data dir.
 */
import type { CommonOptions } from "./context.ts";

/** Options of `airlock sessions list` and `airlock sessions show`. */
export interface SessionsOptions extends CommonOptions {
  /** `--json`: print JSON on stdout instead of a table / transcript. */
  json?: boolean;
}

/**
 * Lists sessions (newest first): id, created, mode, sandbox, headless, parent, title/first prompt.
 * TODO(store engineer): read `<dataDir>/airlock.db` (read-only is enough; WAL lets a running server keep writing).
 * @returns 0.
 */
export async function sessionsList(opts: SessionsOptions): Promise<number> {
  const { resolveContext, notImplemented } = await import("./context.ts");
  await resolveContext(opts);
  return notImplemented("sessions list");
}

/**
 * Shows one session with its messages.
 * TODO(store engineer): unknown id → AirlockError("session_not_found", …) (exit 1).
 * @param id a session id (`ses_…`).
 * @returns 0.
 */
export async function sessionsShow(id: string, opts: SessionsOptions): Promise<number> {
  const { resolveContext, notImplemented } = await import("./context.ts");
  await resolveContext(opts);
  void id;
  return notImplemented("sessions show");
}
