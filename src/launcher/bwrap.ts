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
   * database). A root inside one stays visible; one inside a root is hidden within it. Under
   * `danger-full-access`: each is behind an empty tmpfs (the data dir's transcripts folder).
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
  /**
   * An fd from which bubblewrap reads a compiled classic-BPF seccomp program (`--seccomp FD`): the
   * launcher's {@link unixSocketFilter}, which refuses `socket(AF_UNIX, …)`. Confined policies only;
   * ignored when `unixSockets` names sockets (they need AF_UNIX).
   */
  seccompFd?: number;
  /**
   * An fd (3–9) on which the process inherits airlock's end-of-life signal: see {@link withLifeline}.
   * The launcher holds the other end of that socket and never writes to it.
   */
  lifelineFd?: number;
  /** An fd (3–9) holding the reaper's mark (reaper.ts): closed for the command, like the lifeline; bubblewrap and its init keep it. */
  reaperFd?: number;
  /**
   * Host unix sockets a confined process may connect to (`sandbox_unix_sockets`, absolute real paths).
   * When non-empty, no seccomp filter is applied; instead every `socketDirs` folder is hidden behind an
   * empty tmpfs and only these sockets are bound back (read-only binds: `connect()` still works).
   */
  unixSockets?: string[];
  /** Folders hidden when `unixSockets` is non-empty (absolute real paths). Default `["/run"]`. */
  socketDirs?: string[];
  /**
   * `danger-full-access` only (confined policies always drop them): no capabilities (`--cap-drop ALL`)
   * and a fresh minimal `/dev` (`--dev /dev`: no host block device, which uid 0 opens without any
   * capability). PreToolUse hooks run so: the network and files as they are, nothing more.
   */
  hardenFullAccess?: boolean;
}

/** The data dir files no hook may read or replace (tokens, the database and its journals, `airlock run`'s validated-config cache); masked when they exist. */
export const DATA_DIR_SECRETS = ["api-token", "approver-token", "airlock.db", "airlock.db-wal", "airlock.db-shm", "airlock.db-journal", "config-cache.json"] as const;

/**
 * The command `argv` preceded by a watchdog that ties its PID namespace to airlock's life:
 * `/bin/sh -c '(read <&FD; kill -9 -1) & exec FD<&-; exec "$@"' airlock-lifeline ...argv`.
 * The watchdog blocks reading `fd`, whose other end only airlock holds (and never writes); when
 * airlock ends in any way (`kill -9` included) the kernel closes that end, the read returns, and
 * `kill -9 -1` kills every process of the namespace, so bubblewrap's init ends it. This closes the
 * start-up gap of `--die-with-parent` (bubblewrap arms its parent-death signal, then changes
 * credentials, which clears it: a `serve` killed in that instant left the tree running). Only valid
 * inside a PID namespace (`--unshare-pid`): `kill -1` there reaches the namespace alone. With
 * `reaperFd`, that fd (the reaper's mark, reaper.ts) is closed first, before the background shell is
 * forked, so no process of the command's (that shell included) holds it:
 * `exec R<&-; (…) & exec FD<&-; exec "$@"`.
 * @param fd a single digit 3–9 (POSIX sh redirections), and so `reaperFd`; throws RangeError otherwise.
 */
export function withLifeline(argv: string[], fd: number, reaperFd?: number): string[] {
  for (const f of [fd, ...(reaperFd !== undefined ? [reaperFd] : [])]) if (!Number.isInteger(f) || f < 3 || f > 9) throw new RangeError(`lifeline and reaper fds must be 3-9, got ${f}`);
  // the mark is closed before the background shell is forked: that shell lives as long as the command,
  // which could otherwise reopen the mark through /proc/<its pid>/fd (and hand it to a host process)
  const dropMark = reaperFd !== undefined ? `exec ${reaperFd}<&-; ` : "";
  const script = `${dropMark}(IFS= read -r _ <&${fd}; kill -9 -1) </dev/null >/dev/null 2>&1 & exec ${fd}<&-; exec "$@"`;
  return ["/bin/sh", "-c", script, "airlock-lifeline", ...argv];
}

