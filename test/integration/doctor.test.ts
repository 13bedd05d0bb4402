/**
 * `airlock doctor` and `airlock mcp check NAME` as a user meets them: `bun src/main.ts` as real
 * subprocesses, real bubblewrap, real MCP servers, real HTTP on loopback for the provider. Each miss is
 * one line with its fix; exit 0 when every check holds (warnings allowed), 1 otherwise; `--json` is one
 * object `{ok, checks}`. An `npx` server that cannot write npm's cache in the sandbox is named as the
 * cause at once, never waited out.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { stringify } from "yaml";
import { namespaceCheck, type DoctorReport } from "../../src/cli/doctor.ts";
import { sharedTempDir, testUsers } from "../as-user.ts";
import { compiledBinary } from "../harness-binary.ts";

const ROOT = join(import.meta.dir, "..", "..");
const MAIN = join(ROOT, "src", "main.ts");
const FS_SERVER = join(ROOT, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
// outside /tmp: confined processes get a private /tmp, and the fake npx must be visible to them
const base = realpathSync(mkdtempSync(join("/var/tmp", "airlock-doctor-")));
afterAll(() => rmSync(base, { recursive: true, force: true }));

let n = 0;
/** A fresh data dir (mode 0700) with `airlock.yaml` = `config` and the scripted turns it names. */
function dataDir(config: Record<string, unknown> | string): string {
  const d = join(base, `d${n++}`);
  mkdirSync(d, { mode: 0o700 });
  chmodSync(d, 0o700);
  writeFileSync(join(d, "turns.yaml"), "turns:\n  - text: hi\n");
  writeFileSync(join(d, "airlock.yaml"), typeof config === "string" ? config : stringify(config));
  return d;
}

async function airlock(args: string[], data: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const p = Bun.spawn([process.execPath, MAIN, ...args, "--data-dir", data], { cwd: base, stdin: "ignore", stdout: "pipe", stderr: "pipe", env: { ...process.env, AIRLOCK_HOME: "" } });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, stdout, stderr };
}

async function report(data: string, extra: string[] = []): Promise<{ code: number; r: DoctorReport; stderr: string }> {
  const got = await airlock(["doctor", "--json", ...extra], data);
  return { code: got.code, r: JSON.parse(got.stdout) as DoctorReport, stderr: got.stderr };
}

function check(r: DoctorReport, name: string) {
  const c = r.checks.find((x) => x.name === name);
  if (!c) throw new Error(`no check ${name} in ${JSON.stringify(r.checks.map((x) => x.name))}`);
  return c;
}

async function freePort(): Promise<number> {
  const s = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("") });
  const port = s.port!;
  await s.stop(true);
  return port;
}

const scripted = { provider: { name: "scripted", script: "turns.yaml" } };

