/**
 * @module gate/will-fail
 * What a card says when allowing its call cannot help (the card's `will_fail`): a write that the sandbox
 * policy the call would run under will still refuse, or a fetch it gives no network. Said only when certain — a literal absolute path
 * (for a file tool, also one relative to the workspace) none of whose prefixes resolves into a place the
 * call may write — and never instead of the card: a person still answers it.
 */
import os from "node:os";
import path from "node:path";
import type { SandboxPolicyName } from "../config/schema.ts";
import { assertNever } from "../errors.ts";
import { allCredentialPaths } from "../launcher/credentials.ts";
import { sanitizedEnv } from "../launcher/env.ts";
import { isInside, resolveRealPath, walkRealPath } from "../launcher/resolve.ts";
import { splitCommands } from "../shell/words.ts";
import { floorCall, literalWriteTargets } from "./inspectors/security-floor.ts";

/** Where a call would run if allowed. */
export interface WillFailEnv {
  /** The session's workspace (absolute). */
  workspace: string;
  /** The policy the call would run under: a requested elevation's, else the session's (elevation.ts `requestedPolicy`). */
  policy: SandboxPolicyName;
  /** airlock's data dir: hidden from confined processes behind a tmpfs they may write. */
  dataDir?: string;
  /** Config `allow_unenforced`: a confining policy may run unconfined where bubblewrap cannot, so no shell write is certain to fail. */
  allowUnenforced: boolean;
  /** Config `execution_backend`: `external` refuses local host processes anyway (that refusal says so itself). */
  executionBackend: "local" | "external";
  /** Config `sandbox_unix_sockets`: host sockets a confined process may reach (then no fetch is certain to fail). */
  unixSockets?: readonly string[];
  /** HOME and PATH the floor resolves `~` and commands with; default: the sanitized environment's. */
  home?: string;
  PATH?: string;
}

/** Most paths one `will_fail` names. */
const MAX_NAMED = 3;

/**
 * Why allowing this call will not help, or null: `allowing this will not help: the sandbox policy
 * workspace-write will still refuse writing /etc/x (…)`.
 * - `developer__write_file` / `edit_file`: under `read-only` every write (tool/files.ts refuses
 *   `read_only_policy`); under `workspace-write` a path whose real target is outside the workspace (`path_outside_workspace`).
 * - `developer__shell`: the literal absolute paths it certainly writes (security-floor.ts
 *   `literalWriteTargets`: redirects, `tee`, `cp`, `dd of=` …) outside every place a confined process may
 *   write: the workspace (`workspace-write` only), the private `/tmp`, `/dev`, `/proc`, `/sys`, `/run`,
 *   `/var/run`, and the folders and files hidden behind a tmpfs or masked (the data dir, the credential list).
 *   None under `allow_unenforced` or the `external` backend.
 * - `developer__shell` whose whole command is one `curl` or `wget` of an `http(s)://` or `ftp(s)://` URL on a
 *   host that is not loopback: `read-only` and `workspace-write` run it with no network (`--unshare-net`), and
 *   nothing else runs to listen on the sandbox's own loopback. Not with a flag that reroutes the request
 *   (a proxy, `--resolve`, `--connect-to`, a unix socket, a config file) or when `sandbox_unix_sockets` names any.
 * - Anything else, and `danger-full-access`: null.
 * A path counts only when it resolves (symlinks followed, as the kernel would) outside those places and no
 * name on the way is looked up inside one, so nothing the call does first (replacing a link inside the
 * workspace) can make it writable.
 * Reads the filesystem (lstat per component); never throws (an error is null: the card is shown without it).
 */
export function sandboxWillRefuse(tool: { name: string; claude?: { name: string } }, args: unknown, env: WillFailEnv): string | null {
  try {
    return willRefuse(tool, args, env);
  } catch {
    return null;
  }
}

function willRefuse(tool: { name: string; claude?: { name: string } }, args: unknown, env: WillFailEnv): string | null {
  if (env.policy === "danger-full-access") return null;
  const call = floorCall(tool, args);
  const ws = resolveRealPath("/", env.workspace);
  switch (call.kind) {
    case "write": {
      if (env.policy === "read-only") return say(env.policy, [call.path], "file tools write nothing under read-only");
      // the file tools resolve a relative path against the workspace's real path (tool/files.ts)
      const start = path.isAbsolute(call.path) ? call.path : `${ws}/${call.path}`;
      return staysOutside(start, [ws]) ? say(env.policy, [call.path], `file tools write only inside the workspace ${ws}`) : null;
    }
    case "shell": {
      if (env.allowUnenforced || env.executionBackend === "external") return null;
      const sane = env.home === undefined || env.PATH === undefined ? sanitizedEnv() : {};
      const home = env.home ?? sane.HOME;
      const offline = env.unixSockets?.length ? null : unreachable(call.command, env.policy);
      if (offline) return offline;
      if (!call.command.includes("/")) return null; // no absolute path to judge: skip the floor's parse
      const targets = literalWriteTargets(call.command, { workspace: env.workspace, policy: env.policy, PATH: env.PATH ?? sane.PATH ?? "", ...(home ? { home } : {}), ...(env.dataDir ? { dataDir: env.dataDir } : {}) });
      if (targets.length === 0) return null;
      const writable = confinedWritable(env.policy, ws, home, env.dataDir);
      const refused = targets.filter((t) => staysOutside(t, writable, env.policy === "read-only" ? [ws] : []));
      const where = env.policy === "workspace-write" ? "only the workspace and a private /tmp are writable" : "nothing but a private /tmp is writable";
      return refused.length ? say(env.policy, refused, where) : null;
    }
    case "read":
    case "none":
      return null;
    default:
      return assertNever(call, "floor call kind");
  }
}

