/**
 * @module test/security/sandbox-unix-datagram-sockets.test
 * "No network" covers host unix *datagram* sockets too (journald's `/run/systemd/journal/socket`,
 * syslog's `/dev/log`, `NOTIFY_SOCKET`): `socket(AF_UNIX)` is refused by the seccomp filter, but a
 * datagram (or `SOCK_RAW`, which AF_UNIX turns into datagram) `socketpair` could be re-connected to
 * any path, or `sendto` it. A real datagram socket served on the host by a python helper; the
 * confined client runs through the real launcher and bubblewrap, as root and as nobody.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import { testUsers } from "../as-user.ts";
import { ownedDir, probeEnv, removeTempDirs, runProbe, tempBase } from "./probe.ts";

/** Binds a datagram socket at argv[1], prints "ready", then on each stdin line prints what it received since (or "none"). */
const SERVER = `
import socket, sys, os
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o666); s.setblocking(False)
print("ready", flush=True)
for _ in sys.stdin:
    got = []
    while True:
        try: got.append(s.recv(100).decode())
        except BlockingIOError: break
    print(",".join(got) or "none", flush=True)
`;

/** Each way a confined process could reach a host datagram socket without socket(AF_UNIX). */
const CLIENT = `
import socket, sys
p = sys.argv[1]
for name, kind in [("dgram", socket.SOCK_DGRAM), ("raw", socket.SOCK_RAW)]:
    try:
        a, b = socket.socketpair(socket.AF_UNIX, kind)
    except OSError as e:
        print(name, "socketpair", e.errno); continue
    try:
        a.connect(p); a.send(("connect-" + name).encode()); print(name, "connect", "sent")
    except OSError as e:
        print(name, "connect", e.errno)
    try:
        a.sendto(("sendto-" + name).encode(), p); print(name, "sendto", "sent")
    except OSError as e:
        print(name, "sendto", e.errno)
for name, kind in [("stream", socket.SOCK_STREAM), ("seqpacket", socket.SOCK_SEQPACKET)]:
    a, b = socket.socketpair(socket.AF_UNIX, kind)
    a.send(b"x"); print(name, "pair", b.recv(1).decode())
`;

const hostDir = mkdtempSync("/var/tmp/airlock-dgram-");
chmodSync(hostDir, 0o755);
const sockPath = join(hostDir, "journal.sock");
const server = Bun.spawn(["python3", "-c", SERVER, sockPath], { stdin: "pipe", stdout: "pipe", stderr: "inherit" });
const lines = (async function* () {
  let buf = "";
  for await (const chunk of server.stdout) {
    buf += new TextDecoder().decode(chunk);
    let i: number;
    while ((i = buf.indexOf("\n")) >= 0) {
      yield buf.slice(0, i);
      buf = buf.slice(i + 1);
    }
  }
})();
const next = async () => (await lines.next()).value as string;
const ready = next();

/** What the host socket received since the last call (datagrams are queued by the time send returns). */
async function received(): Promise<string> {
  server.stdin.write("?\n");
  server.stdin.flush();
  return next();
}

afterAll(() => {
  server.kill();
  rmSync(hostDir, { recursive: true, force: true });
  removeTempDirs();
});

describe("host unix datagram sockets are out of reach of confined processes", () => {
  for (const policy of ["read-only", "workspace-write"] as const) {
    test(`${policy}: a datagram or raw socketpair is refused (stream and seqpacket pairs still work), so nothing reaches a host datagram socket, for every user`, async () => {
      expect(await ready).toBe("ready");
      const seen: Record<string, { stdout: string; host: string }> = {};
      for (const user of testUsers()) {
        const base = tempBase("airlock-dgram-");
        const home = ownedDir(user, base, "home");
        const ws = ownedDir(user, base, "ws");
        const r = await runProbe(user, { kind: "launch", policy, argv: ["python3", "-c", CLIENT, sockPath], cwd: ws }, probeEnv(home));
        seen[user.name] = { stdout: r.stdout, host: await received() };
      }
      for (const [name, s] of Object.entries(seen)) {
        expect({ name, ...s }).toEqual({ name, stdout: "dgram socketpair 1\nraw socketpair 1\nstream pair x\nseqpacket pair x\n", host: "none" });
      }
    }, 120_000);
  }
});
