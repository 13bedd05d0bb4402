/**
 * @module launcher/bwrap
 * Policy becomes mechanism: a pure function from (policy, argv, cwd, writable roots) to the
 * bubblewrap command line. No filesystem access, no spawning — tested by snapshotting the argv.
 * Measured flags and the mount-order pitfall: research/stack-notes.md §7.
 */
import type { SandboxPolicy } from "./policy.ts";

/** Paths inside each writable root that stay read-only under `workspace-write` (SPEC §9). */
export const PROTECTED_SUBPATHS = [".git/hooks", ".git/config"] as const;

export interface BwrapOptions {
  policy: SandboxPolicy;
  /** The command to run inside, `argv[0]` an absolute path or a name looked up in the sandbox's PATH. */
  argv: string[];
  /** Absolute working directory of the command. */
  cwd: string;
  /** Absolute real paths that `workspace-write` makes writable (the workspace roots). Read-only under `read-only`. */
  writableRoots: string[];
  /**
   * Existing absolute directories hidden behind an empty tmpfs (airlock's data dir: its tokens and
   * database). A root inside one stays visible; one inside a root is hidden within it.
   */
  hiddenPaths?: string[];
  /**
   * Existing absolute folders inside a writable root bound onto themselves read-write, before the
   * protected and read-only paths: a repository's git folder, which then cannot be renamed or removed
   * from inside (a mount point: EBUSY) while git can still commit (src/launcher/git-meta.ts).
   */
  mountPoints?: string[];
  /** Extra absolute paths bound read-only after the roots (e.g. a `.git` *file* of a worktree). */
  readOnlyPaths?: string[];
  /**
   * Absolute paths inside a writable root that do not exist and must not be created: an empty
   * read-only tmpfs is mounted there (`--tmpfs P --remount-ro P`). Used for the `.git` of a root
   * that is not a repository, so a process cannot plant one whose hooks the host's git would run.
   * bubblewrap creates the empty mount point on the host; the launcher removes it afterwards.
   */
  lockedPaths?: string[];
  /**
   * Absolute paths the command itself needs (its executable, a script it is given). One that lives
   * under `/tmp` would vanish behind the private `/tmp`, so its top folder there (`/tmp/<name>`: the
   * program's own checkout or install, e.g. a clone in `/tmp/x`) is bound read-only inside.
   */
  runtimePaths?: string[];
  /** Existing absolute files shown as empty inside (`--ro-bind /dev/null P`): credential files such as `~/.netrc`. */
  maskedFiles?: string[];
  /** The bubblewrap binary to name as `argv[0]` of the result. Default `"bwrap"`. */
  bwrapPath?: string;
  /** An fd on which bubblewrap reports `{"child-pid": N, …}` (`--info-fd`): the host pid of the namespace's init. */
  infoFd?: number;
}

function isUnder(p: string, root: string): boolean {
  return p === root || root === "/" || p.startsWith(root.endsWith("/") ? root : root + "/");
}

/**
 * The full argv to execute for `opts.argv` under `opts.policy`:
 * - `read-only`: `/` read-only, a private `/tmp`, no network (`--unshare-net`), own PID and IPC
 *   namespaces, `--die-with-parent`, `--new-session`; the roots and `cwd` are re-bound read-only
 *   AFTER the `/tmp` tmpfs so a workspace under `/tmp` stays visible (stack-notes §7, order pitfall).
 * - `workspace-write`: the same, but every root is bound read-write, then each root's
 *   `.git/hooks` and `.git/config` are bound read-only over it (`--ro-bind-try`: skipped when absent;
 *   the launcher creates a missing `.git/hooks` of an existing repository first); a root with no
 *   `.git` at all gets an empty read-only `.git` (`lockedPaths`), so no repository can be planted there.
 * - `danger-full-access`: no bubblewrap — `opts.argv` is returned unchanged.
 * Returns `[bwrapPath, ...flags, "--", ...argv]` for the confined policies.
 */
export function bwrapArgs(opts: BwrapOptions): string[] {
  const { policy, argv, cwd, writableRoots } = opts;
  if (policy === "danger-full-access") return [...argv];
  const roots = [...new Set(writableRoots)];
  const out: string[] = [
    opts.bwrapPath ?? "bwrap",
    ...(opts.infoFd !== undefined ? ["--info-fd", String(opts.infoFd)] : []),
    "--die-with-parent",
    "--new-session",
    "--unshare-net",
    "--unshare-pid",
    "--unshare-ipc",
    "--ro-bind", "/", "/",
    "--dev", "/dev",
    "--proc", "/proc",
    // Before any bind below: a tmpfs mounted later would hide a root that lives under /tmp.
    "--tmpfs", "/tmp",
  ];
  const writable = policy === "workspace-write";
  // The program's own files under /tmp (not inside a root): their top folder there, read-only, first.
  const tmpTop = (p: string) => `/tmp/${p.slice("/tmp/".length).split("/")[0]}`;
  const programDirs = [
    ...new Set((opts.runtimePaths ?? []).filter((p) => p.startsWith("/tmp/") && !roots.some((r) => isUnder(p, r))).map(tmpTop)),
  ];
  for (const d of programDirs) out.push("--ro-bind", d, d);
  // Hidden dirs under /tmp are private already (unless a program folder above re-exposed them). One that
  // holds a root is hidden before the root is bound (so the root shows through); one inside a root is
  // hidden after (so the root's bind cannot re-expose it).
  const hidden = [...new Set(opts.hiddenPaths ?? [])].filter(
    (h) => !isUnder(h, "/tmp") || h === "/tmp" || programDirs.some((d) => isUnder(h, d)),
  );
  const hideAfter = (h: string) => roots.some((r) => isUnder(h, r));
  for (const h of hidden) if (!hideAfter(h)) out.push("--tmpfs", h);
  for (const root of roots) out.push(writable ? "--bind" : "--ro-bind", root, root);
  for (const h of hidden) if (hideAfter(h)) out.push("--tmpfs", h);
  if (writable) for (const p of new Set(opts.mountPoints ?? [])) out.push("--bind", p, p);
  if (writable) {
    for (const root of roots) {
      for (const sub of PROTECTED_SUBPATHS) {
        const p = root === "/" ? `/${sub}` : `${root}/${sub}`;
        out.push("--ro-bind-try", p, p);
      }
    }
  }
  for (const p of opts.readOnlyPaths ?? []) out.push("--ro-bind", p, p);
  if (writable) for (const p of opts.lockedPaths ?? []) out.push("--tmpfs", p, "--remount-ro", p);
  for (const p of opts.maskedFiles ?? []) out.push("--ro-bind", "/dev/null", p);
  // A cwd outside every root may still live under the private /tmp: make it visible, read-only.
  if (!roots.some((r) => isUnder(cwd, r))) out.push("--ro-bind", cwd, cwd);
  out.push("--chdir", cwd, "--", ...argv);
  return out;
}
