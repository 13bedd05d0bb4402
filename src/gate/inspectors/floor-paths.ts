/**
 * @module gate/inspectors/floor-paths
 * What the security floor knows about paths: credential files and folders, `/proc` secrets, and the
 * protected paths a write must ask for (git hooks and config, shell startup files, `~/.ssh`, `/etc`).
 */
import { readdirSync, statSync } from "node:fs";
import path from "node:path";
import { credentialStoreKind, procSecretKind } from "../../launcher/credentials.ts";
import { pseudoFsOf } from "../../config/paths.ts";
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

/** tracefs's consuming readers, relative to its root: `trace_pipe`, per instance and per CPU (`trace_pipe_raw` too). */
const TRACE_PIPE = /^(?:instances\/[^/]+\/)?(?:per_cpu\/cpu[0-9]+\/)?trace_pipe(?:_raw)?$/;

/**
 * Why reading `p` (spelled or real, absolute) takes what it returns from the kernel, or null: `/proc/kmsg` (the kernel
 * log: each read removes its lines, which syslog then never gets; as root a file tool, which reads in airlock's own
 * process, can) and tracefs's `trace_pipe` / `trace_pipe_raw` (consumes trace records), at their usual places or — for
 * an existing `p` — on procfs or tracefs mounted anywhere (statfs). Such a read changes the host, so even a read-only
 * call asks (a `developer__read_file` is otherwise free in `smart` mode).
 */
export function consumingReadKind(p: string): string | null {
  const norm = path.posix.normalize(p);
  const kmsg = "the kernel log: each read takes its lines from syslog";
  const trace = "tracefs's trace pipe: each read takes its trace records";
  if (norm === "/proc/kmsg") return kmsg;
  const traced = /^\/sys\/kernel\/(?:debug\/)?tracing\/(.+)$/.exec(norm);
  if (traced && TRACE_PIPE.test(traced[1]!)) return trace;
  const base = path.posix.basename(norm);
  if (base !== "kmsg" && !base.startsWith("trace_pipe")) return null;
  const fs = pseudoFsOf(norm);
  if (fs === "proc" && base === "kmsg") return kmsg;
  if (fs === "tracefs" || fs === "debugfs") return trace;
  return null;
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

/**
 * Why writing `p` (a real path) is protected, or null: `.git/hooks`, `.git/config`, shell rc files, `~/.ssh`,
 * `~/.claude` (Claude Code's user settings: with `hooks.import_claude_settings`, the hooks they name, and the
 * scripts under it they run, run outside any sandbox in every later session), `/etc`.
 */
export function protectedKind(p: string, home: string): string | null {
  if (/(^|\/)\.git\/hooks(\/|$)/.test(p)) return "git hooks run code on the next git command";
  if (/(^|\/)\.git\/config$/.test(p)) return "git config can run commands";
  if (RC_FILES.has(path.basename(p)) || /\/\.config\/fish\/config\.fish$/.test(p)) return "shell startup file";
  if (isInside(p, path.join(home, ".ssh")) || /(^|\/)\.ssh(\/|$)/.test(p)) return "SSH configuration and keys";
  const claude = path.join(home, ".claude"); // where it really is too (a dotfiles repository links it)
  if (isInside(p, claude) || isInside(p, safeReal("/", claude) ?? claude)) return "Claude Code user settings and hook scripts, which run outside the sandbox";
  if (isInside(p, "/etc")) return "system configuration";
  return null;
}

/**
 * The real path of `p` (absolute, or relative to the absolute `base`), as {@link resolveRealPath}; null
 * when it cannot be resolved (a symlink loop). With `paths`, one judgement's memo answers a path it
 * already resolved.
 */
export function safeReal(base: string, p: string, paths?: RealPaths): string | null {
  if (paths) return paths.of(base, p);
  try {
    return resolveRealPath(base, p);
  } catch {
    return null;
  }
}

/**
 * The real paths resolved during ONE judgement of one call, keyed by the path resolution starts from
 * (`p` when absolute, else `base/p`), so the security floor and the permission rules resolve a file
 * call's path (an lstat per component) once between them. Never kept across calls: files change
 * between them. Get one with {@link judgementPaths}.
 */
export class RealPaths {
  private readonly memo = new Map<string, string | null>();
  /** {@link resolveRealPath}(`base`, `p`) (both absolute but `p` may be relative), or null on a symlink loop; resolved once per judgement. */
  of(base: string, p: string): string | null {
    const start = path.isAbsolute(p) ? p : `${base}/${p}`;
    let real = this.memo.get(start);
    if (real === undefined) {
      try {
        real = resolveRealPath("/", start);
      } catch {
        real = null;
      }
      this.memo.set(start, real);
    }
    return real;
  }
}

/** Memos by judgement: the gate builds a fresh call object for each judgement, so an entry dies with it. */
const byJudgement = new WeakMap<object, RealPaths>();

/**
 * The {@link RealPaths} memo of one judgement, keyed by the call object the inspectors are given
 * (`InspectedCall`; the gate builds a new one for every judgement, a re-judgement included). The floor
 * and the rule inspectors of the same judgement share it.
 */
export function judgementPaths(call: object): RealPaths {
  let r = byJudgement.get(call);
  if (!r) byJudgement.set(call, (r = new RealPaths()));
  return r;
}
