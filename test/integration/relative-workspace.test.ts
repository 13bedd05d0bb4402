/**
 * @module test/integration/relative-workspace
 * A workspace given as a relative path is made absolute once, at the edge, so everything derived
 * from it agrees (docs/spec.md §9): `airlock run --workspace ws` starts MCP servers in `<cwd>/ws`
 * (not `/ws`), and `--workspace .` roots the filesystem server at the workspace (not `/`), so a
 * script cannot read `/etc/hostname` through it. Real CLI (src/main.ts), the scripted provider and
 * the real server-filesystem MCP server under bubblewrap; run as root and as `nobody`.
 * Also: an API request body naming a relative workspace is refused (the client's cwd is unknown).
 */
import { afterEach, describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import path from "node:path";
import { stringify } from "yaml";
import { dataDirFor, sharedTempDir, testUsers, type TestUser } from "../as-user.ts";
import { startHarness, type Harness } from "../harness.ts";

const ROOT = path.resolve(import.meta.dir, "../..");
const MAIN = path.join(ROOT, "src/main.ts");
const FS_SERVER = path.join(ROOT, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");

const tryCall = (expr: string) => `await (async () => { try { return { ok: true, value: await ${expr} }; } catch (e) { return { ok: false, message: String(e && e.message || e) }; } })()`;

/** A data dir with a scripted model that asks the fs server for its roots, a workspace file and /etc/hostname. */
function setup(): { dir: string; data: string; ws: string } {
  const dir = sharedTempDir("airlock-relws-");
  const data = path.join(dir, "data");
  const ws = path.join(dir, "ws");
  mkdirSync(data, { mode: 0o777 });
  mkdirSync(ws, { mode: 0o777 });
  chmodSync(data, 0o777);
  chmodSync(ws, 0o777);
  writeFileSync(path.join(ws, "hello.txt"), "hello from the workspace\n");
  const code = [
    `const roots = ${tryCall("tools.fs__list_allowed_directories({})")};`,
    `const hello = ${tryCall('tools.fs__read_text_file({ path: "hello.txt" })')};`,
    `const host = ${tryCall('tools.fs__read_text_file({ path: "/etc/hostname" })')};`,
    "return { roots, hello, host };",
  ].join("\n");
  writeFileSync(path.join(data, "turns.yaml"), stringify({ turns: [{ tool_calls: [{ name: "code_execution__execute", arguments: { code } }] }, { text: "done" }] }));
  writeFileSync(
    path.join(data, "airlock.yaml"),
    stringify({ provider: { name: "scripted", script: "turns.yaml" }, mode: "smart", mcp_servers: { fs: { command: "node", args: [FS_SERVER, "."] } } }),
  );
  return { dir, data, ws };
}

/** Runs `airlock run go --workspace <workspace> --headless` in `cwd` as `user`; returns the script's value. */
async function runScript(user: TestUser, cwd: string, workspace: string, data: string): Promise<any> {
  const p = Bun.spawn([...user.prefix, process.execPath, MAIN, "run", "go", "--workspace", workspace, "--headless", "--output-format", "stream-json", "--data-dir", data], {
    cwd,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, AIRLOCK_HOME: "", HOME: data },
  });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  const events = stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l));
  const result = events.find((e) => e.type === "tool_result" && e.tool === "code_execution__execute");
  if (!result?.ok) throw new Error(`the script did not run (exit ${code}): ${JSON.stringify(result)}\n${stderr}`);
  return result.result.value;
}

const text = (r: any) => JSON.stringify(r);

for (const user of testUsers()) {
  describe(`as ${user.name}: airlock run with a relative --workspace`, () => {
    test("--workspace ws starts the MCP server in <cwd>/ws and reads the workspace file", async () => {
      const { dir, data, ws } = setup();
      dataDirFor(data, user);
      const v = await runScript(user, dir, "ws", data);
      expect(v.roots.ok).toBe(true);
      expect(text(v.roots.value)).toContain(realpathSync(ws));
      expect(v.hello).toEqual({ ok: true, value: { content: readFileSync(path.join(ws, "hello.txt"), "utf8") } });
      expect(v.host.ok).toBe(false);
    }, 120_000);

    test("--workspace . roots the filesystem server at the workspace, so /etc/hostname is refused, as with an absolute path", async () => {
      const { data, ws } = setup();
      dataDirFor(data, user);
      const rel = await runScript(user, ws, ".", data);
      const abs = await runScript(user, ws, ws, data);
      expect(rel.host.ok).toBe(false);
      expect(text(rel.roots.value)).not.toContain('"/"');
      expect({ roots: rel.roots, hello: rel.hello, host: rel.host.ok }).toEqual({ roots: abs.roots, hello: abs.hello, host: abs.host.ok });
    }, 120_000);
  });
}

describe("API: a session's workspace", () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });
  test("a relative workspace in a request body is refused with bad_request naming the field", async () => {
    h = await startHarness();
    const res = await h.api("/sessions", { method: "POST", json: { workspace: "." } });
    const body = (await res.json()) as any;
    expect({ status: res.status, error: body.error }).toEqual({ status: 400, error: "bad_request" });
    expect(body.message).toContain("workspace");
    expect(body.message).toContain("absolute");
  });
});
