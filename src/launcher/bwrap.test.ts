import { describe, expect, test } from "bun:test";
import { bwrapArgs, unixSocketFilter } from "./bwrap.ts";

const common = ["/usr/bin/bwrap", "--die-with-parent", "--new-session", "--unshare-net", "--unshare-pid", "--unshare-ipc", "--cap-drop", "ALL", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"];

describe("bwrap.bwrapArgs", () => {
  test("read-only: / read-only, private /tmp, no network, own PID namespace; the workspace re-bound read-only after the tmpfs", () => {
    expect(bwrapArgs({ policy: "read-only", argv: ["/usr/bin/bash", "-c", "ls"], cwd: "/tmp/ws", writableRoots: ["/tmp/ws"], bwrapPath: "/usr/bin/bwrap" })).toEqual([
      ...common,
      "--ro-bind", "/tmp/ws", "/tmp/ws",
      "--chdir", "/tmp/ws",
      "--", "/usr/bin/bash", "-c", "ls",
    ]);
  });

  test("workspace-write: every root read-write, then its .git/hooks and .git/config read-only over it", () => {
    expect(bwrapArgs({ policy: "workspace-write", argv: ["python3", "-"], cwd: "/home/u/proj/sub", writableRoots: ["/home/u/proj", "/tmp/extra"], bwrapPath: "/usr/bin/bwrap" })).toEqual([
      ...common,
      "--bind", "/home/u/proj", "/home/u/proj",
      "--bind", "/tmp/extra", "/tmp/extra",
      "--ro-bind-try", "/home/u/proj/.git/hooks", "/home/u/proj/.git/hooks",
      "--ro-bind-try", "/home/u/proj/.git/config", "/home/u/proj/.git/config",
      "--ro-bind-try", "/tmp/extra/.git/hooks", "/tmp/extra/.git/hooks",
      "--ro-bind-try", "/tmp/extra/.git/config", "/tmp/extra/.git/config",
      "--chdir", "/home/u/proj/sub",
      "--", "python3", "-",
    ]);
  });

  test("danger-full-access: the whole filesystem and the network, but its own PID namespace that dies with airlock", () => {
    expect(bwrapArgs({ policy: "danger-full-access", argv: ["bash", "-c", "true"], cwd: "/w", writableRoots: ["/w"], infoFd: 3 })).toEqual([
      "bwrap", "--info-fd", "3", "--die-with-parent", "--new-session",
      "--unshare-pid", "--dev-bind", "/", "/", "--proc", "/proc",
      "--chdir", "/w",
      "--", "bash", "-c", "true",
    ]);
  });

  test("danger-full-access: its own /proc, and the data dir's tokens and database masked", () => {
    expect(bwrapArgs({ policy: "danger-full-access", argv: ["true"], cwd: "/w", writableRoots: [], maskedFiles: ["/d/approver-token", "/d/airlock.db"] })).toEqual([
      "bwrap", "--die-with-parent", "--new-session",
      "--unshare-pid", "--dev-bind", "/", "/", "--proc", "/proc",
      "--ro-bind", "/dev/null", "/d/approver-token", "--ro-bind", "/dev/null", "/d/airlock.db",
      "--chdir", "/w",
      "--", "true",
    ]);
  });

  test("seccompFd: the unix-socket filter is loaded from that fd under both confined policies", () => {
    for (const policy of ["read-only", "workspace-write"] as const) {
      const a = bwrapArgs({ policy, argv: ["true"], cwd: "/w", writableRoots: ["/w"], seccompFd: 4, bwrapPath: "/usr/bin/bwrap" });
      expect(a.slice(0, common.length + 2)).toEqual([...common.slice(0, 8), "--seccomp", "4", ...common.slice(8)]);
    }
  });

  test("unixSockets: no seccomp filter; /run hidden before the roots, only the named sockets bound back after", () => {
    const a = bwrapArgs({
      policy: "read-only",
      argv: ["true"],
      cwd: "/w",
      writableRoots: ["/w"],
      seccompFd: 4,
      unixSockets: ["/run/user/0/bus"],
      socketDirs: ["/run"],
      maskedFiles: ["/root/.netrc"],
      bwrapPath: "/usr/bin/bwrap",
    });
    expect(a).toEqual([
      ...common,
      "--tmpfs", "/run",
      "--ro-bind", "/w", "/w",
      "--ro-bind", "/dev/null", "/root/.netrc",
      "--ro-bind", "/run/user/0/bus", "/run/user/0/bus",
      "--chdir", "/w",
      "--", "true",
    ]);
  });

  test("a hook (danger-full-access, hardenFullAccess): network and files as they are, no capabilities, own PID namespace and /proc, the data dir's secrets masked", () => {
    expect(bwrapArgs({ policy: "danger-full-access", hardenFullAccess: true, argv: ["/bin/sh", "-c", "check"], cwd: "/p", writableRoots: [], maskedFiles: ["/d/api-token", "/d/airlock.db"], bwrapPath: "/usr/bin/bwrap" })).toEqual([
      "/usr/bin/bwrap", "--die-with-parent", "--new-session", "--unshare-pid", "--cap-drop", "ALL",
      "--dev-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
      "--ro-bind", "/dev/null", "/d/api-token",
      "--ro-bind", "/dev/null", "/d/airlock.db",
      "--chdir", "/p",
      "--", "/bin/sh", "-c", "check",
    ]);
  });

  test("unixSocketFilter: 22 classic-BPF instructions; checks the arch first and kills an unknown one", () => {
    const f = unixSocketFilter();
    expect(f.length).toBe(22 * 8);
    const v = new DataView(f.buffer);
    const ins = (i: number) => [v.getUint16(i * 8, true), v.getUint8(i * 8 + 2), v.getUint8(i * 8 + 3), v.getUint32(i * 8 + 4, true)];
    expect(ins(0)).toEqual([0x20, 0, 0, 4]); // load the arch
    expect(ins(3)).toEqual([0x06, 0, 0, 0x80000000]); // unknown arch: kill the process
    expect(ins(21)).toEqual([0x06, 0, 0, 0x00050001]); // EPERM
  });

  test("a hidden folder below a read-only path (an MCP server's named credential) is hidden again after that bind", () => {
    const a = bwrapArgs({ policy: "read-only", argv: ["true"], cwd: "/w", writableRoots: ["/w"], hiddenPaths: ["/home/u/.local/share/airlock"], readOnlyPaths: ["/home/u"] });
    const bind = a.findIndex((x, i) => x === "--ro-bind" && a[i + 1] === "/home/u");
    const hides = a.flatMap((x, i) => (x === "--tmpfs" && a[i + 1] === "/home/u/.local/share/airlock" ? [i] : []));
    expect(bind).toBeGreaterThan(0);
    expect(hides.some((i) => i > bind)).toBe(true);
  });

  test("workspace-write: the folders between a root and a hidden path inside it are bound onto themselves before it is hidden", () => {
    const a = bwrapArgs({ policy: "workspace-write", argv: ["true"], cwd: "/w", writableRoots: ["/w"], hiddenPaths: ["/w/state/airlock/data"] });
    const at = (p: string, flag: string) => a.findIndex((x, i) => x === flag && a[i + 1] === p);
    expect(at("/w/state", "--bind")).toBeGreaterThan(at("/w", "--bind"));
    expect(at("/w/state/airlock", "--bind")).toBeGreaterThan(at("/w/state", "--bind"));
    expect(at("/w/state/airlock/data", "--tmpfs")).toBeGreaterThan(at("/w/state/airlock", "--bind"));
  });

  test("the /tmp tmpfs comes before every bind (a workspace under /tmp would otherwise be hidden)", () => {
    for (const policy of ["read-only", "workspace-write"] as const) {
      const a = bwrapArgs({ policy, argv: ["true"], cwd: "/tmp/a", writableRoots: ["/tmp/a"] });
      const tmpfs = a.indexOf("--tmpfs");
      const firstBind = a.findIndex((x, i) => i > 8 && (x === "--bind" || x === "--ro-bind"));
      expect(tmpfs).toBeGreaterThan(0);
      expect(firstBind).toBeGreaterThan(tmpfs);
      expect(a.slice(a.indexOf("--") + 1)).toEqual(["true"]);
    }
  });

  test("extra read-only paths (a worktree's .git file) and a cwd outside every root are bound read-only", () => {
    const a = bwrapArgs({ policy: "workspace-write", argv: ["true"], cwd: "/tmp/elsewhere", writableRoots: ["/w"], readOnlyPaths: ["/w/.git"] });
    expect(a.slice(a.indexOf("--bind"))).toEqual([
      "--bind", "/w", "/w",
      "--ro-bind-try", "/w/.git/hooks", "/w/.git/hooks",
      "--ro-bind-try", "/w/.git/config", "/w/.git/config",
      "--ro-bind", "/w/.git", "/w/.git",
      "--ro-bind", "/tmp/elsewhere", "/tmp/elsewhere",
      "--chdir", "/tmp/elsewhere",
      "--", "true",
    ]);
    expect(a[0]).toBe("bwrap");
  });

  test("infoFd asks bubblewrap to report the namespace init's pid on that fd", () => {
    const a = bwrapArgs({ policy: "read-only", argv: ["true"], cwd: "/w", writableRoots: ["/w"], infoFd: 3 });
    expect(a.slice(0, 4)).toEqual(["bwrap", "--info-fd", "3", "--die-with-parent"]);
  });
});
