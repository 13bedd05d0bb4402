/**
 * @module launcher/probe
 * What the host offers a sandbox, found out once: whether bubblewrap can really confine here, the
 * compiled seccomp filter (an fd to hand to bubblewrap), and which configured unix sockets exist.
 * A successful probe is remembered in the data dir while what it depends on holds (`useProbeCache`).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, constants, existsSync, mkdtempSync, openSync, readFileSync, readlinkSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { readRegularFile } from "../config/paths.ts";
import { unixSocketFilter } from "./bwrap.ts";
import { sanitizedEnv } from "./env.ts";
import { findInPath, resolveRealPath } from "./resolve.ts";

/** How to get bubblewrap working, for `sandbox_unavailable` messages. */
export const BWRAP_INSTALL_HINT =
  "install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`; Fedora: `dnf install bubblewrap`; Arch: `pacman -S bubblewrap`; Alpine: `apk add bubblewrap`) " +
  "and make sure unprivileged user namespaces are enabled (e.g. `sysctl kernel.unprivileged_userns_clone=1`, or on Ubuntu 24.04+ `sysctl kernel.apparmor_restrict_unprivileged_userns=0`), " +
  "or set `allow_unenforced: true` in airlock.yaml to run such calls unconfined (every result then says so)";


let filterFd: number | undefined;

/**
 * A fresh read-only fd (its own file offset) on the compiled {@link unixSocketFilter}, for bubblewrap's
 * `--seccomp`; the caller closes it once the child is spawned. The filter lives in an unlinked file
 * that airlock keeps open (reopened through `/proc/self/fd`), so nothing is left on disk, even after a crash.
 * @throws Error when the temp dir is unusable (the caller turns it into `sandbox_unavailable`).
 */
export function openSeccompFilter(): number {
  if (filterFd === undefined) {
    const dir = mkdtempSync(path.join(tmpdir(), "airlock-seccomp-"));
    const file = path.join(dir, "filter.bpf");
    try {
      writeFileSync(file, unixSocketFilter(), { mode: 0o600 });
      filterFd = openSync(file, "r");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  return openSync(`/proc/self/fd/${filterFd}`, "r");
}

/**
 * The unix-socket part of a confined launch from `sandbox_unix_sockets`: the named sockets that exist
 * (absolute real paths) and the folders to hide when there are any (`/run`, and `/var/run` when it is
 * not a link into `/run`). Empty `sockets`: the seccomp filter applies instead.
 */
export function unixSocketPlan(configured: readonly string[]): { sockets: string[]; socketDirs: string[] } {
  const sockets = [...new Set(configured.map((p) => resolveRealPath("/", p)))].filter((p) => {
    try {
      return statSync(p).isSocket();
    } catch {
      return false;
    }
  });
  if (sockets.length === 0) return { sockets: [], socketDirs: [] };
  const socketDirs = [...new Set(["/run", "/var/run"].filter((d) => existsSync(d)).map((d) => resolveRealPath("/", d)))].filter(
    (d, _i, all) => !all.some((o) => o !== d && d.startsWith(o + "/")),
  );
  return { sockets, socketDirs };
}

const probes = new Map<string, Promise<boolean>>();

/** bubblewrap's argv for the availability probe: the namespaces the launcher uses, then `true`. */
const PROBE_ARGS = ["--die-with-parent", "--unshare-net", "--unshare-pid", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--", "true"];

/** The probe cache's file name in the data dir. */
export const PROBE_CACHE_FILE = "bwrap-probe.json";

/** The sysctls that decide whether an unprivileged process may create the probe's namespaces (absent ones read as null). */
const PROBE_SYSCTLS = [
  "/proc/sys/kernel/unprivileged_userns_clone",
  "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
  "/proc/sys/user/max_user_namespaces",
  "/proc/sys/user/max_pid_namespaces",
  "/proc/sys/user/max_net_namespaces",
  "/proc/sys/user/max_mnt_namespaces",
];

let cacheDir: string | undefined;

/**
 * Where a successful probe is remembered across processes: `dir` is airlock's data dir (hidden from every
 * confined process, refused to the file tools), the file {@link PROBE_CACHE_FILE}; `undefined` keeps the
 * probe in memory only (the default). Set by the runtime (runtime.ts) for its data dir.
 */
export function useProbeCache(dir: string | undefined): void {
  cacheDir = dir;
}

/**
 * What a probe's outcome depends on, read now: bubblewrap's real path, device, inode, size, mode, mtime and
 * ctime (ns), the kernel's boot id (`/proc/sys/kernel/random/boot_id`), the user and group ids, airlock's
 * user and mount namespaces, the userns sysctls ({@link PROBE_SYSCTLS}) and the probe's own argv.
 * `undefined` when any of it cannot be read (then nothing is cached).
 */
export function probeFingerprint(bwrapPath: string): string | undefined {
  try {
    const real = realpathSync(bwrapPath);
    const st = statSync(real, { bigint: true });
    const sysctl = (p: string): string | null => {
      try {
        return readFileSync(p, "utf8").trim();
      } catch {
        return null;
      }
    };
    return JSON.stringify({
      v: 1,
      bwrap: real,
      dev: String(st.dev),
      ino: String(st.ino),
      size: String(st.size),
      mode: String(st.mode),
      mtime_ns: String(st.mtimeNs),
      ctime_ns: String(st.ctimeNs),
      boot_id: readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim(),
      uid: process.getuid?.() ?? -1,
      gid: process.getgid?.() ?? -1,
      userns: readlinkSync("/proc/self/ns/user"),
      mntns: readlinkSync("/proc/self/ns/mnt"),
      sysctls: PROBE_SYSCTLS.map(sysctl),
      args: PROBE_ARGS,
    });
  } catch {
    return undefined;
  }
}

/**
 * Whether the cache in `dir` says bubblewrap works for exactly `fingerprint`. Only a regular file (no
 * symlink) owned by this user, not writable by group or others, at most 4 KiB, holding
 * `{fingerprint, works: true}` counts; anything else (absent, stale, tampered, unreadable) is a miss.
 */
function cachedWorks(dir: string, fingerprint: string): boolean {
  try {
    // never a blocking open (config/paths.ts): a FIFO put in the data dir (a hook can write there) is a miss
    const bytes = readRegularFile(path.join(dir, PROBE_CACHE_FILE), { follow: false, maxBytes: 4096, owner: "self", notWritableByOthers: true });
    const saved = JSON.parse(bytes.toString("utf8")) as { fingerprint?: unknown; works?: unknown };
    return saved.works === true && saved.fingerprint === fingerprint;
  } catch {
    return false;
  }
}

/** Writes `{fingerprint, works: true}` to the cache in `dir` (mode 0600, through a fresh file renamed into place); failures are ignored. */
function saveWorks(dir: string, fingerprint: string): void {
  const tmp = path.join(dir, `${PROBE_CACHE_FILE}.${process.pid}.${Date.now()}.tmp`);
  try {
    const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    try {
      writeFileSync(fd, JSON.stringify({ fingerprint, works: true }));
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path.join(dir, PROBE_CACHE_FILE));
  } catch {
    rmSync(tmp, { force: true });
  }
}

/** Runs the probe: bubblewrap with {@link PROBE_ARGS}; true when it exits 0 within 5 s. */
function runProbe(bwrapPath: string): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    let child: ChildProcess;
    try {
      child = spawn(bwrapPath, PROBE_ARGS, { stdio: "ignore", env: sanitizedEnv() });
    } catch {
      return resolve(false);
    }
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      resolve(false);
    }, 5000);
    child.on("error", () => {
      clearTimeout(timer);
      resolve(false);
    });
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve(code === 0);
    });
  });
}

