/**
 * @module cli/trust
 * `airlock trust DIR | --list | --revoke DIR`: the folders whose own Claude Code hooks
 * (`.claude/settings.json`, `.claude/settings.local.json`, with `hooks.import_claude_settings: true`) may
 * run, kept in the data dir's database (store/trust.ts) — so it works beside a running `airlock serve`,
 * which reads the same table when a session starts.
 */
import type { CommonOptions } from "./context.ts";

/** Options of `airlock trust`. */
export interface TrustOptions extends CommonOptions {
  /** `--list`: print the trusted folders. */
  list?: boolean;
  /** `--revoke DIR`: take DIR off the list. */
  revoke?: string;
  /** `--json`: print JSON on stdout. */
  json?: boolean;
}

/**
 * Trusts `dir` (its real path, and every folder under it), lists the trusted folders, or revokes one.
 * Prints what changed on stdout (`--json`: `{"trusted": {path, added_at}, "already": bool}`,
 * `{"trusted_folders": [...]}` or `{"revoked": {path, added_at}}`).
 * @returns 0.
 * @throws AirlockError `usage` (no folder given, or it is not an existing folder), `not_found` (revoking a
 *   folder that is not on the list), `data_dir_unusable`, `config_invalid`.
 */
export async function trustCommand(dir: string | undefined, opts: TrustOptions): Promise<number> {
  const { AirlockError } = await import("../errors.ts");
  const { withStore } = await import("./sessions.ts");
  const { TrustStore } = await import("../store/trust.ts");
  const { writeJson, writeStdout, writeStderr, table } = await import("./output.ts");
  const { homedir } = await import("node:os");
  if (!opts.list && opts.revoke === undefined && dir === undefined) {
    throw new AirlockError("usage", "name the folder to trust (airlock trust DIR), or use --list or --revoke DIR");
  }
  return withStore(opts, async function trust(store) {
    const trusted = new TrustStore(store);
    if (opts.list) {
      const folders = await trusted.list();
      if (opts.json) writeJson({ trusted_folders: folders });
      else if (folders.length === 0) writeStdout("no trusted folders (airlock trust DIR adds one)\n");
      else writeStdout(table(["FOLDER", "TRUSTED SINCE"], folders.map((f) => [f.path, f.added_at.replace("T", " ").slice(0, 19)])));
      return 0;
    }
    if (opts.revoke !== undefined) {
      const gone = await trusted.revoke(opts.revoke);
      if (opts.json) writeJson({ revoked: gone });
      else writeStdout(`no longer trusted: ${gone.path}\nIts hooks are not run in sessions started from now on.\n`);
      return 0;
    }
    const { folder, already } = await trusted.add(dir!);
    const home = process.env.HOME || homedir();
    if (folder.path === "/" || folder.path === home) {
      writeStderr(`airlock: note: ${folder.path} holds every project under it: each one's .claude hooks will run; trusting one project folder is safer\n`);
    }
    if (opts.json) writeJson({ trusted: folder, already });
    else {
      writeStdout(
        `${already ? "already trusted" : "trusted"}: ${folder.path} (and every folder under it)\n` +
          "With hooks.import_claude_settings: true, the hooks of .claude/settings.json and .claude/settings.local.json there now run,\n" +
          "confined to the session's sandbox policy. Undo with: airlock trust --revoke " +
          `${folder.path}\n`,
      );
    }
    return 0;
  });
}
