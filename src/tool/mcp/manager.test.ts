/**
 * @module tool/mcp/manager.test
 * McpManager with real public MCP servers (server-filesystem, server-everything) under real
 * bubblewrap: listing, calling, confinement, environment, crash/hang/restart, shutdown.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Config } from "../../config/schema.ts";
import { AirlockError } from "../../errors.ts";
import { ENV_ALLOW } from "../../launcher/env.ts";
import type { ToolContext, ToolDef } from "../tool.ts";
import { toolSpec } from "../tool.ts";
import { McpManager } from "./index.ts";

const ROOT = path.resolve(import.meta.dir, "../../..");
const FS_SERVER = path.join(ROOT, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
const EVERYTHING = path.join(ROOT, "node_modules/@modelcontextprotocol/server-everything/dist/index.js");

let ws: string;
let outside: string;
const managers: McpManager[] = [];

beforeAll(() => {
  ws = mkdtempSync(path.join(os.tmpdir(), "airlock-mcp-ws-"));
  // Outside the workspace and NOT under /tmp (bubblewrap gives a private /tmp): visible, read-only inside.
  outside = mkdtempSync("/var/tmp/airlock-mcp-out-");
  writeFileSync(path.join(ws, "hello.txt"), "hello from the workspace\n");
  writeFileSync(path.join(ws, "notes.md"), "# notes\n");
});
afterEach(async () => {
  await Promise.all(managers.splice(0).map((m) => m.close()));
});
afterAll(() => {
  rmSync(ws, { recursive: true, force: true });
  rmSync(outside, { recursive: true, force: true });
});

function manager(servers: Record<string, unknown>, extra: Record<string, unknown> = {}, opts: { bwrapPath?: string | null } = {}) {
  const lines: string[] = [];
  const config = Config.parse({ mcp_servers: servers, ...extra });
  const m = new McpManager({
    config,
    defaultWorkspace: ws,
    log: (l) => lines.push(l),
    backoff: { delaysMs: [0, 50], maxFailures: 3, windowMs: 60_000 },
    ...opts,
  });
  managers.push(m);
  return { m, lines };
}

function ctx(signal: AbortSignal = new AbortController().signal): ToolContext {
  return { signal } as unknown as ToolContext;
}

async function tools(m: McpManager): Promise<Map<string, ToolDef>> {
  const out = new Map<string, ToolDef>();
  for (const s of m.sources()) for (const d of await s.list()) out.set(d.name, d);
  return out;
}

async function failure(p: Promise<unknown>): Promise<AirlockError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof AirlockError) return e;
    throw e;
  }
  throw new Error("expected the call to fail");
}

/** Every process whose parent chain leads to `pid` (inclusive), from /proc. */
function tree(pid: number): number[] {
  const parent = new Map<number, number>();
  for (const name of readdirSync("/proc")) {
    const p = Number(name);
    if (!Number.isInteger(p)) continue;
    try {
      const stat = readFileSync(`/proc/${p}/stat`, "utf8");
      parent.set(p, Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      // exited
    }
  }
  const out = new Set([pid]);
  let grew = true;
  while (grew) {
    grew = false;
    for (const [p, pp] of parent) if (!out.has(p) && out.has(pp)) (out.add(p), (grew = true));
  }
  return [...out].filter((p) => parent.has(p));
}

/** True while `pid` exists and is neither a zombie nor dead. */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return !["Z", "X"].includes(stat.slice(stat.lastIndexOf(")") + 2)[0]!);
  } catch {
    return false;
  }
}