/** `AUDIT_ARCH_*` values of the architectures {@link unixSocketFilter} knows; any other arch is killed. */
const AUDIT_ARCH_X86_64 = 0xc000003e;
const AUDIT_ARCH_AARCH64 = 0xc00000b7;
/**
 * Syscall numbers: `socket` (x86_64 41, aarch64 198), `socketpair` (53, 199), `io_uring_setup` (425 on
 * both; io_uring can open sockets itself).
 */
const NR = { x86_64: { socket: 41, socketpair: 53, io_uring_setup: 425 }, aarch64: { socket: 198, socketpair: 199, io_uring_setup: 425 } } as const;
const X32_SYSCALL_BIT = 0x40000000;
const AF_UNIX = 1;
/** vsock (VM ↔ host sockets) ignores network namespaces: `--unshare-net` does not cut it off. */
const AF_VSOCK = 40;
/** Socket types a `socketpair` may have: its sockets are connected to each other and cannot be re-connected. */
const SOCK_STREAM = 1;
const SOCK_SEQPACKET = 5;
/** `SOCK_TYPE_MASK`: the type without `SOCK_NONBLOCK` / `SOCK_CLOEXEC`. */
const SOCK_TYPE_MASK = 0xf;
const EPERM = 1;

/**
 * The seccomp filter (classic BPF, `struct sock_filter[]` in little-endian bytes, 8 bytes per
 * instruction) that bubblewrap loads with `--seccomp FD` for confined processes: `socket(AF_UNIX, …)`,
 * `socket(AF_VSOCK, …)` (vsock reaches the VM's host whatever the network namespace) and
 * `io_uring_setup` fail with EPERM on x86_64 and aarch64, and so does a `socketpair` of any type
 * but `SOCK_STREAM` and `SOCK_SEQPACKET` (a datagram one, or `SOCK_RAW` which AF_UNIX makes datagram,
 * can be `connect`ed or `sendto`'d to any socket path: journald, syslog, a notify socket); x32-ABI
 * syscalls fail with EPERM; any other architecture (i386 via `int 0x80`, where `socketcall` would
 * bypass the check) is killed. Every other syscall stays allowed. Pure: no syscalls made.
 */
export function unixSocketFilter(): Uint8Array {
  const LD_W_ABS = 0x20, JEQ_K = 0x15, JGE_K = 0x35, AND_K = 0x54, RET_K = 0x06;
  const ALLOW = 0x7fff0000, ERRNO = 0x00050000 | EPERM, KILL_PROCESS = 0x80000000;
  // [code, jt, jf, k]; jumps are relative to the next instruction.
  const prog: [number, number, number, number][] = [
    /* 0 */ [LD_W_ABS, 0, 0, 4], // seccomp_data.arch
    /* 1 */ [JEQ_K, 2, 0, AUDIT_ARCH_X86_64], // → 4
    /* 2 */ [JEQ_K, 6, 0, AUDIT_ARCH_AARCH64], // → 9
    /* 3 */ [RET_K, 0, 0, KILL_PROCESS],
    /* 4 */ [LD_W_ABS, 0, 0, 0], // seccomp_data.nr (x86_64)
    /* 5 */ [JGE_K, 15, 0, X32_SYSCALL_BIT], // → 21
    /* 6 */ [JEQ_K, 6, 0, NR.x86_64.socket], // → 13
    /* 7 */ [JEQ_K, 8, 0, NR.x86_64.socketpair], // → 16
    /* 8 */ [JEQ_K, 12, 11, NR.x86_64.io_uring_setup], // → 21 : 20
    /* 9 */ [LD_W_ABS, 0, 0, 0], // seccomp_data.nr (aarch64)
    /* 10 */ [JEQ_K, 2, 0, NR.aarch64.socket], // → 13
    /* 11 */ [JEQ_K, 4, 0, NR.aarch64.socketpair], // → 16
    /* 12 */ [JEQ_K, 8, 7, NR.aarch64.io_uring_setup], // → 21 : 20
    /* 13 */ [LD_W_ABS, 0, 0, 16], // low 32 bits of args[0] (socket: the domain)
    /* 14 */ [JEQ_K, 6, 0, AF_UNIX], // → 21
    /* 15 */ [JEQ_K, 5, 4, AF_VSOCK], // → 21 : 20
    /* 16 */ [LD_W_ABS, 0, 0, 24], // low 32 bits of args[1] (socketpair: the type and its flags)
    /* 17 */ [AND_K, 0, 0, SOCK_TYPE_MASK],
    /* 18 */ [JEQ_K, 1, 0, SOCK_STREAM], // → 20
    /* 19 */ [JEQ_K, 0, 1, SOCK_SEQPACKET], // → 20 : 21
    /* 20 */ [RET_K, 0, 0, ALLOW],
    /* 21 */ [RET_K, 0, 0, ERRNO],
  ];
  const buf = new Uint8Array(prog.length * 8);
  const view = new DataView(buf.buffer);
  prog.forEach(([code, jt, jf, k], i) => {
    view.setUint16(i * 8, code, true);
    view.setUint8(i * 8 + 2, jt);
    view.setUint8(i * 8 + 3, jf);
    view.setUint32(i * 8 + 4, k >>> 0, true);
  });
  return buf;
}

