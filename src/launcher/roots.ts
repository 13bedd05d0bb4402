/**
 * @module launcher/roots
 * The repository metadata of writable roots around a `workspace-write` process: prepared before it
 * starts (what bubblewrap must bind read-only, pin or lock), checked after (what it created, moved or
 * replaced is quarantined), released once it is gone. The scans themselves live in ./git-meta.ts.
 */
import { DEFAULT_SCAN_MAX_FOLDERS, finishGitMeta, prepareGitMeta, type GitMetaEntry } from "./git-meta.ts";

/** What a writable root needs before a confined process runs: see {@link prepareRoot}. */
export interface PreparedRoot {
  /** The root (absolute real path). */
  root: string;
  /** Existing paths to bind read-only (`.git` files, `.git` folders git would not use, sensitive parts of repositories). */
  readOnly: string[];
  /** Repository git folders bound onto themselves read-write, so they cannot be renamed or removed. */
  mountPoints: string[];
  /** Missing (or empty) paths to lock with an empty read-only mount (the `.git` of a root that is not a repository). */
  locked: string[];
  /** The repository metadata found before the process started (compared after it ends). */
  before: GitMetaEntry[];
  /** This call's journal (git-meta.ts `openJournal`): lets the next call check, should airlock be killed meanwhile. */
  journal?: string;
  /** What was quarantined for calls of an airlock process that ended mid-call; reported once, by the next {@link recheckRoot}. */
  recovered: string[];
  /** Bound on the folders each scan of this root visits (config `sandbox_scan_max_folders`). */
  maxFolders: number;
}

/**
 * Host-side preparation of a writable root so bubblewrap can protect its repository metadata
 * (src/launcher/git-meta.ts): every existing `.git` entry and repository-shaped folder at any depth is
 * found; repositories become mount points with their config, hooks, info, commondir, gitdir,
 * worktrees and modules read-only; `.git` files are bound read-only; the root's `.git` is locked when
 * missing or empty (an empty one may be a crashed run's mount point). First, the checks the root is
 * owed run: those of an airlock process that ended mid-call (`kill -9`), and those of earlier calls
 * whose check was incomplete (git-meta.ts `prepareGitMeta`); then this call's journal is written. Used by
 * every process started under `workspace-write` (./setup.ts `setUpSandbox`: tools and MCP servers);
 * call {@link releaseRoot} (or, between MCP calls, {@link recheckRoot}) after. The scans never hold
 * the event loop for long.
 * @param maxFolders bound on the folders a scan visits (config `sandbox_scan_max_folders`).
 * @throws AirlockError `metadata_scan_limit` when the root has more folders than that, or an owed check cannot complete.
 */
export async function prepareRoot(root: string, maxFolders = DEFAULT_SCAN_MAX_FOLDERS): Promise<PreparedRoot> {
  const p = await prepareGitMeta(root, maxFolders);
  return { root, readOnly: p.plan.readOnly, mountPoints: p.plan.mountPoints, locked: p.plan.locked, before: p.before, journal: p.journal, recovered: p.recovered, maxFolders };
}

/** What the check after a call found: lines for quarantined entries, and one line per root whose check was incomplete. */
export interface RootCheck {
  quarantined: string[];
  incomplete: string[];
}

async function checkRoots(prepared: PreparedRoot[], release: boolean): Promise<RootCheck> {
  const out: RootCheck = { quarantined: [], incomplete: [] };
  for (const r of prepared) {
    const c = await finishGitMeta(r.root, r.before, r.maxFolders, release ? { locked: r.locked, journal: r.journal } : undefined);
    out.quarantined.push(...r.recovered.splice(0), ...c.notes);
    if (!c.complete) {
      out.incomplete.push(
        `the repository-metadata check of ${r.root} after this call was INCOMPLETE: it has more than ${r.maxFolders} folders (sandbox_scan_max_folders), and what lies in the folders not checked was not checked; ` +
          `do not run git there before checking it. The check stays owed: the next workspace-write call on it runs it first, and is refused (metadata_scan_limit) while it cannot complete`,
      );
    }
  }
  return out;
}

/**
 * Quarantines repository metadata that appeared in the prepared roots since {@link prepareRoot}
 * (see `quarantineNewGitMeta`). Returns one line per entry quarantined, and per root not wholly checked,
 * for the result's warning ({@link checkWarning}). Never throws.
 */
export function recheckRoot(prepared: PreparedRoot[]): Promise<RootCheck> {
  return checkRoots(prepared, false);
}

/**
 * After the process is gone: removes the empty mount points bubblewrap left for `locked` paths (once
 * no other call of this process holds them), then {@link recheckRoot}; removes the journals of roots
 * wholly checked and leaves the others' checks owed. Never throws.
 */
export function releaseRoot(prepared: PreparedRoot[]): Promise<RootCheck> {
  return checkRoots(prepared, true);
}

/** The warning for a {@link RootCheck}, or undefined when it found nothing and was complete. */
export function checkWarning(c: RootCheck): string | undefined {
  const lines = [...(c.quarantined.length > 0 ? [quarantineWarning(c.quarantined)] : []), ...c.incomplete];
  return lines.length > 0 ? lines.join("\n") : undefined;
}

/** The warning line for quarantined repository metadata (`notes` from {@link releaseRoot}). */
export function quarantineWarning(notes: string[]): string {
  return `airlock quarantined repository metadata that a confined process created, moved or replaced (nothing may change it without a person): ${notes.join("; ")}`;
}
