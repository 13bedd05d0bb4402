import { describe, expect, test } from "bun:test";
import { bwrapArgs } from "./bwrap.ts";

const common = ["/usr/bin/bwrap", "--die-with-parent", "--new-session", "--unshare-net", "--unshare-pid", "--unshare-ipc", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"];

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

  test("danger-full-access: no bubblewrap at all, the argv unchanged", () => {
    expect(bwrapArgs({ policy: "danger-full-access", argv: ["bash", "-c", "true"], cwd: "/w", writableRoots: ["/w"] })).toEqual(["bash", "-c", "true"]);
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