describe("McpManager with server-filesystem", () => {
  test("tools are listed as fs__* with the server's JSON Schema, readOnly from readOnlyHint, and the Claude alias", async () => {
    const { m } = manager({ fs: { command: "node", args: [FS_SERVER, ws], sandbox: "read-only" } });
    expect(m.status()[0]!.running).toBe(false); // lazy: nothing started yet
    const t = await tools(m);
    expect(m.status()[0]!.running).toBe(true);
    const read = t.get("fs__read_text_file")!;
    expect(read.readOnly).toBe(true);
    expect(t.get("fs__write_file")!.readOnly).toBe(false);
    expect(read.claude!.name).toBe("mcp__fs__read_text_file");
    expect(read.claude!.input({ path: "/x" }, { workspace: ws })).toEqual({ path: "/x" });
    const spec = toolSpec(read);
    expect(spec.name).toBe("fs__read_text_file");
    expect(spec.parameters).toMatchObject({ type: "object", properties: { path: { type: "string" } }, required: ["path"] });
    expect(spec.parameters.$schema).toBeUndefined();
    // The zod schema accepts any object: the server validates.
    expect(read.schema.safeParse({ anything: 1 }).success).toBe(true);
    expect(read.schema.safeParse("text").success).toBe(false);
  });

  test("lists and reads files of the workspace through the confined server", async () => {
    const { m, lines } = manager({ fs: { command: "node", args: [FS_SERVER, ws], sandbox: "read-only" } });
    const t = await tools(m);
    const listing = (await t.get("fs__list_directory")!.execute({ path: ws }, ctx())) as { content: string };
    expect(listing.content.split("\n").sort()).toEqual(["[FILE] hello.txt", "[FILE] notes.md"]);
    expect(await t.get("fs__read_text_file")!.execute({ path: path.join(ws, "hello.txt") }, ctx())).toEqual({ content: "hello from the workspace\n" });
    // The server's stderr reached the log, prefixed with its name.
    expect(lines.some((l) => l.startsWith("[mcp:fs] ") && l.includes("Secure MCP Filesystem Server"))).toBe(true);
    // It really runs under bubblewrap.
    const pid = m.status()[0]!.pid!;
    expect(path.basename(readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")[0]!)).toBe("bwrap");
  });

  test("airlock's data dir is hidden from a confined server even when the server may read the folder", async () => {
    const dataDir = mkdtempSync("/var/tmp/airlock-mcp-data-");
    writeFileSync(path.join(dataDir, "approver-token"), "SECRET-TOKEN");
    try {
      const lines: string[] = [];
      const m = new McpManager({
        config: Config.parse({ mcp_servers: { fs: { command: "node", args: [FS_SERVER, ws, dataDir], sandbox: "read-only" } } }),
        defaultWorkspace: ws,
        log: (l) => lines.push(l),
        hiddenPaths: [dataDir],
      });
      managers.push(m);
      const t = await tools(m);
      const e = await failure(t.get("fs__read_text_file")!.execute({ path: path.join(dataDir, "approver-token") }, ctx()));
      expect(e.message).not.toContain("SECRET-TOKEN");
      expect(e.message).toContain("ENOENT");
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test("under read-only the write tool fails inside the sandbox although the server allows the path", async () => {
    const { m } = manager({ fs: { command: "node", args: [FS_SERVER, ws], sandbox: "read-only" } });
    const t = await tools(m);
    const target = path.join(ws, "written.txt");
    const e = await failure(t.get("fs__write_file")!.execute({ path: target, content: "x" }, ctx()));
    expect(e.code).toBe("mcp_tool_error");
    expect(e.message).toContain("fs__write_file failed");
    expect(e.message).toContain("EROFS");
    expect(existsSync(target)).toBe(false);
  });

  test("under workspace-write it writes in the workspace but not outside it; unconfined it writes both", async () => {
    const { m } = manager({
      ww: { command: "node", args: [FS_SERVER, ws, outside], sandbox: "workspace-write" },
      full: { command: "node", args: [FS_SERVER, ws, outside], sandbox: "danger-full-access" },
    });
    const t = await tools(m);
    await t.get("ww__write_file")!.execute({ path: path.join(ws, "in.txt"), content: "in" }, ctx());
    expect(readFileSync(path.join(ws, "in.txt"), "utf8")).toBe("in");
    const e = await failure(t.get("ww__write_file")!.execute({ path: path.join(outside, "out.txt"), content: "out" }, ctx()));
    expect(e.code).toBe("mcp_tool_error");
    expect(e.message).toContain("EROFS");
    expect(existsSync(path.join(outside, "out.txt"))).toBe(false);
    // The same server, same arguments, without confinement: the server itself allows it.
    await t.get("full__write_file")!.execute({ path: path.join(outside, "out.txt"), content: "out" }, ctx());
    expect(readFileSync(path.join(outside, "out.txt"), "utf8")).toBe("out");
    rmSync(path.join(ws, "in.txt"));
  });

  test("close() kills the server's whole process tree", async () => {
    const { m } = manager({ fs: { command: "node", args: [FS_SERVER, ws], sandbox: "read-only" } });
    await tools(m);
    const pids = tree(m.status()[0]!.pid!);
    expect(pids.length).toBeGreaterThanOrEqual(2); // bwrap and the node server inside it
    await m.close();
    for (const p of pids) expect(alive(p)).toBe(false);
    const e = await failure(m.server("fs")!.call("list_allowed_directories", {}));
    expect(e.code).toBe("mcp_server_unavailable");
  });
});

describe("McpManager with server-everything", () => {
  const ev = { command: "node", args: [EVERYTHING, "stdio"], sandbox: "read-only", timeout_s: 20 };

  test("structured arguments round-trip; structuredContent comes back as an object", async () => {
    const { m } = manager({ ev });
    const t = await tools(m);
    expect(await t.get("ev__get-sum")!.execute({ a: 2, b: 40 }, ctx())).toBe("The sum of 2 and 40 is 42.");
    expect(await t.get("ev__get-structured-content")!.execute({ location: "Chicago" }, ctx())).toEqual({
      temperature: 36,
      conditions: "Light rain / drizzle",
      humidity: 82,
    });
  });

  test("an isError result becomes an mcp_tool_error with the server's text", async () => {
    const { m } = manager({ ev });
    const t = await tools(m);
    const e = await failure(t.get("ev__get-sum")!.execute({ a: "two", b: 40 }, ctx()));
    expect(e.code).toBe("mcp_tool_error");
    expect(e.message).toContain("ev__get-sum failed");
    expect(e.message).toContain("expected number");
    expect(e.details).toEqual({ server: "ev", tool: "get-sum" });
  });

  test("the server's environment is the allow-list plus its own env entries; airlock's secrets never pass", async () => {
    process.env.AIRLOCK_MCP_TEST_TOKEN = "must-not-leak";
    process.env.AIRLOCK_MCP_TEST_PLAIN = "not-on-the-allow-list";
    try {
      const { m } = manager({ ev: { ...ev, env: { GREETING: "hi", SERVICE_API_KEY: "configured-for-this-server" } } });
      const t = await tools(m);
      const env = JSON.parse((await t.get("ev__get-env")!.execute({}, ctx())) as string) as Record<string, string>;
      for (const k of Object.keys(env)) {
        // PWD is set by bubblewrap's --chdir (the sandbox's own cwd), not passed from airlock.
        const allowed = (ENV_ALLOW as readonly string[]).includes(k) || /^LC_/.test(k) || ["GREETING", "SERVICE_API_KEY", "PWD"].includes(k);
        expect({ k, allowed }).toEqual({ k, allowed: true });
      }
      expect(env.GREETING).toBe("hi");
      expect(env.SERVICE_API_KEY).toBe("configured-for-this-server");
      expect(env.AIRLOCK_MCP_TEST_TOKEN).toBeUndefined();
    } finally {
      delete process.env.AIRLOCK_MCP_TEST_TOKEN;
      delete process.env.AIRLOCK_MCP_TEST_PLAIN;
    }
  });

  test("a server killed during a call: that call is mcp_server_unavailable, the next one restarts it and works", async () => {
    const { m, lines } = manager({ ev });
    const t = await tools(m);
    const server = m.server("ev")!;
    const firstPid = server.status().pid!;
    const pending = t.get("ev__trigger-long-running-operation")!.execute({ duration: 30, steps: 30 }, ctx());
    server.kill("SIGKILL");
    const e = await failure(pending);
    expect(e.code).toBe("mcp_server_unavailable");
    expect(e.message).toContain('MCP server "ev"');
    expect(e.message).toContain("restarted on the next call");
    expect(await t.get("ev__get-sum")!.execute({ a: 1, b: 1 }, ctx())).toBe("The sum of 1 and 1 is 2.");
    const st = server.status();
    expect(st.starts).toBe(2);
    expect(st.pid).not.toBe(firstPid);
    expect(st.recentFailures.length).toBe(1);
    expect(lines.some((l) => l.startsWith("[mcp:ev] server stopped: it was killed by SIGKILL"))).toBe(true);
  });

  test("a hung call is mcp_timeout; the server is recycled and the next call works", async () => {
    // A 1 s call timeout; start-up gets its own, so a loaded machine's slow restart is not the hung call.
    const { m } = manager({ ev: { ...ev, timeout_s: 1, startup_timeout_s: 120 } });
    const t = await tools(m);
    const server = m.server("ev")!;
    const pids = tree(server.status().pid!);
    const e = await failure(t.get("ev__trigger-long-running-operation")!.execute({ duration: 30, steps: 2 }, ctx()));
    expect(e.code).toBe("mcp_timeout");
    expect(e.message).toContain('MCP server "ev" did not answer trigger-long-running-operation within 1 s');
    expect(await t.get("ev__echo")!.execute({ message: "still here" }, ctx())).toBe("Echo: still here");
    for (const p of pids) expect(alive(p)).toBe(false);
    expect(server.status().starts).toBe(2);
  });

  test("startup_timeout_s: a server slower to start than timeout_s still starts; without it the start fails naming timeout_s", async () => {
    // The server answers nothing for 3 s, then runs as usual: longer than the 1 s call timeout.
    // The server's path is its own argument ($0), so a checkout under /tmp is bound into the sandbox.
    const slow = { ...ev, command: "sh", args: ["-c", 'sleep 3; exec node "$0" stdio', EVERYTHING], timeout_s: 1 };
    const ok = manager({ ev: { ...slow, startup_timeout_s: 120 } });
    const t = await tools(ok.m);
    expect(await t.get("ev__echo")!.execute({ message: "late but here" }, ctx())).toBe("Echo: late but here");
    await ok.m.close();
    const bad = manager({ ev: slow });
    await tools(bad.m);
    expect(bad.lines.join("\n")).toContain("did not finish starting within 1 s (mcp_servers.ev.timeout_s)");
    await bad.m.close();
  });

  test("a cancelled call is `cancelled` and leaves the server running", async () => {
    const { m } = manager({ ev });
    const t = await tools(m);
    const ac = new AbortController();
    const pending = t.get("ev__trigger-long-running-operation")!.execute({ duration: 30, steps: 30 }, ctx(ac.signal));
    ac.abort();
    expect((await failure(pending)).code).toBe("cancelled");
    expect(await t.get("ev__echo")!.execute({ message: "after cancel" }, ctx())).toBe("Echo: after cancel");
    expect(m.server("ev")!.status()).toMatchObject({ running: true, starts: 1, recentFailures: [] });
  });
});

describe("McpManager failures", () => {
  const bad = { command: "node", args: ["-e", "console.error('boom: missing setting'); process.exit(3)"], sandbox: "read-only" };

  test("a server that cannot start: mcp_server_unavailable naming it, its stderr logged, bounded restarts; others keep working", async () => {
    const { m, lines } = manager({ bad, ev: { command: "node", args: [EVERYTHING, "stdio"], sandbox: "read-only" } });
    const t = await tools(m); // listing does not throw: the bad server lists nothing
    expect([...t.keys()].some((n) => n.startsWith("bad__"))).toBe(false);
    expect(lines.some((l) => l === "[mcp:bad] boom: missing setting")).toBe(true);
    const server = m.server("bad")!;
    const first = await failure(server.call("anything", {}));
    expect(first.code).toBe("mcp_server_unavailable");
    expect(first.message).toContain('MCP server "bad" failed to start');
    expect(first.message).toContain("exited with code 3");
    expect(first.message).toContain("boom: missing setting");
    // Listing, then two calls: three failed starts reach this test's cap (3 a minute): refused without starting.
    expect((await failure(server.call("anything", {}))).message).toContain("exited with code 3");
    const refused = await failure(server.call("anything", {}));
    expect(refused.code).toBe("mcp_server_unavailable");
    expect(refused.message).toContain("not restarted for another");
    expect(server.status().starts).toBe(3);
    // The other server is unaffected.
    expect(await t.get("ev__echo")!.execute({ message: "ok" }, ctx())).toBe("Echo: ok");
  });

  test("a command that does not exist: mcp_server_unavailable saying so", async () => {
    const { m } = manager({ nope: { command: "airlock-no-such-mcp-server" } });
    const e = await failure(m.server("nope")!.call("x", {}));
    expect(e.code).toBe("mcp_server_unavailable");
    expect(e.message).toContain("command not found: airlock-no-such-mcp-server");
  });

  test("without bubblewrap a confined server is refused (sandbox_unavailable) unless allow_unenforced", async () => {
    const fs = { command: "node", args: [FS_SERVER, ws], sandbox: "read-only" };
    const refused = manager({ fs }, {}, { bwrapPath: null }).m;
    const e = await failure(refused.server("fs")!.call("list_allowed_directories", {}));
    expect(e.code).toBe("sandbox_unavailable");
    expect(e.message).toContain('MCP server "fs" was not started');
    const { m, lines } = manager({ fs }, { allow_unenforced: true }, { bwrapPath: null });
    const r = await m.server("fs")!.call("list_allowed_directories", {});
    expect(r.isError).toBeFalsy();
    expect(lines.some((l) => l.includes("WARNING: running UNCONFINED"))).toBe(true);
  });

  test("execution_backend: external refuses to start servers", async () => {
    const { m } = manager({ fs: { command: "node", args: [FS_SERVER, ws] } }, { execution_backend: "external" });
    expect((await failure(m.server("fs")!.call("list_allowed_directories", {}))).code).toBe("external_backend");
    expect(await tools(m)).toEqual(new Map());
  });
});