/**
 * Whether the probe cache ({@link useProbeCache}) says bubblewrap at `bwrapPath` works, without running
 * anything; a hit is kept in memory for {@link bwrapAvailable}. False on a miss, and when no cache dir is set.
 */
export function cachedBwrapWorks(bwrapPath: string): boolean {
  if (probes.has(bwrapPath) || !cacheDir) return false;
  const fingerprint = probeFingerprint(bwrapPath);
  if (!fingerprint || !cachedWorks(cacheDir, fingerprint)) return false;
  probes.set(bwrapPath, Promise.resolve(true));
  return true;
}

/**
 * Whether bubblewrap at `bwrapPath` (default: `bwrap` on airlock's PATH) can really confine a process
 * here: runs it once with the namespaces the launcher uses. Missing binary or namespaces that cannot
 * be created both count as unavailable. Cached per path for the life of the process, and — when a cache
 * dir is set ({@link useProbeCache}) — a success is remembered across processes for as long as its
 * {@link probeFingerprint} holds (same bwrap file, same boot, same user, same sysctls). Only a success is
 * ever cached, so a stale or forged cache can never make a call run unconfined: at worst it skips the
 * probe and the confined call itself fails under bubblewrap.
 */
export function bwrapAvailable(bwrapPath: string | null = findInPath("bwrap", process.env.PATH)): Promise<boolean> {
  if (!bwrapPath) return Promise.resolve(false);
  let p = probes.get(bwrapPath);
  if (!p) {
    const dir = cacheDir;
    const fingerprint = dir ? probeFingerprint(bwrapPath) : undefined;
    if (dir && fingerprint && cachedWorks(dir, fingerprint)) p = Promise.resolve(true);
    else {
      p = runProbe(bwrapPath).then((works) => {
        if (works && dir && fingerprint) saveWorks(dir, fingerprint);
        return works;
      });
    }
    probes.set(bwrapPath, p);
  }
  return p;
}
