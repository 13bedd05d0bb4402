/**
 * @module gate/inspectors/repo-metadata
 * The security floor's rule for file-tool writes into repository metadata (SPEC §9): a path with a
 * `.git` component (any depth, case-insensitive, as spelled or as resolved through symlinks), or a
 * write that leaves a folder repository-shaped (HEAD + objects/ + refs/, or HEAD + commondir: a git
 * folder git would discover), asks a person in every mode. Confined processes are handled by the launcher instead.
 */
import { readdirSync } from "node:fs";
import path from "node:path";
import { isInside, resolveRealPath } from "../../launcher/resolve.ts";

const DOT_GIT = /^\.git$/i;

/** Linux's PATH_MAX: a path this many bytes long or longer is refused by every call that takes one (ENAMETOOLONG). */
const PATH_MAX = 4096;

function entryNames(dir: string): string[] {
  try {
    return readdirSync(dir).map((n) => n.toLowerCase());
  } catch {
    return [];
  }
}

/**
 * Why a file tool writing `target` (absolute, or relative to `workspace`) would create or change
 * repository metadata, or null. Checks the spelled path and its real path for a `.git` component, then
 * every folder from the target's parent up to the workspace root (or `/` for a target outside it): if
 * that folder, with this write's first component below it added, would hold HEAD with objects and refs,
 * or HEAD with commondir.
 * Reads folder listings only; never throws.
 */
export function repoMetadataWrite(target: string, workspace: string): string | null {
  const spelled = target.split(/[\\/]+/);
  let real: string;
  let ws: string;
  try {
    ws = resolveRealPath("/", workspace);
    real = resolveRealPath(ws, target);
  } catch {
    return `writes ${target}, a path the floor cannot resolve (it may reach repository metadata)`;
  }
  if (spelled.some((c) => DOT_GIT.test(c)) || real.split("/").some((c) => DOT_GIT.test(c))) {
    return `writes repository metadata ${target} (a .git entry: its config and hooks run code on the host's next git command)`;
  }
  const top = isInside(real, ws) ? ws : "/";
  // each folder from the target's parent up, by the position of its last slash (O(1) per step: dirname() and a
  // split of the rest each copied the path, quadratic in its length, and a model-chosen path of 1 MB held the
  // gate for minutes); a folder whose path is PATH_MAX bytes or longer cannot be listed (ENAMETOOLONG), so it has
  // no entries and is not read
  for (let end = real.lastIndexOf("/"); end >= 0; end = real.lastIndexOf("/", end - 1)) {
    const dir = end === 0 ? "/" : real.slice(0, end);
    const below = end + 1;
    const slash = real.indexOf("/", below);
    const first = (slash < 0 ? real.slice(below) : real.slice(below, slash)).toLowerCase();
    const existing = dir.length >= PATH_MAX ? [] : entryNames(dir);
    const shaped = (has: (n: string) => boolean) => has("head") && ((has("objects") && has("refs")) || has("commondir"));
    if (shaped((n) => n === first || existing.includes(n))) {
      const is = shaped((n) => existing.includes(n)) ? "is" : "would become";
      return `writes ${target} into ${dir}, which ${is} a git repository (HEAD, objects/, refs/: git runs its config and hooks)`;
    }
    if (dir === top || dir === "/") break;
  }
  return null;
}
