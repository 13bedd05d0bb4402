/**
 * @module test/security/sandbox-vsock.test
 * "No network" covers vsock, the VM ↔ host socket family (Firecracker, Kata, Nitro, WSL2): vsock
 * ignores network namespaces, so under `--unshare-net` a confined process could still open an
 * `AF_VSOCK` socket and connect to a service on the VM's host (CID 2). The test only creates the
 * socket (it connects nowhere); it is skipped where this kernel has no vsock at all. Through the real
 * launcher (tools) and the real MCP launcher, with bubblewrap, as root and as nobody.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { testUsers } from "../as-user.ts";
import { ownedDir, probeEnv, removeTempDirs, runProbe, tempBase } from "./probe.ts";

const MAKE_VSOCK = `python3 -c "
import socket
try:
    socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM); print('vsock=created')
except OSError as e:
    print('vsock=errno-%d' % e.errno)
"`;

/** True when this kernel lets an unconfined process create an AF_VSOCK socket (else the test proves nothing). */
const hostHasVsock = Bun.spawnSync(["sh", "-c", MAKE_VSOCK], { stdout: "pipe" }).stdout.toString().trim() === "vsock=created";

afterAll(removeTempDirs);

describe("vsock is out of reach of confined processes", () => {
  test.skipIf(!hostHasVsock)("socket(AF_VSOCK) fails with EPERM under read-only and workspace-write, in tools and MCP servers, for every user", async () => {
    const seen: Record<string, string> = {};
    for (const user of testUsers()) {
      for (const policy of ["read-only", "workspace-write"] as const) {
        for (const kind of ["launch", "mcp"] as const) {
          const base = tempBase("airlock-vsock-");
          const home = ownedDir(user, base, "home");
          const ws = ownedDir(user, base, "ws");
          const request = kind === "launch" ? { kind, policy, argv: ["sh", "-c", MAKE_VSOCK], cwd: ws } : { kind, policy, script: MAKE_VSOCK, cwd: ws };
          const r = await runProbe(user, request, probeEnv(home));
          seen[`${kind} ${policy} as ${user.name}`] = String(r.stdout).trim();
        }
      }
    }
    expect(Object.entries(seen).filter(([, out]) => out !== "vsock=errno-1")).toEqual([]);
  }, 180_000);
});
