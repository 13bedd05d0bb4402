/**
 * @module test/security/consuming-kernel-reads-ask
 * Some kernel files are not read but consumed: each read of `/proc/kmsg` takes its lines from the kernel log (syslog
 * never gets them), each read of tracefs's `trace_pipe` takes its trace records. readRegularFile and the card's file
 * binding refuse them (6813d35, and the statfs check), but a file tool reads in airlock's own process: as root, a
 * `developer__read_file` of `/proc/kmsg` — a read-only call, free in `smart` mode with no card — consumed the host's
 * kernel log, and so did a workspace link to it. Now the security floor asks for any read of one (file tool or shell,
 * spelled, through a link, by a glob, or on a procfs mounted elsewhere). Judged by the real floor on the real
 * filesystem; and end to end through a headless `airlock run` in `smart` mode as root and as `nobody`, in a private
 * mount namespace whose `/proc/kmsg` is `/proc/version` bind-mounted (so the read, when it happens, takes nothing
 * from the host's log): refused `no_human_surface`, never read.
 */
import { describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { stringify } from "yaml";
import { judgeCall, type FloorEnv } from "../../src/gate/inspectors/security-floor.ts";
import { dataDirFor, IS_ROOT, sharedTempDir, testUsers } from "../as-user.ts";

const ws = sharedTempDir("airlock-consuming-ws-");
symlinkSync("/proc/kmsg", path.join(ws, "notes.txt"));
const env: FloorEnv = { workspace: ws, policy: "danger-full-access", home: "/nonexistent-home", PATH: process.env.PATH };

describe("the floor asks for reads that consume kernel data", () => {
  test.each([
    ["read", "/proc/kmsg"],
    ["read", "/proc/self/root/proc/kmsg"],
    ["read", "notes.txt"],
    ["read", "/sys/kernel/tracing/trace_pipe"],
    ["read", "/sys/kernel/debug/tracing/instances/foo/per_cpu/cpu1/trace_pipe_raw"],
    ["shell", "cat /proc/kmsg"],
    ["shell", "dd if=/proc/kmsg of=x"],
    ["shell", "head < /proc/kmsg"],
    ["shell", "cd /proc && cat kmsg"],
    ["shell", "cat /proc/km*"],
    ["shell", "cat notes.txt"],
  ])("%s %s", (kind, arg) => {
    const call = kind === "read" ? ({ kind: "read", path: arg } as const) : ({ kind: "shell", command: arg } as const);
    expect(judgeCall(call, env).join("; ")).toMatch(/a kernel file whose reads consume what they return/);
  });
  test.each(["/proc/self/status", "/proc/version", "/sys/devices/system/cpu/online", "/proc/kmsg.txt"])("read %s does not ask", (p) => {
    expect(judgeCall({ kind: "read", path: p }, env)).toEqual([]);
  });
});

/** True when this process may make a private mount namespace and mount in it (root, unshare present). */
function canMount(): boolean {
  if (!IS_ROOT) return false;
  const r = Bun.spawnSync(["unshare", "-m", "--propagation", "private", "sh", "-c", "mount --bind /proc/version /proc/kmsg"], { stdout: "ignore", stderr: "ignore" });
  return r.exitCode === 0;
}

const MAIN = path.join(import.meta.dir, "../../src/main.ts");

describe.skipIf(!canMount())("end to end, /proc/kmsg being /proc/version in a private mount namespace", () => {
  test("a procfs mounted elsewhere: its kmsg asks too", () => {
    const dir = sharedTempDir("airlock-consuming-proc2-");
    const code = `
import { judgeCall } from ${JSON.stringify(path.join(import.meta.dir, "../../src/gate/inspectors/security-floor.ts"))};
console.log(JSON.stringify(judgeCall({ kind: "read", path: ${JSON.stringify(dir + "/kmsg")} }, ${JSON.stringify(env)})));
`;
    const r = Bun.spawnSync(["unshare", "-m", "--propagation", "private", "sh", "-c", `mount -t proc proc ${dir} && exec '${process.execPath}' -e "$0"`, code], { stdout: "pipe", stderr: "pipe" });
    expect(r.stdout.toString() + r.stderr.toString()).toContain("the kernel log");
  });

  for (const user of testUsers()) {
    test(`as ${user.name}: smart-mode developer__read_file /proc/kmsg is an ask (refused headless), never read`, async () => {
      const base = sharedTempDir("airlock-consuming-run-");
      const data = path.join(base, "data");
      const w = path.join(base, "ws");
      for (const d of [data, w]) {
        mkdirSync(d);
        chmodSync(d, 0o777);
      }
      dataDirFor(data, user);
      writeFileSync(path.join(data, "airlock.yaml"), stringify({ provider: { name: "scripted", script: "turns.yaml" }, mode: "smart", sandbox: "workspace-write" }));
      writeFileSync(path.join(data, "turns.yaml"), stringify({ turns: [{ tool_calls: [{ name: "developer__read_file", arguments: { path: "/proc/kmsg" } }] }, { text: "done" }] }));
      const argv = [...user.prefix, process.execPath, MAIN, "run", "go", "--headless", "--output-format", "stream-json", "--data-dir", data];
      const p = Bun.spawn(["unshare", "-m", "--propagation", "private", "sh", "-c", `mount --bind /proc/version /proc/kmsg && exec "$@"`, "sh", ...argv], {
        cwd: w,
        stdin: "ignore",
        stdout: "pipe",
        stderr: "pipe",
        env: { PATH: process.env.PATH, HOME: base, AIRLOCK_HOME: "" },
      });
      const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
      expect(stdout + stderr).not.toContain("Linux version");
      expect(code).toBe(0);
      expect(stdout).toContain("no_human_surface");
    }, 60_000);
  }
});
