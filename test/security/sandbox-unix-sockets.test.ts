/**
 * @module test/security/sandbox-unix-sockets.test
 * "No network" covers host unix sockets: under `read-only` a process used to `connect()` to a socket
 * file on the host (think docker.sock, D-Bus) and reach the service. Now `socket(AF_UNIX)` fails with
 * EPERM (a seccomp filter) unless `sandbox_unix_sockets` names sockets; then only those are reachable
 * under /run. Real sockets served by this test process; run as root and as nobody.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import { IS_ROOT, testUsers } from "../as-user.ts";
import { ownedDir, probeEnv, removeTempDirs, runProbe, tempBase } from "./probe.ts";

const CLIENT = `
import socket, sys
for p in sys.argv[1:]:
    name = p.rsplit("/", 1)[-1]
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(p)
        s.sendall(b"ping")
        print(name, s.recv(100).decode())
    except Exception as e:
        print(name, type(e).__name__)
`;

/** A socket folder outside /tmp (the sandbox's /tmp is private, which would hide a socket there anyway). */
const hostDir = mkdtempSync("/var/tmp/airlock-sock-");
/** Under /run, where system sockets live (root only: that is where the test can create it). */
const runDir = IS_ROOT ? mkdtempSync("/run/airlock-sock-") : mkdtempSync("/var/tmp/airlock-sock-run-");
const servers: { stop(): void }[] = [];
let connections = 0;

function serve(path: string): void {
  servers.push(
    Bun.listen({
      unix: path,
      socket: {
        open() {
          connections++;
        },
        data(s, d) {
          s.write(`pong-${d.toString()}`);
        },
      },
    }),
  );
  chmodSync(path, 0o666);
}

beforeAll(() => {
  for (const d of [hostDir, runDir]) chmodSync(d, 0o755);
  serve(join(hostDir, "host.sock"));
  serve(join(runDir, "allowed.sock"));
  serve(join(runDir, "other.sock"));
});
afterAll(() => {
  for (const s of servers) s.stop();
  for (const d of [hostDir, runDir]) rmSync(d, { recursive: true, force: true });
});

async function connectFromSandbox(policy: "read-only" | "workspace-write", sockets?: string[]): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const user of testUsers()) {
    const base = tempBase("airlock-sock-");
    const home = ownedDir(user, base, "home");
    const ws = ownedDir(user, base, "ws");
    const targets = [join(hostDir, "host.sock"), join(runDir, "allowed.sock"), join(runDir, "other.sock")];
    const r = await runProbe(user, { kind: "launch", policy, argv: ["python3", "-c", CLIENT, ...targets], cwd: ws, ...(sockets ? { sockets } : {}) }, probeEnv(home));
    out[user.name] = r.stdout;
  }
  return out;
}

afterAll(removeTempDirs);

describe("host unix sockets are out of reach of confined processes", () => {
  for (const policy of ["read-only", "workspace-write"] as const) {
    test(`${policy}: socket(AF_UNIX) is refused, so no host socket is reached, for every user`, async () => {
      const before = connections;
      const seen = await connectFromSandbox(policy);
      for (const [name, out] of Object.entries(seen)) {
        expect({ name, out }).toEqual({ name, out: "host.sock PermissionError\nallowed.sock PermissionError\nother.sock PermissionError\n" });
      }
      expect(connections).toBe(before);
    }, 120_000);
  }

  test.skipIf(!IS_ROOT)("sandbox_unix_sockets: the named socket under /run is reached, another one there is not", async () => {
    const before = connections;
    const seen = await connectFromSandbox("read-only", [join(runDir, "allowed.sock")]);
    for (const [name, out] of Object.entries(seen)) {
      // host.sock lives outside /run and /var/run: with AF_UNIX allowed it is reachable (docs/security-model.md says so)
      expect({ name, out }).toEqual({ name, out: "host.sock pong-ping\nallowed.sock pong-ping\nother.sock FileNotFoundError\n" });
    }
    expect(connections - before).toBe(2 * testUsers().length);
  }, 120_000);
});
