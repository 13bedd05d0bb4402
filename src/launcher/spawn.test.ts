import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Config } from "../config/schema.ts";
import { AirlockError } from "../errors.ts";
import { bwrapAvailable, unixSocketPlan } from "./probe.ts";
import { launch, refusedLaunchOptions, warmLaunch, watchInert, type LaunchOptions } from "./spawn.ts";

const ws = realpathSync(mkdtempSync(path.join(tmpdir(), "airlock-spawn-")));
afterAll(() => rmSync(ws, { recursive: true, force: true }));
const config = Config.parse({});

function opts(over: Partial<LaunchOptions>): LaunchOptions {
  return { policy: "workspace-write", argv: ["bash", "-c", "true"], cwd: ws, workspace: ws, timeoutMs: 10_000, maxOutputBytes: 1 << 20, config, ...over };
}

async function refusal(p: Promise<unknown>): Promise<AirlockError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof AirlockError) return e;
    throw e;
  }
  throw new Error("expected a refusal, but the call ran");
}

describe("spawn.launch", () => {
  test("runs a command under bubblewrap and reports its exit code and output", async () => {
    const r = await launch(opts({ argv: ["bash", "-c", "echo out; echo err >&2; exit 3"] }));
    expect(r).toEqual({ exit_code: 3, stdout: "out\n", stderr: "err\n", timed_out: false, truncated: false, policy: "workspace-write" });
  });

  test("delivers stdin (interpreter source) and closes it", async () => {
    const r = await launch(opts({ policy: "read-only", argv: ["python3", "-"], stdin: "import sys\nprint(sys.argv, 6*7)\n" }));
    expect(r.stdout).toBe("['-'] 42\n");
    expect(r.exit_code).toBe(0);
  });

  test("caps stdout and stderr at maxOutputBytes with a visible marker", async () => {
    const r = await launch(opts({ argv: ["bash", "-c", "head -c 5000 /dev/zero | tr '\\0' a; head -c 3000 /dev/zero | tr '\\0' b >&2"], maxOutputBytes: 1000 }));
    expect(r.truncated).toBe(true);
    expect(r.stdout.startsWith("a".repeat(1000) + "\n[airlock: output truncated: 4000 of 5000 bytes not shown")).toBe(true);
    expect(r.stderr.startsWith("b".repeat(1000) + "\n[airlock: output truncated: 2000 of 3000 bytes not shown")).toBe(true);
  });

  test("execution_backend: external refuses local processes with external_backend", async () => {
    const e = await refusal(launch(opts({ config: Config.parse({ execution_backend: "external" }), argv: ["bash", "-c", `touch ${ws}/ran`] })));
    expect(e.code).toBe("external_backend");
    expect(await Bun.file(path.join(ws, "ran")).exists()).toBe(false);
  });

  test("a command that is not found is a tool_failed refusal", async () => {
    const e = await refusal(launch(opts({ argv: ["no-such-command-airlock"] })));
    expect(e.code).toBe("tool_failed");
  });

  test("cancel (abort signal) kills the tree and says cancelled", async () => {
    const ac = new AbortController();
    const p = launch(opts({ argv: ["bash", "-c", "echo started; sleep 30"], signal: ac.signal }));
    await Bun.sleep(0);
    ac.abort();
    const r = await p;
    expect(r.cancelled).toBe(true);
    expect(r.exit_code).toBeNull();
  });
});

describe("spawn.warmLaunch", () => {
  test("its launch() is refused at once with external_backend (it only compiles launch)", async () => {
    await expect(launch(refusedLaunchOptions(Config.parse({})))).rejects.toMatchObject({ code: "external_backend" });
    await expect(launch(refusedLaunchOptions(Config.parse({ execution_backend: "local" })))).rejects.toMatchObject({ code: "external_backend" });
    // and past that refusal, a working directory that does not exist: refused again before any spawn
    expect(existsSync(refusedLaunchOptions(Config.parse({})).cwd)).toBe(false);
    // the warm-up itself never rejects
    expect(await warmLaunch(Config.parse({}))).toBeUndefined();
  });

  test("its inert watch builds a launch's result from captured output, capped, and starts or signals no process", async () => {
    const children = () =>
      readdirSync("/proc")
        .filter((n) => /^\d+$/.test(n))
        .filter((n) => {
          try {
            const stat = readFileSync(`/proc/${n}/stat`, "utf8");
            return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === process.pid;
          } catch {
            return false;
          }
        });
    const before = children();
    let signalled = 0;
    const kill = process.kill;
    process.kill = ((pid: number, sig?: string | number) => {
      signalled++;
      return kill.call(process, pid, sig);
    }) as typeof process.kill;
    try {
      const r = await watchInert({ ...refusedLaunchOptions(config), maxOutputBytes: 3 });
      expect(r).toEqual({
        exit_code: 0,
        stdout: "war\n[airlock: output truncated: 4 of 7 bytes not shown (limit 3 bytes)]",
        stderr: "",
        timed_out: false,
        truncated: true,
        policy: "workspace-write",
      });
    } finally {
      process.kill = kill;
    }
    expect(signalled).toBe(0);
    expect(children()).toEqual(before);
  });
});

