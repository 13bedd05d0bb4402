/**
 * @module gate/inspectors/floor-paths
 * What the security floor knows about paths: credential files and folders, `/proc` secrets, and the
 * protected paths a write must ask for (git hooks and config, shell startup files, `~/.ssh`, `/etc`).
 */
import { readdirSync, statSync } from "node:fs";
import path from "node:path";
import { credentialStoreKind, procSecretKind } from "../../launcher/credentials.ts";
import { isInside, resolveRealPath } from "../../launcher/resolve.ts";

const RC_FILES = new Set([".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zprofile", ".zshenv", ".zlogin", ".kshrc", ".cshrc", ".tcshrc", ".inputrc"]);

/** A word and the paths it may carry: itself, after `=` (`--file=x`, `if=x`), after a leading `@` (curl). */
export function credentialCandidates(w: string): string[] {
  const out = [w];
  const eq = w.indexOf("=");
  if (eq >= 0) out.push(w.slice(eq + 1));
  if (w.startsWith("@")) out.push(w.slice(1));
  return out;
}

/** Why `p` (spelled or real) is a credential file, or null. Rules: `~/.ssh/id_*` (not `.pub`), `~/.aws/credentials`, `.netrc`, `.env`/`.env.*`, airlock's tokens, and every store on the one credential list (src/launcher/credentials.ts). */
export function credentialKind(p: string, home: string): string | null {
  const norm = p.replace(/^~(?=\/)/, home);
  const base = path.basename(norm);
  if (/(^|\/)\.ssh\/id_[^/]*$/.test(norm) && !base.endsWith(".pub")) return "SSH private key";
  if (/(^|\/)\.aws\/credentials$/.test(norm)) return "AWS credentials";
  if (base === ".netrc" || base === "_netrc") return "netrc credentials";
  if (base === ".env" || (/^\.env\.[^/]+$/.test(base) && !/\.(example|sample|template|dist)$/.test(base))) return "environment secrets file";
  if (base === "approver-token" || base === "api-token") return "airlock API or approver token";
  return credentialStoreKind(norm, home);
}

/**
 * Why reading `word` (in `cwd`; `real` its resolved path) reads another process's `/proc/<pid>/environ`
 * or `mem`, or null. The spelling is judged lexically (`$PPID`, globs, `self/../N`); the real path too
 * (a link to it), except where the spelling names the reading process itself (`/proc/self/…` of a
 * shell) — unless `byAirlock` (a file tool: the reader is airlock).
 */
export function procReadKind(word: string, cwd: string | null, real: string | null, byAirlock: boolean): string | null {
  const spelled = word.startsWith("/") ? word : cwd ? path.posix.join(cwd, word) : null;
  const hit = spelled ? procSecretKind(spelled) : null;
  if (hit || real === null) return hit;
  if (!byAirlock && spelled && /^\/proc\/(self|thread-self)(\/|$)/.test(path.posix.normalize(spelled))) return null;
  return procSecretKind(real);
}

/** Why the existing directory `p` holds credentials, or null: `.ssh`, `.aws`, airlock's data dir (its tokens). */
export function credentialDirKind(p: string): string | null {
  if (!isDir(p)) return null;
  const base = path.basename(p);
  if (base === ".ssh") return "directory of SSH private keys";
  if (base === ".aws") return "directory of AWS credentials";
  try {
    if (readdirSync(p).some((n) => n === "approver-token" || n === "api-token")) return "airlock data dir with its API and approver tokens";
  } catch {
    // unreadable: nothing to say
  }
  return null;
}

export function isDir(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/** Why writing `p` (a real path) is protected, or null: `.git/hooks`, `.git/config`, shell rc files, `~/.ssh`, `/etc`. */
export function protectedKind(p: string, home: string): string | null {
  if (/(^|\/)\.git\/hooks(\/|$)/.test(p)) return "git hooks run code on the next git command";
  if (/(^|\/)\.git\/config$/.test(p)) return "git config can run commands";
  if (RC_FILES.has(path.basename(p)) || /\/\.config\/fish\/config\.fish$/.test(p)) return "shell startup file";
  if (isInside(p, path.join(home, ".ssh")) || /(^|\/)\.ssh(\/|$)/.test(p)) return "SSH configuration and keys";
  if (isInside(p, "/etc")) return "system configuration";
  return null;
}

export function safeReal(base: string, p: string): string | null {
  try {
    return resolveRealPath(base, p);
  } catch {
    return null;
  }
}
