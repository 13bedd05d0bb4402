import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { bwrapArgs } from "./bwrap.ts";
import { decideConfinement, fdLayout, HOOK_PROCESS, MCP_SERVER_PROCESS, planSandbox, TOOL_PROCESS, type Confinement, type HostProcessOptions, type SandboxRequest } from "./plan.ts";
import { POLICIES, type SandboxPolicy } from "./policy.ts";
import { confinementPaths, extraStdio } from "./setup.ts";

const KINDS: [string, HostProcessOptions][] = [
  ["tool", TOOL_PROCESS],
  ["hook", HOOK_PROCESS],
  ["mcp", MCP_SERVER_PROCESS],
];
const WORKS = { path: "/usr/bin/bwrap", works: true };
const BROKEN = { path: "/usr/bin/bwrap", works: false };
const MISSING = { path: null, works: false };

describe("plan.decideConfinement", () => {
  test("bubblewrap that works: every kind and policy runs under it; only workspace-write prepares roots", () => {
    for (const [, o] of KINDS) {
      for (const p of POLICIES) {
        for (const allow of [false, true]) {
          expect(decideConfinement(p, WORKS, allow, o)).toEqual({ kind: "bwrap", confined: p !== "danger-full-access", prepareRoots: p === "workspace-write", bwrapPath: "/usr/bin/bwrap" });
        }
      }
    }
  });

  test("no bubblewrap: a confining policy is refused unless allow_unenforced, then runs unconfined, for every kind", () => {
    for (const [, o] of KINDS) {
      for (const p of ["read-only", "workspace-write"] as SandboxPolicy[]) {
        expect(decideConfinement(p, MISSING, false, o)).toEqual({ kind: "refuse", why: "bubblewrap (bwrap) was not found on PATH" });
        expect(decideConfinement(p, BROKEN, false, o)).toEqual({ kind: "refuse", why: "bubblewrap at /usr/bin/bwrap cannot create the namespaces it needs here" });
        expect(decideConfinement(p, BROKEN, true, o)).toEqual({ kind: "direct", unconfined: true, why: "bubblewrap at /usr/bin/bwrap cannot create the namespaces it needs here" });
      }
    }
  });

  test("no bubblewrap under danger-full-access: tools and MCP servers run untied; a hook is refused unless allow_unenforced", () => {
    const why = "bubblewrap (bwrap) was not found on PATH";
    expect(decideConfinement("danger-full-access", MISSING, false, TOOL_PROCESS)).toEqual({ kind: "direct", unconfined: false, why });
    expect(decideConfinement("danger-full-access", MISSING, false, MCP_SERVER_PROCESS)).toEqual({ kind: "direct", unconfined: false, why });
    expect(decideConfinement("danger-full-access", MISSING, false, HOOK_PROCESS)).toEqual({ kind: "refuse", why });
    expect(decideConfinement("danger-full-access", MISSING, true, HOOK_PROCESS)).toEqual({ kind: "direct", unconfined: false, why });
  });

  test("a path that 'works' but is null never counts as bubblewrap (fail closed)", () => {
    expect(decideConfinement("read-only", { path: null, works: true }, false, TOOL_PROCESS).kind).toBe("refuse");
  });
});

describe("plan.fdLayout", () => {
  test("fds from 3 in the order info, seccomp, lifeline, reaper: tools 3/4/5/6, MCP servers 3/4/5, hooks 3/4", () => {
    expect(fdLayout(true, true)).toEqual({ info: 3, seccomp: 4, lifeline: 5, reaper: 6 });
    expect(fdLayout(true, false)).toEqual({ info: 3, lifeline: 4, reaper: 5 });
    expect(fdLayout(false, true)).toEqual({ seccomp: 3, lifeline: 4, reaper: 5 });
    expect(fdLayout(false, false)).toEqual({ lifeline: 3, reaper: 4 });
  });
});

const bwrapC = (policy: SandboxPolicy): Extract<Confinement, { kind: "bwrap" }> => ({ kind: "bwrap", confined: policy !== "danger-full-access", prepareRoots: policy === "workspace-write", bwrapPath: "/usr/bin/bwrap" });

function request(policy: SandboxPolicy, options: HostProcessOptions, over: Partial<SandboxRequest> = {}): SandboxRequest {
  return {
    policy,
    confinement: bwrapC(policy),
    options,
    argv: ["/usr/bin/python3", "-"],
    cwd: "/w",
    writableRoots: ["/w"],
    mounts: { readOnly: ["/w/.git/config"], mountPoints: ["/w/.git"], locked: [] },
    hiddenPaths: ["/home/u/.ssh"],
    maskedFiles: ["/home/u/.netrc"],
    visiblePaths: [],
    fullAccessMasks: ["/data/api-token"],
    runtimePaths: ["/usr/bin/python3"],
    sockets: { sockets: [], socketDirs: [] },
    ...over,
  };
}

