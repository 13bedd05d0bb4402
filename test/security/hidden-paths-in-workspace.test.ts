/**
 * @module test/security/hidden-paths-in-workspace.test
 * airlock's data dir (and a credential folder under HOME) hidden inside a writable workspace must stay
 * airlock's: the hidden folder itself is a mount point (EBUSY), but a folder ABOVE it could be renamed
 * away and a fresh one made in its place, so the host's next `airlock` start read a config (hooks,
 * mode, sandbox) and tokens the confined process wrote, and `gh` read its hosts file. Through the real
 * launcher and bubblewrap under workspace-write, as root and as nobody.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { chownSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { testUsers, type TestUser } from "../as-user.ts";
import { ownedDir, probeEnv, removeTempDirs, runProbe, tempBase } from "./probe.ts";

afterAll(removeTempDirs);

/** Makes `rel` (folders) under `root` with `files`, all owned by `user`. */
function plant(user: TestUser, root: string, rel: string, files: Record<string, string>): string {
  let p = root;
  for (const part of rel.split("/")) {
    p = join(p, part);
    mkdirSync(p, { recursive: true, mode: 0o700 });
    chownSync(p, user.uid, user.uid);
  }
  for (const [f, text] of Object.entries(files)) {
    writeFileSync(join(p, f), text, { mode: 0o600 });
    chownSync(join(p, f), user.uid, user.uid);
  }
  return p;
}

const SWAP = (outer: string, inner: string, file: string) =>
  `mv ${outer} ${outer}-old 2>/dev/null && echo moved || echo move-refused; mkdir -p ${inner} 2>/dev/null; echo planted > ${inner}/${file} 2>/dev/null; echo end`;

describe("folders above a hidden path inside the workspace cannot be swapped", () => {
  test("the data dir inside the workspace: a folder above it cannot be renamed away and replaced, for every user", async () => {
    const seen: Record<string, { out: string; config: string; token: string; top: string[] }> = {};
    for (const user of testUsers()) {
      const base = tempBase("airlock-hidden-ws-");
      const home = ownedDir(user, base, "home");
      const ws = ownedDir(user, base, "ws");
      const data = plant(user, ws, "state/airlock", { "airlock.yaml": "mode: smart\n", "approver-token": "APPROVER-SECRET\n" });
      const r = await runProbe(user, { kind: "launch", policy: "workspace-write", argv: ["sh", "-c", SWAP("state", "state/airlock", "airlock.yaml")], cwd: ws, dataDir: data }, probeEnv(home));
      seen[user.name] = { out: r.stdout, config: readFileSync(join(data, "airlock.yaml"), "utf8"), token: readFileSync(join(data, "approver-token"), "utf8"), top: readdirSync(ws).sort() };
    }
    for (const [name, s] of Object.entries(seen)) {
      expect({ name, ...s }).toEqual({ name, out: "move-refused\nend\n", config: "mode: smart\n", token: "APPROVER-SECRET\n", top: ["state"] });
    }
  }, 120_000);

  test("the data dir inside a workspace that lives under /tmp is hidden too (the workspace's bind re-exposed it), for every user", async () => {
    const seen: Record<string, string> = {};
    for (const user of testUsers()) {
      const base = tempBase("airlock-hidden-tmp-");
      const home = ownedDir(user, base, "home");
      const ws = ownedDir(user, base, "ws");
      const data = plant(user, ws, "state/airlock", { "approver-token": "APPROVER-SECRET\n", "airlock.db": "DB-CONTENT\n" });
      for (const policy of ["read-only", "workspace-write"] as const) {
        const r = await runProbe(user, { kind: "launch", policy, argv: ["sh", "-c", "cat state/airlock/approver-token state/airlock/airlock.db 2>/dev/null; ls -A state/airlock; echo end"], cwd: ws, dataDir: data }, probeEnv(home));
        seen[`${policy} as ${user.name}`] = r.stdout;
      }
    }
    expect(Object.entries(seen).filter(([, out]) => out !== "end\n")).toEqual([]);
  }, 120_000);

  test("HOME inside the workspace: a folder above a credential folder (~/.config above ~/.config/gh) cannot be renamed away and replaced, for every user", async () => {
    const seen: Record<string, { out: string; hosts: string; top: string[] }> = {};
    for (const user of testUsers()) {
      const base = tempBase("airlock-hidden-home-");
      const ws = ownedDir(user, base, "ws");
      const gh = plant(user, ws, ".config/gh", { "hosts.yml": "github.com:\n  oauth_token: REAL\n" });
      const r = await runProbe(user, { kind: "launch", policy: "workspace-write", argv: ["sh", "-c", SWAP(".config", ".config/gh", "hosts.yml")], cwd: ws }, probeEnv(ws));
      seen[user.name] = { out: r.stdout, hosts: readFileSync(join(gh, "hosts.yml"), "utf8"), top: readdirSync(ws).filter((n) => n !== ".cache").sort() };
    }
    for (const [name, s] of Object.entries(seen)) {
      expect({ name, ...s }).toEqual({ name, out: "move-refused\nend\n", hosts: "github.com:\n  oauth_token: REAL\n", top: [".config"] });
    }
  }, 120_000);
});

describe("an MCP server's named credentials never re-expose what stays hidden", () => {
  test("a server naming its whole HOME as a credential still sees the data dir below it and the other credential folders empty, for every user", async () => {
    const seen: Record<string, string> = {};
    for (const user of testUsers()) {
      const base = tempBase("airlock-mcp-home-");
      const home = ownedDir(user, base, "home");
      const data = plant(user, home, ".local/share/airlock", { "approver-token": "APPROVER-SECRET\n" });
      plant(user, home, ".ssh", { id_ed25519: "SSH-KEY\n" });
      plant(user, home, "notes", { "todo.txt": "visible\n" });
      const ws = ownedDir(user, base, "ws");
      const script = `cat ${home}/.local/share/airlock/approver-token ${home}/.ssh/id_ed25519 ${home}/notes/todo.txt 2>/dev/null; echo end`;
      const r = await runProbe(user, { kind: "mcp", policy: "read-only", script, cwd: ws, dataDir: data, credentials: [home] }, probeEnv(home));
      seen[user.name] = r.stdout;
    }
    for (const [name, out] of Object.entries(seen)) expect({ name, out }).toEqual({ name, out: "visible\nend\n" });
  }, 120_000);
});