/** Flags of curl and wget that may send a request somewhere other than its URL's host (a proxy, a resolve or connect override, a unix socket, a config file or wgetrc command). */
const REROUTES = /^(-[A-Za-z]*[xKe]|--(unix-socket|abstract-unix-socket|connect-to|resolve|proxy|preproxy|socks|config|execute|doh-url|interface|dns-))/;
/** Hosts on the sandbox's own loopback (nothing listens there, but say nothing about them). */
const LOOPBACK = /^(localhost|.*\.localhost|127(\.\d+){3}|0\.0\.0\.0|\[::1?\]|\[::ffff:127(\.\d+){3}\])$/i;

/**
 * `allowing this will not help: the sandbox policy … has no network, so curl cannot reach HOST` when the whole
 * command is one `curl`/`wget` of a non-loopback `http(s)`/`ftp(s)` URL with nothing that reroutes it; else null.
 */
function unreachable(command: string, policy: SandboxPolicyName): string | null {
  const parsed = splitCommands(command);
  if (!parsed.ok || parsed.commands.length !== 1) return null;
  const c = parsed.commands[0]!;
  const prog = c.words[0];
  if (prog === undefined || !["curl", "wget"].includes(path.basename(prog))) return null;
  if (c.redirects.some((r) => r.op === "<(" || r.op === ">(") || c.words.some((w) => /[$`]/.test(w) || REROUTES.test(w))) return null;
  const hosts = c.words.slice(1).flatMap((w) => {
    const m = /^(?:https?|ftps?):\/\/(?:[^/@?#]*@)?(\[[^\]]*\]|[^/:?#]+)/i.exec(w);
    return m && !LOOPBACK.test(m[1]!) ? [m[1]!] : [];
  });
  if (hosts.length === 0) return null;
  const named = [...new Set(hosts)];
  return `allowing this will not help: the sandbox policy ${policy} has no network, so ${path.basename(prog)} cannot reach ${named.slice(0, MAX_NAMED).join(", ")}${named.length > MAX_NAMED ? ` and ${named.length - MAX_NAMED} more` : ""}`;
}

function say(policy: SandboxPolicyName, paths: string[], why: string): string {
  const named = paths.slice(0, MAX_NAMED).join(", ") + (paths.length > MAX_NAMED ? ` and ${paths.length - MAX_NAMED} more` : "");
  return `allowing this will not help: the sandbox policy ${policy} will still refuse writing ${named} (${why})`;
}

/**
 * The places a confined (`read-only` / `workspace-write`) process may write, or might: the workspace under
 * `workspace-write`, the tmpfs and pseudo filesystems bubblewrap mounts (launcher/bwrap.ts), and what
 * launcher/setup.ts hides behind a writable tmpfs or masks with `/dev/null` (the data dir, every credential
 * folder and file of airlock's HOME, the sanitized HOME and the account's home).
 */
function confinedWritable(policy: SandboxPolicyName, ws: string, home: string | undefined, dataDir: string | undefined): string[] {
  const creds = [home, os.homedir()].flatMap((h) => {
    const c = allCredentialPaths(h);
    return [...c.dirs, ...c.files];
  });
  const places = ["/tmp", "/dev", "/proc", "/sys", "/run", "/var/run", ...(dataDir ? [dataDir] : []), ...creds];
  const real = places.flatMap((p) => [p, resolveRealPath("/", p)]);
  return [...(policy === "workspace-write" ? [ws] : []), ...new Set(real)];
}

/**
 * Whether writing the absolute path `start` lands outside every place in `writable` (absolute real paths),
 * resolved as the kernel would (symlinks followed, `..` after them, a missing tail kept), and no name on
 * the way is looked up inside such a place (where the call could swap it for a link first). A place in
 * `writable` does not count below a root in `readOnly` mounted inside it (a `read-only` workspace under
 * the private `/tmp`). False on a symlink loop.
 */
function staysOutside(start: string, writable: string[], readOnly: string[] = []): boolean {
  const inside = (p: string) => writable.some((w) => isInside(p, w) && !readOnly.some((r) => isInside(r, w) && isInside(p, r)));
  let real: string | null;
  try {
    real = walkRealPath("/", start, (dir) => !inside(dir));
  } catch {
    return false; // a symlink loop
  }
  return real !== null && !inside(real);
}