describe("airlock doctor", () => {
  test("a sound setup: every check holds, exit 0, one object {ok, checks} with each check named; an MCP server is started and its tools listed", async () => {
    const port = await freePort();
    const d = dataDir({ ...scripted, server: { port }, mcp_servers: { fs: { command: process.execPath, args: [FS_SERVER, "."], sandbox: "read-only" } } });
    writeFileSync(join(d, "api-token"), "a".repeat(64), { mode: 0o600 });
    writeFileSync(join(d, "approver-token"), "b".repeat(64), { mode: 0o600 });
    const { code, r } = await report(d);
    expect(r.checks.filter((c) => c.status === "fail")).toEqual([]);
    expect(code).toBe(0);
    expect(r.ok).toBe(true);
    expect(r.checks.map((c) => c.name)).toEqual(["bubblewrap", "user_namespaces", "root", "python3", "data_dir", "tokens", "config", "provider", "server_port", "storage", "mcp:fs"]);
    expect(check(r, "bubblewrap").status).toBe("ok");
    expect(check(r, "mcp:fs").message).toContain("read_text_file");
    for (const c of r.checks) expect(Object.keys(c).every((k) => ["name", "status", "message", "fix"].includes(k))).toBe(true);
    // the text form: one line per check, fix lines under misses, exit 0
    const text = await airlock(["doctor"], d);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^ok {4}bubblewrap: /m);
    expect(text.stdout).toMatch(/^ok {4}mcp:fs: .* started under read-only and listed \d+ tools/m);
  }, 120_000);

  test("an invalid config: every config_invalid line is a failed check with its line and column, exit 1", async () => {
    const d = dataDir("mode: smrt\nlimits:\n  shell_timeout_s: ten\n");
    const { code, r } = await report(d);
    expect(code).toBe(1);
    expect(r.ok).toBe(false);
    const bad = r.checks.filter((c) => c.name === "config" && c.status === "fail").map((c) => c.message);
    expect(bad.some((m) => m.includes("mode") && m.includes("line 1"))).toBe(true);
    expect(bad.some((m) => m.includes("limits.shell_timeout_s") && m.includes("line 3"))).toBe(true);
  }, 60_000);

  test("config warnings (a key the provider ignores, a missing hook script) are warnings: exit stays 0", async () => {
    const port = await freePort();
    const d = dataDir({ ...scripted, provider: { ...scripted.provider, thinking_budget_tokens: 2048 }, server: { port }, hooks: { Stop: [{ hooks: [{ type: "command", command: '"$AIRLOCK_CONFIG_DIR/hooks/nope.sh"' }] }] } });
    const { code, r } = await report(d);
    const warns = r.checks.filter((c) => c.name === "config" && c.status === "warn").map((c) => c.message);
    expect(warns).toHaveLength(2);
    expect(warns[0]).toContain("provider.thinking_budget_tokens (line");
    expect(warns[1]).toContain(`${join(d, "hooks", "nope.sh")} does not exist`);
    expect(code).toBe(0);
  }, 60_000);

  test("the provider is reached with a GET of {base_url}/models (its key sent when set); nothing listening on Ollama's port names Ollama; a refused key fails", async () => {
    const seen: { path: string; auth: string | null; method: string }[] = [];
    const model = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch(req) {
        seen.push({ path: new URL(req.url).pathname, auth: req.headers.get("authorization"), method: req.method });
        return req.headers.get("authorization") === "Bearer bad" ? new Response("no", { status: 401 }) : Response.json({ data: [{ id: "m" }] });
      },
    });
    try {
      const port = await freePort();
      const d = dataDir({ provider: { name: "openai", base_url: `http://127.0.0.1:${model.port}/v1`, model: "m", api_key_env: "DOCTOR_TEST_KEY" }, server: { port } });
      const ok = await report(d);
      expect(check(ok.r, "provider").status).toBe("ok");
      expect(seen).toEqual([{ path: "/v1/models", auth: null, method: "GET" }]);
      const p = Bun.spawn([process.execPath, MAIN, "doctor", "--json", "--data-dir", d], { cwd: base, stdout: "pipe", stderr: "pipe", env: { ...process.env, DOCTOR_TEST_KEY: "bad" } });
      const refused = JSON.parse(await new Response(p.stdout).text()) as DoctorReport;
      expect(await p.exited).toBe(1);
      expect(check(refused, "provider")).toMatchObject({ status: "fail", message: expect.stringContaining("refused the key in $DOCTOR_TEST_KEY") });
      expect(seen[1]).toEqual({ path: "/v1/models", auth: "Bearer bad", method: "GET" });
    } finally {
      await model.stop(true);
    }
    // Ollama's port with nothing listening (or something else that refuses): named, with how to start it
    const probe = createServer();
    const ollamaFree = await new Promise<boolean>((res) => {
      probe.once("error", () => res(false));
      probe.listen(11434, "127.0.0.1", () => probe.close(() => res(true)));
    });
    if (ollamaFree) {
      const d = dataDir({ provider: { name: "openai", base_url: "http://127.0.0.1:11434/v1", model: "llama3.1" }, server: { port: await freePort() } });
      const { code, r } = await report(d);
      expect(code).toBe(1);
      expect(check(r, "provider")).toMatchObject({ status: "fail", message: expect.stringContaining("Ollama's port"), fix: expect.stringContaining("ollama serve") });
    }
  }, 60_000);

  test("server.port held by another program fails naming the fix; a loose data dir warns; a token readable by others fails", async () => {
    const other = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("") });
    try {
      const d = dataDir({ ...scripted, server: { port: other.port } });
      chmodSync(d, 0o755);
      writeFileSync(join(d, "api-token"), "a".repeat(64), { mode: 0o644 });
      chmodSync(join(d, "api-token"), 0o644);
      writeFileSync(join(d, "approver-token"), "b".repeat(64), { mode: 0o600 });
      const { code, r } = await report(d);
      expect(code).toBe(1);
      expect(check(r, "server_port")).toMatchObject({ status: "fail", message: expect.stringContaining(`127.0.0.1:${other.port} is in use`), fix: expect.stringContaining("server.port") });
      expect(check(r, "data_dir")).toMatchObject({ status: "warn", message: expect.stringContaining("mode 0755"), fix: `chmod 700 ${d}` });
      expect(check(r, "tokens")).toMatchObject({ status: "fail", message: expect.stringContaining("api-token (mode 0644)") });
    } finally {
      await other.stop(true);
    }
  }, 60_000);
});

