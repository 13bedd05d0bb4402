/**
 * @module hook/session
 * The part of every hook run that comes from its session, built in one place for every event: the
 * common input fields (Claude Code's `session_id`, `transcript_path`, `cwd`, `permission_mode`, and
 * airlock's `parent_session_id`, `ancestors`) and where the hooks run (the workspace, `AIRLOCK_CONFIG_DIR`,
 * the data dir's secrets masked, `allow_unenforced`), as the gate's PreToolUse inspector builds them.
 */
import type { Config } from "../config/schema.ts";
import { ancestors, type ParentLookup } from "../session/graph.ts";
import type { Session } from "../session/types.ts";
import type { EventHookContext } from "./index.ts";
import { permissionModeFor, type HookCommonInput } from "./protocol.ts";

/** What the runtime gives every hook run, whatever its event (the same values the gate's `InspectorDeps` carry). */
export interface HookSite {
  /** Session rows, for `ancestors`. */
  store: ParentLookup;
  /** airlock's data dir (real path): its tokens and database read as empty inside the hook. */
  dataDir?: string;
  /** Extra environment (e.g. `AIRLOCK_CONFIG_DIR`); `CLAUDE_PROJECT_DIR` / `AIRLOCK_PROJECT_DIR` are always the workspace. */
  env?: Record<string, string>;
  /** The JSONL transcript of a session (`transcript_path`); `""` until one exists. */
  transcriptPath?: (sessionId: string) => string | Promise<string>;
}

/**
 * The common input fields of a hook run in `session` (Claude Code's hooks reference, "Hook Input" →
 * common fields; plus airlock's `parent_session_id` and `ancestors`): `cwd` is the workspace,
 * `permission_mode` the session's effective mode in Claude Code's names ({@link permissionModeFor}).
 * @throws AirlockError `session_not_found` / `session_graph_invalid` when the session's chain cannot be read.
 */
export async function commonHookInput(session: Session, config: Readonly<Config>, site: HookSite): Promise<HookCommonInput> {
  return {
    session_id: session.id,
    transcript_path: site.transcriptPath ? await site.transcriptPath(session.id) : "",
    cwd: session.workspace,
    permission_mode: permissionModeFor(config.mode),
    parent_session_id: session.parent_session_id,
    ancestors: await ancestors(site.store, session.id),
  };
}

/**
 * Where the hooks of `session` run: its workspace, the site's extra environment, the data dir masked,
 * the effective config's `allow_unenforced` (where bubblewrap cannot run: run unconfined, or fail
 * `hook_error`), and the session's own sandbox policy for a project's hooks (hook/run.ts `confineTo`:
 * never the call's elevated policy). `signal` aborts every running hook.
 */
export function hookContextFor(session: Session, config: Readonly<Config>, site: HookSite, signal?: AbortSignal): EventHookContext {
  return {
    workspace: session.workspace,
    ...(signal ? { signal } : {}),
    ...(site.env ? { env: site.env } : {}),
    launch: {
      ...(site.dataDir ? { dataDir: site.dataDir } : {}),
      allowUnenforced: config.allow_unenforced,
      confineTo: { policy: config.sandbox, workspace: session.workspace, config },
    },
  };
}