describe("plan.planSandbox", () => {
  test("a tool under workspace-write: info fd 3, seccomp fd 4, lifeline 5, reaper 6, the prepared metadata mounted", () => {
    const plan = planSandbox(request("workspace-write", TOOL_PROCESS));
    expect(plan.fds).toEqual({ info: 3, seccomp: 4, lifeline: 5, reaper: 6 });
    expect(plan.seccomp).toBe(true);
    expect(plan.argv).toEqual(
      bwrapArgs({
        policy: "workspace-write",
        argv: ["/usr/bin/python3", "-"],
        cwd: "/w",
        writableRoots: ["/w"],
        readOnlyPaths: ["/w/.git/config"],
        mountPoints: ["/w/.git"],
        lockedPaths: [],
        hiddenPaths: ["/home/u/.ssh"],
        maskedFiles: ["/home/u/.netrc"],
        runtimePaths: ["/usr/bin/python3"],
        bwrapPath: "/usr/bin/bwrap",
        infoFd: 3,
        seccompFd: 4,
        lifelineFd: 5,
        reaperFd: 6,
        unixSockets: [],
        socketDirs: [],
      }),
    );
  });

  test("an MCP server and a tool get the same mounts for the same inputs; only the fds differ (no info fd)", () => {
    const tool = planSandbox(request("read-only", TOOL_PROCESS));
    const mcp = planSandbox(request("read-only", MCP_SERVER_PROCESS));
    expect(mcp.fds).toEqual({ seccomp: 3, lifeline: 4, reaper: 5 });
    const strip = (a: string[]) => a.filter((x, i) => !(a[i - 1] === "--info-fd" || x === "--info-fd") && !/^(exec \d<&-; )?\(IFS= read -r _ <&\d/.test(x)).map((x, i, all) => (all[i - 1] === "--seccomp" ? "FD" : x));
    expect(strip(mcp.argv)).toEqual(strip(tool.argv));
  });

  test("an MCP server's named credentials are bound read-only after the masks", () => {
    const argv = planSandbox(request("read-only", MCP_SERVER_PROCESS, { visiblePaths: ["/home/u/.config/gh"] })).argv;
    const at = argv.indexOf("/home/u/.config/gh");
    expect(argv.slice(at - 1, at + 2)).toEqual(["--ro-bind", "/home/u/.config/gh", "/home/u/.config/gh"]);
  });

  test("unix sockets kept: no seccomp filter, no seccomp fd; the lifeline follows the info fd", () => {
    const plan = planSandbox(request("read-only", TOOL_PROCESS, { sockets: { sockets: ["/run/a.sock"], socketDirs: ["/run"] } }));
    expect(plan.seccomp).toBe(false);
    expect(plan.fds).toEqual({ info: 3, lifeline: 4, reaper: 5 });
    expect(plan.argv).not.toContain("--seccomp");
  });

  test("a hook: danger-full-access hardened — no capabilities, own /dev and /proc, the data dir's secrets masked, lifeline on fd 3", () => {
    const plan = planSandbox(request("danger-full-access", HOOK_PROCESS, { argv: ["/bin/sh", "-c", "check"], cwd: "/p", fullAccessMasks: ["/d/api-token", "/d/airlock.db"] }));
    expect(plan.fds).toEqual({ lifeline: 3, reaper: 4 });
    expect(plan.seccomp).toBe(false);
    const sep = plan.argv.indexOf("--");
    expect(plan.argv.slice(0, sep)).toEqual([
      "/usr/bin/bwrap", "--die-with-parent", "--new-session", "--unshare-pid", "--cap-drop", "ALL",
      "--dev-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
      "--ro-bind", "/dev/null", "/d/api-token",
      "--ro-bind", "/dev/null", "/d/airlock.db",
      "--chdir", "/p",
    ]);
    expect(plan.argv.slice(-4)).toEqual(["airlock-lifeline", "/bin/sh", "-c", "check"]);
    expect(plan.argv[sep + 3]).toContain("<&3");
  });

  test("a tool under danger-full-access: the host as it is (capabilities kept), its own /proc, the data dir's secrets masked", () => {
    const plan = planSandbox(request("danger-full-access", TOOL_PROCESS));
    expect(plan.fds).toEqual({ info: 3, lifeline: 4, reaper: 5 });
    expect(plan.argv.slice(0, plan.argv.indexOf("--"))).toEqual([
      "/usr/bin/bwrap", "--info-fd", "3", "--die-with-parent", "--new-session", "--unshare-pid",
      "--dev-bind", "/", "/", "--proc", "/proc", "--ro-bind", "/dev/null", "/data/api-token", "--chdir", "/w",
    ]);
  });

  test("under danger-full-access the data dir's transcripts folder is an empty tmpfs for a tool and an MCP server, and in view for a hook", () => {
    const over = { transcriptDirs: ["/data/transcripts"] };
    const flags = (o: HostProcessOptions) => {
      const argv = planSandbox(request("danger-full-access", o, over)).argv;
      return argv.slice(0, argv.indexOf("--"));
    };
    for (const o of [TOOL_PROCESS, MCP_SERVER_PROCESS]) expect(flags(o).join(" ")).toContain("--proc /proc --tmpfs /data/transcripts --ro-bind /dev/null /data/api-token");
    expect(flags(HOOK_PROCESS)).not.toContain("/data/transcripts");
  });
});

describe("setup.confinementPaths", () => {
  const base = realpathSync(mkdtempSync(path.join(tmpdir(), "airlock-plan-")));
  afterAll(() => rmSync(base, { recursive: true, force: true }));
  const own = path.join(base, "own-home");
  const airlock = path.join(base, "airlock-home");
  const data = path.join(airlock, ".local/share/airlock");
  mkdirSync(path.join(own, ".ssh"), { recursive: true });
  mkdirSync(path.join(airlock, ".aws"), { recursive: true });
  mkdirSync(data, { recursive: true });
  writeFileSync(path.join(airlock, ".netrc"), "machine x password y\n");
  writeFileSync(path.join(data, "api-token"), "t");

  test("a process with its own HOME still has airlock's HOME's credentials hidden (every home, the stricter of tools and MCP)", () => {
    const p = confinementPaths([own, airlock], [data]);
    expect(p.hidden).toEqual(expect.arrayContaining([data, path.join(own, ".ssh"), path.join(airlock, ".aws")]));
    expect(p.masked).toContain(path.join(airlock, ".netrc"));
    expect(p.visible).toEqual([]);
  });

  test("named credentials stay visible, but the data dir's secrets under a named path stay masked", () => {
    const p = confinementPaths([airlock], [data], [airlock, path.join(airlock, ".aws")]);
    expect(p.hidden).not.toContain(path.join(airlock, ".aws"));
    expect(p.visible).toEqual([airlock, path.join(airlock, ".aws")]);
    expect(p.masked).toContain(path.join(data, "api-token"));
    expect(p.hidden).toContain(data);
  });

  test("a named path that shows the data dir, or lies in its transcripts folder, never shows the transcripts", () => {
    const transcripts = path.join(data, "transcripts");
    mkdirSync(transcripts, { recursive: true });
    try {
      expect(confinementPaths([airlock], [data]).hidden).not.toContain(transcripts); // inside the hidden data dir already
      const home = confinementPaths([airlock], [data], [airlock]);
      expect(home.hidden).toContain(transcripts);
      const inside = confinementPaths([airlock], [data], [transcripts, path.join(transcripts, "ses_x.jsonl")]);
      expect(inside.visible).toEqual([]);
      expect(inside.hidden).toContain(data);
    } finally {
      rmSync(transcripts, { recursive: true, force: true });
    }
  });
});

describe("setup.extraStdio", () => {
  test("the child's fds 3… follow the plan's layout: pipes for info and lifeline, the filter fd in the seccomp slot, the mark in the reaper slot", () => {
    expect(extraStdio(undefined)).toEqual([]);
    expect(extraStdio({ fds: fdLayout(true, true), seccompFd: 42, reaperFd: 7 })).toEqual(["pipe", 42, "pipe", 7]);
    expect(extraStdio({ fds: fdLayout(false, true), seccompFd: 42, reaperFd: 7 })).toEqual([42, "pipe", 7]);
    expect(extraStdio({ fds: fdLayout(true, false), reaperFd: 7 })).toEqual(["pipe", "pipe", 7]);
    expect(extraStdio({ fds: fdLayout(false, false), reaperFd: 7 })).toEqual(["pipe", 7]);
  });

  test("a seccomp slot with no filter fd opened is an internal error, never a child without its filter", () => {
    expect(() => extraStdio({ fds: fdLayout(true, true), reaperFd: 7 })).toThrow(/no filter fd/);
  });
});
