/**
 * @module store/trust
 * The folders a person trusted (`airlock trust DIR`): the workspace's own Claude Code hooks
 * (`.claude/settings.json`, `.claude/settings.local.json`) run only in a trusted folder or below one.
 * Held in the `trusted_folders` table of the data dir's database (store/db.ts migration 6): the model
 * never writes it (file tools refuse the data dir, confined processes do not see it, and every other host
 * process sees `airlock.db` as empty), and the CLI and a running server share it (WAL). Every add and
 * revoke is an audit row (`trust_added`, `trust_revoked`).
 */
import { realpathSync, statSync } from "node:fs";
import path from "node:path";
import { AirlockError } from "../errors.ts";
import type { Store } from "./store.ts";

/** One trusted folder: its real path (symlinks resolved) and when it was added (ISO time). */
export interface TrustedFolder {
  path: string;
  added_at: string;
}

/** `true` when `p` is `root` or lies below it (both absolute, normalized). */
function within(p: string, root: string): boolean {
  if (p === root) return true;
  const rel = path.relative(root, p);
  return rel !== "" && !rel.startsWith("..") && !path.isAbsolute(rel);
}

/**
 * The real path of an existing folder.
 * @throws AirlockError `usage` when `dir` does not exist or is not a folder.
 */
export function realFolder(dir: string): string {
  let real: string;
  try {
    real = realpathSync(path.resolve(dir));
  } catch {
    throw new AirlockError("usage", `${dir} does not exist; trust an existing folder`);
  }
  if (!statSync(real).isDirectory()) throw new AirlockError("usage", `${dir} is not a folder; trust the folder that holds .claude/`);
  return real;
}

/** The trusted folders, over the store's database. */
export class TrustStore {
  constructor(private readonly store: Store) {}

  /**
   * Trusts `dir` and everything under it: stores its real path (symlinks resolved) and audits it.
   * @returns the stored row and whether it was trusted already (then nothing changes).
   * @throws AirlockError `usage` when `dir` is not an existing folder.
   */
  async add(dir: string, actor = "cli"): Promise<{ folder: TrustedFolder; already: boolean }> {
    const real = realFolder(dir);
    const have = await this.store.sql.get<TrustedFolder>("SELECT path, added_at FROM trusted_folders WHERE path = ?", [real]);
    if (have) return { folder: have, already: true };
    const folder: TrustedFolder = { path: real, added_at: new Date().toISOString() };
    await this.store.sql.run("INSERT INTO trusted_folders (path, added_at) VALUES (?, ?) ON CONFLICT (path) DO NOTHING", [folder.path, folder.added_at]);
    await this.store.audit({ kind: "trust_added", outcome: "recorded", actor, detail: { path: real } });
    return { folder, already: false };
  }

  /** Every trusted folder, by path. */
  async list(): Promise<TrustedFolder[]> {
    return this.store.sql.all<TrustedFolder>("SELECT path, added_at FROM trusted_folders ORDER BY path");
  }

  /**
   * Takes `dir` off the list: its real path, or, when it no longer exists, the absolute path as written.
   * Folders trusted below or above it stay trusted (`--list` shows them).
   * @returns the removed row.
   * @throws AirlockError `not_found` when that folder is not on the list (the message lists what is).
   */
  async revoke(dir: string, actor = "cli"): Promise<TrustedFolder> {
    let key = path.resolve(dir);
    try {
      key = realpathSync(key);
    } catch {
      // gone: revoke by the path as written
    }
    const have = await this.store.sql.get<TrustedFolder>("SELECT path, added_at FROM trusted_folders WHERE path = ?", [key]);
    if (!have) {
      const under = await this.trustedFolderOf(key);
      const hint = under ? `; it is trusted through ${under.path}: revoke that folder instead` : "";
      throw new AirlockError("not_found", `${key} is not a trusted folder${hint} (airlock trust --list shows them)`);
    }
    await this.store.sql.run("DELETE FROM trusted_folders WHERE path = ?", [key]);
    await this.store.audit({ kind: "trust_revoked", outcome: "recorded", actor, detail: { path: key } });
    return have;
  }

  /**
   * The trusted folder `workspace` lies in (itself or an ancestor), or null. `workspace` is made real first
   * (a link into a trusted folder is judged where it leads; one that cannot be resolved is not trusted).
   */
  async trustedFolderOf(workspace: string): Promise<TrustedFolder | null> {
    let real: string;
    try {
      real = realpathSync(path.resolve(workspace));
    } catch {
      return null;
    }
    for (const f of await this.list()) if (within(real, f.path)) return f;
    return null;
  }
}
