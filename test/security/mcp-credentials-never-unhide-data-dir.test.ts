/**
 * @module test/security/mcp-credentials-never-unhide-data-dir
 * `mcp_servers.<name>.credentials` shows a server the credential stores it names (docs/security-model.md
 * §8), bound read-only over the hidden folders. A named path that holds airlock's data dir (`~/` when the
 * data dir is under HOME, the data dir itself, or a file in it) brought the approver and API tokens back
 * into view of the server. The data dir's tokens and database now stay masked whatever a server names.
 * A real MCP server started by the real McpManager (test/security/probe.ts), run as root and as nobody.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { testUsers } from "../as-user.ts";
import { ownedDir, probeEnv, removeTempDirs, runProbe, tempBase } from "./probe.ts";

afterAll(removeTempDirs);

const SCRIPT = 'cat "$DATA/approver-token" "$DATA/api-token" 2>/dev/null; ls "$HOME" >/dev/null && echo home-listed; echo end';

for (const user of testUsers()) {
  describe(`MCP server credentials as ${user.name}`, () => {
    for (const named of ["~/", "DATA", "DATA/approver-token"]) {
      test(`naming ${named} shows no token`, async () => {
        const base = tempBase("airlock-mcp-creds-dd-");
        const home = ownedDir(user, base, "home");
        const data = ownedDir(user, home, "airlock-data", { "approver-token": "APPROVER-SECRET\n", "api-token": "API-SECRET\n" });
        const ws = ownedDir(user, base, "ws");
        const credentials = [named.replace("DATA", data)];
        const r = await runProbe(user, { kind: "mcp", policy: "read-only", script: SCRIPT.replaceAll("$DATA", data), cwd: ws, dataDir: data, credentials }, probeEnv(home));
        const out = JSON.stringify(r.stdout);
        expect(out).toContain("end");
        expect(out).not.toContain("APPROVER-SECRET");
        expect(out).not.toContain("API-SECRET");
      }, 60_000);
    }
  });
}
