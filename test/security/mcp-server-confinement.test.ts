/**
 * @module test/security/mcp-server-confinement.test
 * MCP servers are confined processes too (src/tool/mcp/server.ts uses the launcher's `bwrapArgs`):
 * under `read-only` and `workspace-write` a server holds no capabilities, cannot mount, cannot reach a
 * host unix socket and cannot read airlock's tokens, whoever airlock runs as. A real MCP server
 * (fixtures/shell-mcp-server.js) started by the real McpManager; run as root and as nobody.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import { testUsers } from "../as-user.ts";
import { ownedDir, probeEnv, removeTempDirs, runProbe, tempBase } from "./probe.ts";

const sockDir = mkdtempSync("/var/tmp/airlock-mcp-sock-");
let server: { stop(): void } | undefined;
let connections = 0;

beforeAll(() => {
  chmodSync(sockDir, 0o755);
  server = Bun.listen({
    unix: join(sockDir, "host.sock"),
    socket: {
      open() {
        connections++;
      },
      data(s) {
        s.write("pong");
      },
    },
  });
  chmodSync(join(sockDir, "host.sock"), 0o666);
});
afterAll(() => {
  server?.stop();
  rmSync(sockDir, { recursive: true, force: true });
});

const SCRIPT = [
  "grep CapEff /proc/self/status",
  "mount -o remount,bind,rw / 2>/dev/null && echo remount=ok || echo remount=refused",
  `python3 -c "import socket; s=socket.socket(socket.AF_UNIX); s.connect('${join(sockDir, "host.sock")}'); s.sendall(b'x'); print('socket', s.recv(10).decode())" 2>/dev/null || echo socket=refused`,
  'cat "$DATA/approver-token" "$DATA/api-token" 2>/dev/null; echo end',
].join("; ");

afterAll(removeTempDirs);

describe("MCP servers are confined like every other host process", () => {
  for (const policy of ["read-only", "workspace-write"] as const) {
    test(`${policy}: a server holds no capabilities, cannot mount, reaches no host unix socket and reads no token, for every user`, async () => {
      const before = connections;
      const seen: Record<string, string> = {};
      for (const user of testUsers()) {
        const base = tempBase("airlock-mcpconf-");
        const home = ownedDir(user, base, "home");
        const data = ownedDir(user, base, "data", { "approver-token": "APPROVER-SECRET\n", "api-token": "API-SECRET\n" });
        const ws = ownedDir(user, base, "ws");
        const r = await runProbe(user, { kind: "mcp", policy, script: SCRIPT.replaceAll("$DATA", data), cwd: ws, dataDir: data }, probeEnv(home));
        seen[user.name] = r.stdout;
      }
      for (const [name, out] of Object.entries(seen)) {
        expect({ name, out }).toEqual({ name, out: "CapEff:\t0000000000000000\nremount=refused\nsocket=refused\nend\n" });
      }
      expect(connections).toBe(before);
    }, 120_000);
  }
});
