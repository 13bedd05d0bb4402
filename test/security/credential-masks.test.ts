/**
 * @module test/security/credential-masks
 * The launcher's masks and the MCP launcher use the same credential list as the floor
 * (src/launcher/credentials.ts). Through a real headless `airlock run` (root and nobody): a confined
 * interpreter (no floor rule can read its code) sees every listed store hidden or empty; a confined
 * MCP server (server-filesystem) sees them hidden too, except the one path its
 * `mcp_servers.<name>.credentials` names — and only that one.
 */
import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { stringify } from "yaml";
import { dataDirFor, sharedTempDir, testUsers } from "../as-user.ts";

const MAIN = path.join(import.meta.dir, "../../src/main.ts");
const FS_SERVER = path.join(import.meta.dir, "../../node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
const PATH = "/usr/local/bin:/usr/bin:/bin";
const STORES = [
  ".kube/config",
  ".docker/config.json",
  ".config/gcloud/application_default_credentials.json",
  ".git-credentials",
  ".npmrc",
  ".pgpass",
  ".gnupg/private-keys-v1.d/ABC.key",
  ".config/gh/hosts.yml",
  ".cargo/credentials.toml",
  ".vault-token",
  ".password-store/bank.gpg",
  ".terraform.d/credentials.tfrc.json",
];
const needle = (f: string) => `needle-${f.replace(/[^a-z]/g, "")}-91c3`;

function box() {
  const base = sharedTempDir("airlock-creds-mask-");
  const home = path.join(base, "home");
  const data = path.join(base, "data");
  const ws = path.join(base, "ws");
  for (const d of [home, data, ws]) {
    mkdirSync(d);
    chmodSync(d, 0o777);
  }
  for (const f of STORES) {
    mkdirSync(path.dirname(path.join(home, f)), { recursive: true });
    writeFileSync(path.join(home, f), needle(f));
  }
  const py = `
import os
for f in ${JSON.stringify(STORES)}:
    try:
        print(f, open(os.path.join(${JSON.stringify(home)}, f)).read())
    except Exception as e:
        print(f, "unreadable", type(e).__name__)
`;
  const calls = [
    { name: "interpreter__python", arguments: { code: py } },
    ...STORES.map((f) => ({ name: "fs__read_text_file", arguments: { path: path.join(home, f) } })),
    { name: "kube__read_text_file", arguments: { path: path.join(home, ".kube/config") } },
    { name: "kube__read_text_file", arguments: { path: path.join(home, ".docker/config.json") } },
    { name: "kube__read_text_file", arguments: { path: path.join(home, ".git-credentials") } },
  ];
  const server = { command: "node", args: [FS_SERVER, home], sandbox: "read-only" };
  writeFileSync(
    path.join(data, "airlock.yaml"),
    stringify({
      provider: { name: "scripted", script: "turns.yaml" },
      mode: "autonomous",
      sandbox: "workspace-write",
      mcp_servers: { fs: server, kube: { ...server, credentials: ["~/.kube/config"] } },
    }),
  );
  writeFileSync(path.join(data, "turns.yaml"), stringify({ turns: [{ tool_calls: calls }, { text: "done" }] }));
  return { base, home, data, ws };
}

function toolMessages(data: string): string[] {
  const db = new Database(path.join(data, "airlock.db"), { readonly: true });
  try {
    return db.query<{ content: string }, []>("SELECT content FROM messages WHERE role = 'tool' ORDER BY rowid").all().map((r) => r.content);
  } finally {
    db.close();
  }
}

for (const user of testUsers()) {
  describe(`as ${user.name}`, () => {
    test("a confined interpreter and a confined MCP server see no listed credential; a server reads the one it names", async () => {
      const b = box();
      dataDirFor(b.data, user);
      const p = Bun.spawn([...user.prefix, process.execPath, MAIN, "run", "go", "--headless", "--output-format", "json", "--data-dir", b.data], {
        cwd: b.ws,
        stdin: "ignore",
        stdout: "pipe",
        stderr: "pipe",
        env: { PATH, HOME: b.home, AIRLOCK_HOME: "" },
      });
      const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
      expect({ code, stderr: code === 0 ? "" : stderr }).toEqual({ code: 0, stderr: "" });
      expect(JSON.parse(stdout).refused_calls).toEqual([]);
      const msgs = toolMessages(b.data);
      expect(msgs.length).toBe(1 + STORES.length + 3);
      // the interpreter ran, and read none of them
      expect(msgs[0]).toContain(".kube/config");
      for (const f of STORES) expect(msgs[0]).not.toContain(needle(f));
      // the plain server: none
      for (const [i, f] of STORES.entries()) expect(msgs[1 + i]).not.toContain(needle(f));
      // the server that names ~/.kube/config reads it, and only it
      const named = msgs.slice(1 + STORES.length);
      expect(named[0]).toContain(needle(".kube/config"));
      expect(named[1]).not.toContain(needle(".docker/config.json"));
      expect(named[2]).not.toContain(needle(".git-credentials"));
    }, 90_000);
  });
}

describe("mcp_servers.<name>.credentials is validated", () => {
  test("a relative path or one with .. is a config error", async () => {
    const { Config } = await import("../../src/config/schema.ts");
    const ok = Config.safeParse({ mcp_servers: { a: { command: "x", credentials: ["~/.kube/config", "/etc/x"] } } });
    expect(ok.success).toBe(true);
    for (const bad of [".kube/config", "~/../etc/shadow", "", 3]) {
      expect(Config.safeParse({ mcp_servers: { a: { command: "x", credentials: [bad] } } }).success).toBe(false);
    }
  });
});