function isUnder(p: string, root: string): boolean {
  return p === root || root === "/" || p.startsWith(root.endsWith("/") ? root : root + "/");
}

/** The folders strictly between `root` and `p` (`p` inside `root`), outermost first: `("/w", "/w/a/b/c")` → `["/w/a", "/w/a/b"]`. */
function foldersBetween(root: string, p: string): string[] {
  const rel = root === "/" ? p.slice(1) : p.slice(root.length + 1);
  const parts = rel.split("/").filter(Boolean);
  const base = root === "/" ? "" : root;
  return parts.slice(0, -1).map((_, i) => `${base}/${parts.slice(0, i + 1).join("/")}`);
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
 * - `workspace-write`, a hidden path or masked file inside a root: every folder between the root and it
 *   is bound onto itself (a mount point cannot be renamed), so it cannot be moved away and replaced.
 * - Both confined policies: no capabilities (`--cap-drop ALL`, also when airlock runs as root), and
 *   no host unix socket: the `seccompFd` filter, or (with `unixSockets`) `/run` hidden and only the
 *   named sockets bound back.
 * - `danger-full-access`: the whole filesystem as it is (`--dev-bind / /`), the host network, the
 *   capabilities airlock has, but still its own PID namespace and `/proc` with `--die-with-parent`, so
 *   the whole process tree dies with airlock (even on `kill -9`); with `hardenFullAccess` (hooks) no
 *   capabilities and a minimal `/dev` of its own; `hiddenPaths` behind an empty tmpfs (the data dir's
 *   transcripts folder, for tools and MCP servers) and `maskedFiles` shown empty.
 * Returns `[bwrapPath, ...flags, "--", ...argv]`.
 */
export function bwrapArgs(opts: BwrapOptions): string[] {
  const { policy, cwd, writableRoots } = opts;
  const argv = opts.lifelineFd !== undefined ? withLifeline(opts.argv, opts.lifelineFd, opts.reaperFd) : opts.argv;
  const head = [opts.bwrapPath ?? "bwrap", ...(opts.infoFd !== undefined ? ["--info-fd", String(opts.infoFd)] : []), "--die-with-parent", "--new-session"];
  if (policy === "danger-full-access") {
    // like a hook: everything, but its own /proc (airlock's environ with the provider keys, and its fds,
    // are out of sight) and the data dir's tokens and database shown empty (`maskedFiles`)
    const masks = (opts.maskedFiles ?? []).flatMap((f) => ["--ro-bind", "/dev/null", f]);
    // folders hidden whole (the data dir's transcripts for a tool or MCP server): an empty tmpfs over each
    const hidden = [...new Set(opts.hiddenPaths ?? [])].flatMap((h) => ["--tmpfs", h]);
    const caps = opts.hardenFullAccess ? ["--cap-drop", "ALL"] : [];
    const dev = opts.hardenFullAccess ? ["--dev", "/dev"] : [];
    return [...head, "--unshare-pid", ...caps, "--dev-bind", "/", "/", ...dev, "--proc", "/proc", ...hidden, ...masks, "--chdir", cwd, "--", ...argv];
  }
  const roots = [...new Set(writableRoots)];
  const sockets = [...new Set(opts.unixSockets ?? [])];
  const out: string[] = [
    ...head,
    "--unshare-net",
    "--unshare-pid",
    "--unshare-ipc",
    "--cap-drop", "ALL",
    ...(sockets.length === 0 && opts.seccompFd !== undefined ? ["--seccomp", String(opts.seccompFd)] : []),
    "--ro-bind", "/", "/",
    "--dev", "/dev",
    "--proc", "/proc",
    // Before any bind below: a tmpfs mounted later would hide a root that lives under /tmp.
    "--tmpfs", "/tmp",
  ];
  if (sockets.length > 0) for (const d of opts.socketDirs ?? ["/run"]) out.push("--tmpfs", d);
  const writable = policy === "workspace-write";
  // The program's own files under /tmp (not inside a root): their top folder there, read-only, first.
  const tmpTop = (p: string) => `/tmp/${p.slice("/tmp/".length).split("/")[0]}`;
  const programDirs = [
    ...new Set((opts.runtimePaths ?? []).filter((p) => p.startsWith("/tmp/") && !roots.some((r) => isUnder(p, r))).map(tmpTop)),
  ];
  for (const d of programDirs) out.push("--ro-bind", d, d);
  // Hidden dirs under /tmp are private already (unless a program folder, a root or a read-only path above re-exposes them).
  // One that holds a root is hidden before the root is bound (so the root shows through); one inside a
  // root is hidden after (so the root's bind cannot re-expose it).
  const hidden = [...new Set(opts.hiddenPaths ?? [])].filter(
    (h) =>
      !isUnder(h, "/tmp") || h === "/tmp" || [...programDirs, ...roots, ...(opts.readOnlyPaths ?? [])].some((d) => isUnder(h, d)),
  );
  const hideAfter = (h: string) => roots.some((r) => isUnder(h, r));
  for (const h of hidden) if (!hideAfter(h)) out.push("--tmpfs", h);
  for (const root of roots) out.push(writable ? "--bind" : "--ro-bind", root, root);
  if (writable) {
    // A hidden folder (the data dir, a credential folder) or masked file inside a writable root is a
    // mount point, so it cannot be renamed; the folders above it are bound onto themselves too, or one
    // could be renamed away and a fresh one made in its place (a config and tokens airlock reads next start).
    const pinned = new Set<string>();
    for (const h of [...hidden.filter(hideAfter), ...(opts.maskedFiles ?? []).filter(hideAfter)]) {
      const root = roots.filter((r) => isUnder(h, r)).sort((a, b) => b.length - a.length)[0]!;
      for (const f of foldersBetween(root, h)) if (!pinned.has(f)) pinned.add(f), out.push("--bind", f, f);
    }
  }
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
  // A read-only path that holds a hidden one (an MCP server naming `~` in its credentials, with the
  // data dir below) would show it again: hide it once more, after.
  for (const h of hidden) if ((opts.readOnlyPaths ?? []).some((p) => p !== h && isUnder(h, p))) out.push("--tmpfs", h);
  if (writable) for (const p of opts.lockedPaths ?? []) out.push("--tmpfs", p, "--remount-ro", p);
  for (const p of opts.maskedFiles ?? []) out.push("--ro-bind", "/dev/null", p);
  for (const p of sockets) out.push("--ro-bind", p, p);
  // A cwd outside every root may still live under the private /tmp: make it visible, read-only.
  if (!roots.some((r) => isUnder(cwd, r))) out.push("--ro-bind", cwd, cwd);
  out.push("--chdir", cwd, "--", ...argv);
  return out;
}
