/**
 * @module test/integration/config-host-unusual
 * The client commands (`console`, `actions list`, `attach`) and `airlock serve` with unusual `server.host` values and
 * with the config's port held by another program:
 * - a wildcard `server.host` (0.0.0.0, ::) is dialled as the loopback address of its family (the server's Host check
 *   refuses a wildcard), and the serve banner's curl hint and console link name that address;
 * - a bracketed IPv6 `server.host` is config_invalid; a host that cannot be listened on is a named usage error;
 * - another program answering on the config's port: the refusal says the port is taken (not "start airlock serve");
 *   with no config file, the URL is said to come from the defaults; the config is named once;
 * - attach that loses its server to another program on the config's port says the proof failure once.
 * Real processes: `airlock serve` and the client commands from source.
 */
import { expect, test } from "bun:test";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { airlockClient, deadPort, hasIpv6Loopback, MAIN, serveScratch } from "../harness-serve.ts";

const scratch = serveScratch();

/** A data dir whose airlock.yaml sets `server.host` to `host` (as YAML text) and `server.port` to `port`. */
function hostDataDir(prefix: string, host: string, port: number): string {
  const d = scratch.dataDir(prefix, port);
  writeFileSync(join(d, "airlock.yaml"), `mode: smart\nprovider: { name: scripted, script: turns.yaml }\nserver: { host: ${host}, port: ${port} }\n`);
  return d;
}

for (const [host, dialled] of [
  ["0.0.0.0", "127.0.0.1"],
  ["::", "[::1]"],
] as const) {
  test.skipIf(host === "::" && !hasIpv6Loopback())(`config server.host ${host}, no serve.lock: the client commands dial ${dialled}, and the banner names it`, async () => {
    const port = await deadPort();
    const d = hostDataDir("airlock-wildhost-", `"${host}"`, port);
    const sp = await scratch.serve(d, ["--port", String(port)]);
    const token = readFileSync(join(d, "api-token"), "utf8").trim();
    // the banner's hints name an address a client can dial, the same one airlock console prints
    const t0 = Date.now();
    while (!sp.stderr().includes("airlock: console:") && Date.now() - t0 < 10_000) await Bun.sleep(10);
    expect(sp.stderr()).toContain(` http://${dialled}:${port}/sessions\n`);
    expect(sp.stderr()).toContain(`airlock: console: http://${dialled}:${port}/#t=`);
    rmSync(join(d, "serve.lock"));
    const list = await airlockClient(d, ["actions", "list", "--json"]);
    expect({ code: list.code, stderr: list.stderr }).toEqual({ code: 0, stderr: "" });
    const sched = await airlockClient(d, ["schedule", "list", "--json"]);
    expect({ code: sched.code, stderr: sched.stderr }).toEqual({ code: 0, stderr: "" });
    const link = await airlockClient(d, ["console"]);
    expect({ code: link.code, stderr: link.stderr, stdout: link.stdout }).toEqual({ code: 0, stderr: "", stdout: `http://${dialled}:${port}/#t=${token}\n` });
  }, 60_000);
}

test('config server.host "[::1]" is config_invalid saying to leave out the brackets; serve --host [::1] is a usage error', async () => {
  const port = await deadPort();
  const d = hostDataDir("airlock-brackethost-", '"[::1]"', port);
  for (const argv of [["actions", "list"], ["console"], ["serve", "--port", "0"]]) {
    const r = await airlockClient(d, argv);
    expect({ argv, code: r.code }).toEqual({ argv, code: 2 });
    expect(r.stderr).toContain("config_invalid");
    expect(r.stderr).toContain("without brackets");
  }
  const ok = scratch.dataDir("airlock-brackethost-flag-", port);
  const flag = await airlockClient(ok, ["serve", "--host", "[::1]", "--port", "0"]);
  expect({ code: flag.code }).toEqual({ code: 2 });
  expect(flag.stderr).toContain("without brackets");
}, 60_000);

test('config server.host "localhost." (cannot be listened on): serve exits 2 with a named error, not internal', async () => {
  const port = await deadPort();
  const d = hostDataDir("airlock-dothost-", '"localhost."', port);
  const r = await airlockClient(d, ["serve", "--port", "0"]);
  expect({ code: r.code, internal: r.stderr.includes("internal") }).toEqual({ code: 2, internal: false });
  expect(r.stderr).toContain('cannot listen on "localhost."');
  expect(r.stderr).toContain("set server.host");
}, 60_000);

test("another program answers on the config's port: the refusal says the port is taken, not to start airlock serve; the config is named once", async () => {
  const port = await deadPort();
  const d = scratch.dataDir("airlock-takenport-", port);
  const seen: string[] = [];
  const other = Bun.serve({
    hostname: "127.0.0.1",
    port,
    fetch(req) {
      seen.push(`${new URL(req.url).pathname} ${req.headers.get("authorization") ?? "-"}`);
      return new Response("<html>directory listing</html>", { status: 404, headers: { "content-type": "text/html" } });
    },
  });
  try {
    for (const argv of [["actions", "list"], ["schedule", "list"], ["console"]]) {
      const r = await airlockClient(d, argv);
      expect({ argv, code: r.code }).toEqual({ argv, code: 1 });
      expect(r.stderr).toContain("could not prove it is the airlock serve of the data dir");
      expect(r.stderr).toContain(`Port ${port} is taken by another program`);
      expect(r.stderr).toContain("set server.port");
      expect(r.stderr).toContain("--url");
      expect(r.stderr).not.toContain("To start one");
      expect(r.stderr.split("server.host/server.port").length - 1).toBe(1);
      expect(r.stderr).toContain(`server.host/server.port of the config ${join(d, "airlock.yaml")}`);
    }
    expect(seen.every((s) => s.startsWith("/server-proof -"))).toBe(true);
  } finally {
    await other.stop(true);
  }
  // nothing answers: starting airlock serve is still the advice
  const none = await airlockClient(d, ["actions", "list"]);
  expect(none.code).toBe(1);
  expect(none.stderr).toContain("To start one, run in another terminal: airlock serve");
  expect(none.stderr).not.toContain("taken by another program");
}, 60_000);

