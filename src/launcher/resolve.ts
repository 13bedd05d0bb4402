/**
 * @module launcher/resolve
 * What a path or a command name really means on this host: executables found on a PATH, and
 * paths resolved component by component (symlinks followed, missing tails kept) so that checks
 * judge the real target, never the model's spelling. Used by the file tools and the security floor.
 */
import { accessSync, constants, lstatSync, readdirSync, readlinkSync, realpathSync, statSync } from "node:fs";
import path from "node:path";

/**
 * The names in PATH folders, each folder read once (`readdir`), for one judgement that looks up many command
 * names: a name a folder does not hold is skipped without a `stat`. A folder that cannot be listed answers
 * "maybe" (`stat` as without it). Never kept across judgements: folders change between them.
 * Names are compared as the bytes `stat` and bash use (UTF-8, a lone surrogate as U+FFFD's), never as decoded
 * text: `"\ud800"` names the file a listing decodes as `"\ufffd"`.
 */
export class PathListing {
  private readonly dirs = new Map<string, Set<string> | null>();
  /** False when `dir` certainly holds no entry `name`; true when it does or cannot be listed. */
  mayHold(dir: string, name: string): boolean {
    let names = this.dirs.get(dir);
    if (names === undefined) {
      try {
        names = new Set(readdirSync(dir, { encoding: "buffer" }).map((b) => b.toString("latin1")));
      } catch {
        names = null;
      }
      this.dirs.set(dir, names);
    }
    return names === null || names.has(Buffer.from(name, "utf8").toString("latin1"));
  }
}

/**
 * Where `name` is found on `PATH` (colon-separated), as an absolute path — not symlink-resolved. Null when absent.
 * With `listing`, a folder whose listing lacks `name` is skipped without a `stat`.
 */
export function findInPath(name: string, PATH: string | undefined, listing?: PathListing): string | null {
  if (name.includes("/")) return isExecutableFile(name) ? path.resolve(name) : null;
  for (const dir of (PATH ?? "").split(":")) {
    if (!dir || !path.isAbsolute(dir)) continue; // a relative PATH entry would depend on the cwd
    const candidate = path.join(dir, name);
    // the folder the candidate's `stat` reads (`path.join` folds `..` by spelling)
    if (listing && !listing.mayHold(path.dirname(candidate), path.basename(candidate))) continue;
    if (isExecutableFile(candidate)) return candidate;
  }
  return null;
}

function isExecutableFile(p: string): boolean {
  try {
    if (!statSync(p).isFile()) return false;
    accessSync(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The executable `name` runs on `PATH`, as its real path (symlinks resolved, e.g.
 * `/usr/bin/python3` → `/usr/bin/python3.11`), or null when nothing executable is found.
 * The security floor judges this, not the spelling the model used. `listing`: as {@link findInPath}.
 */
export function resolveExecutable(name: string, PATH: string | undefined, listing?: PathListing): string | null {
  const found = findInPath(name, PATH, listing);
  if (!found) return null;
  try {
    return realpathSync(found);
  } catch {
    return null;
  }
}

const MAX_LINKS = 40; // like the kernel's ELOOP limit

/**
 * Resolves `p` like the kernel would, tolerating a missing tail: each existing component is
 * followed through symlinks (dangling ones included — their target is where a write would land),
 * `..` is applied to the real path reached so far, and the non-existing remainder is appended as is.
 * Relative paths are taken from `base`. Returns an absolute path with no symlinks in its existing part.
 */
export function resolveRealPath(base: string, p: string): string {
  return walkRealPath(base, p)!;
}

/**
 * {@link resolveRealPath}, telling `lookupIn` each real folder a name is looked up in, in order (the
 * folder reached so far, before each component other than `..`). When `lookupIn` answers false the walk
 * stops and returns null. Throws Error on a symlink loop (more than 40 links).
 */
export function walkRealPath(base: string, p: string, lookupIn?: (realDir: string) => boolean): string | null {
  // No path.join here: it would apply ".." lexically, before the symlinks it crosses are followed.
  const start = path.isAbsolute(p) ? p : `${base}/${p}`;
  let real = "/";
  const todo = start.split("/").filter((c) => c !== "" && c !== ".");
  let links = 0;
  let missing = false;
  while (todo.length > 0) {
    const c = todo.shift()!;
    if (c === "..") {
      real = path.dirname(real);
      continue;
    }
    if (lookupIn && !lookupIn(real)) return null;
    const next = real === "/" ? `/${c}` : `${real}/${c}`;
    if (missing) {
      real = next;
      continue;
    }
    let st;
    try {
      st = lstatSync(next);
    } catch {
      missing = true;
      real = next;
      continue;
    }
    if (st.isSymbolicLink()) {
      if (++links > MAX_LINKS) throw new Error(`too many symbolic links while resolving ${p}`);
      const target = readlinkSync(next);
      const parts = target.split("/").filter((x) => x !== "" && x !== ".");
      todo.unshift(...parts);
      if (path.isAbsolute(target)) real = "/";
      continue;
    }
    real = next;
  }
  return real;
}

/** True when `p` is `root` or below it (both absolute, normalised). */
export function isInside(p: string, root: string): boolean {
  if (root === "/") return true;
  return p === root || p.startsWith(root + "/");
}

/**
 * Resolves `p` (absolute, or relative to the workspace) and says whether its real target is inside
 * the workspace's real path. A symlink anywhere in `p` that leads out makes `inside` false; one that
 * stays inside is fine. Shape: `{real, inside}`.
 */
export function resolveWorkspacePath(workspace: string, p: string): { real: string; inside: boolean } {
  const root = resolveRealPath("/", workspace);
  const real = resolveRealPath(root, p);
  return { real, inside: isInside(real, root) };
}