describe("airlock mcp check NAME", () => {
  test("an npx server that cannot write npm's cache in the sandbox is named as the cause at once, not after its start-up timeout", async () => {
    // a stand-in for npx: prints npm's EROFS lines on ~/.npm, then hangs as npx does while it retries
    const bin = join(base, "bin");
    mkdirSync(bin, { recursive: true });
    const npx = join(bin, "npx");
    writeFileSync(npx, '#!/bin/sh\necho "npm error code EROFS" >&2\necho "npm error path $HOME/.npm/_cacache/tmp/1" >&2\nexec sleep 100000\n', { mode: 0o755 });
    // a start-up timeout longer than the test: only naming the cause at once lets it finish
    const d = dataDir({ ...scripted, mcp_servers: { fs: { command: npx, args: ["-y", "@modelcontextprotocol/server-filesystem", "."], sandbox: "read-only", startup_timeout_s: 3600 } } });
    const got = await airlock(["mcp", "check", "fs", "--json", "--timeout", "600"], d);
    expect(got.code).toBe(1);
    const r = JSON.parse(got.stdout) as DoctorReport;
    expect(r.ok).toBe(false);
    expect(r.checks).toHaveLength(1);
    expect(r.checks[0]).toMatchObject({
      name: "mcp:fs",
      status: "fail",
      message: expect.stringContaining("npm could not write its cache (~/.npm) inside the sandbox (read-only)"),
      fix: expect.stringContaining("npm install -g @modelcontextprotocol/server-filesystem"),
    });
  }, 120_000);

  test("a working server lists its tools (exit 0); a server that exits says how; an unknown name is not_found (exit 1)", async () => {
    const d = dataDir({ ...scripted, mcp_servers: { fs: { command: process.execPath, args: [FS_SERVER, "."] }, broken: { command: "false" } } });
    const ok = await airlock(["mcp", "check", "fs"], d);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/^ok {4}mcp:fs: .*listed \d+ tools: .*read_text_file/m);
    const broken = await airlock(["mcp", "check", "broken", "--json"], d);
    expect(broken.code).toBe(1);
    expect(JSON.parse(broken.stdout).checks[0]).toMatchObject({ status: "fail", message: expect.stringContaining("exited with code 1") });
    const unknown = await airlock(["mcp", "check", "nope"], d);
    expect(unknown.code).toBe(1);
    expect(unknown.stdout).toBe("");
    expect(unknown.stderr).toContain('airlock: not_found: no MCP server "nope"');
    expect(unknown.stderr).toContain("configured: fs, broken");
  }, 120_000);
});

describe("as root and as an unprivileged user (the compiled binary)", () => {
  for (const user of testUsers()) {
    test(`${user.name}: bubblewrap really sandboxes; a data dir owned by root is this user's only when it is root`, async () => {
      const bin = await compiledBinary();
      const dir = sharedTempDir("airlock-doctor-user-");
      const data = join(dir, "data");
      mkdirSync(data, { mode: 0o700 }); // created by the test process: root's when the tests run as root
      const config = join(dir, "airlock.yaml");
      writeFileSync(config, stringify({ server: { port: await freePort() }, provider: { name: "scripted", script: "turns.yaml" } }), { mode: 0o644 });
      writeFileSync(join(dir, "turns.yaml"), "turns:\n  - text: hi\n", { mode: 0o644 });
      const p = Bun.spawn([...user.prefix, bin, "doctor", "--json", "--data-dir", data, "--config", config], { cwd: dir, stdout: "pipe", stderr: "pipe", env: { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: dir } });
      const [out, code] = await Promise.all([new Response(p.stdout).text(), p.exited]);
      const r = JSON.parse(out) as DoctorReport;
      expect(check(r, "bubblewrap").status).toBe("ok");
      const asRoot = user.name === "root";
      expect(check(r, "user_namespaces").message.startsWith("running as root")).toBe(asRoot);
      expect(check(r, "root").status).toBe(asRoot ? "warn" : "ok");
      if (user.name === "nobody") {
        expect(check(r, "data_dir")).toMatchObject({ status: "fail", message: expect.stringContaining("belongs to uid 0, not to the user airlock runs as (uid 65534)") });
        expect(code).toBe(1);
      } else {
        expect(check(r, "data_dir").status).toBe("ok");
      }
    }, 300_000);
  }
});

describe("user namespaces", () => {
  test("each sysctl that stops bubblewrap is named with its fix; AppArmor's restriction (Ubuntu 24.04+) with a profile or the sysctl", () => {
    expect(namespaceCheck({ unprivilegedUsernsClone: "0" }, false)).toMatchObject({ status: "fail", fix: expect.stringContaining("kernel.unprivileged_userns_clone=1") });
    expect(namespaceCheck({ maxUserNamespaces: "0" }, false)).toMatchObject({ status: "fail", fix: expect.stringContaining("user.max_user_namespaces") });
    const aa = namespaceCheck({ unprivilegedUsernsClone: "1", maxUserNamespaces: "63000", apparmorRestrict: "1" }, false);
    expect(aa.status).toBe("warn");
    expect(aa.message).toContain("kernel.apparmor_restrict_unprivileged_userns = 1");
    expect(aa.fix).toContain("/etc/apparmor.d/bwrap");
    expect(aa.fix).toContain("kernel.apparmor_restrict_unprivileged_userns=0");
    expect(namespaceCheck({ apparmorRestrict: "1" }, true).status).toBe("ok"); // root needs none of them
    expect(namespaceCheck({ maxUserNamespaces: "63000", apparmorRestrict: "0" }, false).status).toBe("ok");
  });
});