describe("spawn.launch: programs that live under /tmp", () => {
  test("an executable and a script file under /tmp (outside the workspace) still run; a hidden data dir beside them stays hidden", async () => {
    // e.g. a checkout in /tmp/x whose node_modules/bun runs interpreter__js, or an MCP server script there
    const prog = realpathSync(mkdtempSync(path.join(tmpdir(), "airlock-prog-")));
    try {
      writeFileSync(path.join(prog, "tool.sh"), "#!/bin/bash\ncat \"$1\"; ls \"$(dirname \"$0\")/data\" | wc -l\n");
      chmodSync(path.join(prog, "tool.sh"), 0o755);
      writeFileSync(path.join(prog, "input.txt"), "input under /tmp\n");
      const data = path.join(prog, "data");
      Bun.spawnSync(["mkdir", data]);
      writeFileSync(path.join(data, "approver-token"), "SECRET");
      for (const policy of ["read-only", "workspace-write"] as const) {
        const r = await launch(opts({ policy, argv: [path.join(prog, "tool.sh"), path.join(prog, "input.txt")], hiddenPaths: [data] }));
        expect(r.stderr).toBe("");
        expect(r.stdout).toBe("input under /tmp\n0\n"); // ran; read its input; the data dir is empty inside
        expect(r.exit_code).toBe(0);
      }
      // and it is read-only inside
      const w = await launch(opts({ argv: ["bash", "-c", 'cat "$1" && echo x > "$(dirname "$1")/new.txt"', "sh", path.join(prog, "input.txt")] }));
      expect(w.stdout).toBe("input under /tmp\n");
      expect(w.stderr).toContain("Read-only file system");
    } finally {
      rmSync(prog, { recursive: true, force: true });
    }
  });
});

describe("spawn.launch without bubblewrap", () => {
  test("bwrapAvailable is true for the installed bwrap and false for a missing one", async () => {
    expect(await bwrapAvailable()).toBe(true);
    expect(await bwrapAvailable(null)).toBe(false);
    expect(await bwrapAvailable("/nonexistent/bwrap")).toBe(false);
  });

  test("read-only and workspace-write refuse with sandbox_unavailable and say how to install; nothing runs", async () => {
    for (const policy of ["read-only", "workspace-write"] as const) {
      const e = await refusal(launch(opts({ policy, bwrapPath: null, argv: ["bash", "-c", `touch ${ws}/ran-${policy}`] })));
      expect(e.code).toBe("sandbox_unavailable");
      expect(e.message).toContain("apt-get install bubblewrap");
      expect(e.message).toContain("allow_unenforced");
      expect(await Bun.file(path.join(ws, `ran-${policy}`)).exists()).toBe(false);
    }
  });

  test("bubblewrap hidden from the PATH of the environment is unavailable", async () => {
    const e = await refusal(launch(opts({ policy: "read-only", extraEnv: { PATH: "/nonexistent-bin" } })));
    expect(e.code).toBe("sandbox_unavailable");
  });

  test("a bwrap that cannot create namespaces counts as unavailable", async () => {
    const fake = path.join(ws, "fake-bwrap");
    writeFileSync(fake, "#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n");
    chmodSync(fake, 0o755);
    const e = await refusal(launch(opts({ policy: "workspace-write", bwrapPath: fake })));
    expect(e.code).toBe("sandbox_unavailable");
    expect(e.message).toContain("cannot create the namespaces");
  });

  test("danger-full-access runs without bubblewrap, and warns that its tree is not tied to airlock's lifetime", async () => {
    const r = await launch(opts({ policy: "danger-full-access", bwrapPath: null, argv: ["bash", "-c", "echo ok"] }));
    expect(r).toEqual({
      exit_code: 0,
      stdout: "ok\n",
      stderr: "",
      timed_out: false,
      truncated: false,
      policy: "danger-full-access",
      warning: expect.stringContaining("not tied to airlock's lifetime"),
    });
  });

  test("allow_unenforced: true runs unconfined and the result says so", async () => {
    const r = await launch(opts({ policy: "read-only", bwrapPath: null, config: Config.parse({ allow_unenforced: true }), argv: ["bash", "-c", "echo ok"] }));
    expect(r.stdout).toBe("ok\n");
    expect(r.unconfined).toBe(true);
    expect(r.warning).toContain("UNCONFINED");
    expect(r.warning).toContain("read-only");
  });
});

describe("spawn.unixSocketPlan", () => {
  test("no socket named (or none that exists): nothing to bind, so the seccomp filter applies", () => {
    expect(unixSocketPlan([])).toEqual({ sockets: [], socketDirs: [] });
    expect(unixSocketPlan(["/nonexistent/airlock.sock", "/etc/hostname"])).toEqual({ sockets: [], socketDirs: [] });
  });
});
