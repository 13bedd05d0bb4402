/**
 * @module launcher/probe
 * What the host offers a sandbox, found out once: whether bubblewrap can really confine here, the
 * compiled seccomp filter (an fd to hand to bubblewrap), and which configured unix sockets exist.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, openSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
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

/**
 * Whether bubblewrap at `bwrapPath` (default: `bwrap` on airlock's PATH) can really confine a process
 * here: runs it once with the namespaces the launcher uses. Missing binary or namespaces that cannot
 * be created both count as unavailable. Cached per path for the life of the process.
 */
export function bwrapAvailable(bwrapPath: string | null = findInPath("bwrap", process.env.PATH)): Promise<boolean> {
  if (!bwrapPath) return Promise.resolve(false);
  let p = probes.get(bwrapPath);
  if (!p) {
    p = new Promise<boolean>((resolve) => {
      let child: ChildProcess;
      try {
        child = spawn(
          bwrapPath,
          ["--die-with-parent", "--unshare-net", "--unshare-pid", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--", "true"],
          { stdio: "ignore", env: sanitizedEnv() },
        );
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
    probes.set(bwrapPath, p);
  }
  return p;
}