test("no airlock.yaml: the URL is said to come from the defaults", async () => {
  const d = scratch.dir("airlock-noconfig-");
  const r = await airlockClient(d, ["actions", "list"]);
  if (r.code === 0) return; // this data dir's defaults reached a server proving it holds its fresh token: impossible
  expect(r.stderr).toContain(`the default server.host/server.port (no config file at ${join(d, "airlock.yaml")})`);
  expect(r.stderr).not.toContain("of the config");
  expect(r.stderr.split("server.host/server.port").length - 1).toBe(1);
}, 60_000);

test("attach on the config's address whose port another program takes: the proof failure is said once, and attach keeps trying", async () => {
  const port = await deadPort();
  const d = scratch.dataDir("airlock-attachtaken-", port);
  const sp = await scratch.serve(d, ["--port", String(port)]);
  rmSync(join(d, "serve.lock"));
  const token = readFileSync(join(d, "api-token"), "utf8").trim();
  const h = { authorization: `Bearer ${token}`, "content-type": "application/json" };
  const s = (await (await fetch(`${sp.url}/sessions`, { method: "POST", headers: h, body: JSON.stringify({ workspace: d }) })).json()) as { id: string };
  const attach = scratch.track(
    Bun.spawn([process.execPath, MAIN, "attach", s.id, "--plain", "--data-dir", d], {
      cwd: d,
      stdin: "pipe",
      stdout: "pipe",
      stderr: "pipe",
      env: { ...process.env, AIRLOCK_HOME: "", AIRLOCK_URL: "", NO_COLOR: "1" },
    }),
  );
  let said = "";
  void (async () => {
    for await (const c of attach.stdout.pipeThrough(new TextDecoderStream())) said += c;
  })();
  void (async () => {
    for await (const c of attach.stderr.pipeThrough(new TextDecoderStream())) said += c;
  })();
  const t0 = Date.now();
  while (!said.includes("attached") && Date.now() - t0 < 20_000) await Bun.sleep(20);
  expect(said).toContain("attached");
  sp.proc.kill("SIGTERM");
  expect(await sp.proc.exited).toBe(0);
  const seen: string[] = [];
  const other = Bun.serve({
    hostname: "127.0.0.1",
    port,
    fetch(req) {
      seen.push(`${new URL(req.url).pathname} ${req.headers.get("authorization") ?? "-"}`);
      return new Response("not found", { status: 404 });
    },
  });
  try {
    // reconnects at 0.25, 0.5, 1, 2, 4 s: several proofs refused in this time
    const t1 = Date.now();
    while (seen.length < 3 && Date.now() - t1 < 15_000) await Bun.sleep(50);
    expect(seen.length).toBeGreaterThanOrEqual(3);
    attach.kill("SIGTERM");
    await attach.exited;
  } finally {
    await other.stop(true);
  }
  expect(seen.every((x) => x === "/server-proof -")).toBe(true);
  const refusals = said.split(`what answers at http://127.0.0.1:${port} could not prove it is the airlock serve of the data dir`).length - 1;
  expect({ refusals, said }).toEqual({ refusals: 1, said });
  expect(said).toContain("GET /server-proof got HTTP 404");
}, 60_000);

test("attach that found its server in serve.lock falls back to the config's address when the server comes back there without a lock", async () => {
  const port = await deadPort();
  const d = scratch.dataDir("airlock-attachfallback-", port);
  const first = await scratch.serve(d); // --port 0: attach finds it through serve.lock only
  const token = readFileSync(join(d, "api-token"), "utf8").trim();
  const h = { authorization: `Bearer ${token}`, "content-type": "application/json" };
  const s = (await (await fetch(`${first.url}/sessions`, { method: "POST", headers: h, body: JSON.stringify({ workspace: d }) })).json()) as { id: string };
  const attach = scratch.track(
    Bun.spawn([process.execPath, MAIN, "attach", s.id, "--plain", "--data-dir", d], {
      cwd: d,
      stdin: "pipe",
      stdout: "pipe",
      stderr: "pipe",
      env: { ...process.env, AIRLOCK_HOME: "", AIRLOCK_URL: "", NO_COLOR: "1" },
    }),
  );
  let said = "";
  void (async () => {
    for await (const c of attach.stdout.pipeThrough(new TextDecoderStream())) said += c;
  })();
  void (async () => {
    for await (const c of attach.stderr.pipeThrough(new TextDecoderStream())) said += c;
  })();
  const t0 = Date.now();
  while (!said.includes("attached") && Date.now() - t0 < 20_000) await Bun.sleep(20);
  expect(said).toContain("attached");
  first.proc.kill("SIGTERM");
  expect(await first.proc.exited).toBe(0);
  while (!said.includes("dropped; reconnecting") && Date.now() - t0 < 20_000) await Bun.sleep(20);
  // back on the config's port, its lock gone (as a lock-less store has none)
  await scratch.serve(d, ["--port", String(port)]);
  rmSync(join(d, "serve.lock"));
  const t1 = Date.now();
  while (!said.includes(`reconnected to http://127.0.0.1:${port}`) && Date.now() - t1 < 20_000) await Bun.sleep(50);
  attach.kill("SIGTERM");
  await attach.exited;
  expect(said).toContain(`reconnected to http://127.0.0.1:${port}`);
}, 60_000);
