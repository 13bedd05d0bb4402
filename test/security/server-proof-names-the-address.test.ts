/**
 * @module test/security/server-proof-names-the-address
 * FINDING (high): the server proof (server/server-proof.ts) covered the port, not the address. With the config's
 * `server.host: localhost` the server binds getaddrinfo's first address (`127.0.0.1` here) while the client's fetch of
 * `http://localhost:PORT` tries `::1` first. A process of airlock's own user (a hook, a `danger-full-access` tool: it
 * may write the data dir, never read the token) removed `serve.lock`, bound `[::1]:PORT` and relayed the nonce of
 * `GET /server-proof` to the real server on `127.0.0.1:PORT`: same port, so the proof matched, and `airlock actions
 * list` (console, schedule, attach) sent it the API token.
 * Fixed: the proof covers the address the server bound, and the client dials the config's host as one address
 * (resolved once, as the server's bind resolves it) for the proof and every request after it, and checks the proof
 * for that address: a relay gets a proof for the real server's address, not the one the client dialled.
 * Real processes: `airlock serve` from source, the relaying listener (Bun.serve, this user). Skipped where `::1`
 * cannot be bound.
 */
import { expect, test } from "bun:test";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { provenConfigTarget } from "../../src/cli/server-client.ts";
import { airlockClient, deadPort, hasIpv6Loopback, serveScratch } from "../harness-serve.ts";

const scratch = serveScratch();

test.skipIf(!hasIpv6Loopback())("config server.host localhost: a listener on the other loopback address that relays the proof to the real server gets no token", async () => {
  const port = await deadPort();
  const d = scratch.dataDir("airlock-proof-host-", port);
  writeFileSync(join(d, "airlock.yaml"), `mode: smart\nprovider: { name: scripted, script: turns.yaml }\nserver: { host: localhost, port: ${port} }\n`);
  await scratch.serve(d, ["--port", String(port)]);
  rmSync(join(d, "serve.lock"));
  const token = readFileSync(join(d, "api-token"), "utf8").trim();
  const approver = readFileSync(join(d, "approver-token"), "utf8").trim();
  const seen: string[] = [];
  // the relay binds whichever loopback address the server left free; the real server is on the other
  let relay: ReturnType<typeof Bun.serve> | undefined;
  for (const [other, real] of [["::1", `http://127.0.0.1:${port}`], ["127.0.0.1", `http://[::1]:${port}`]]) {
    try {
      relay = Bun.serve({
        hostname: other,
        port,
        async fetch(req) {
          const url = new URL(req.url);
          seen.push(`${url.pathname} ${req.headers.get("authorization") ?? "-"} ${req.headers.get("x-airlock-approver") ?? "-"}`);
          if (url.pathname === "/server-proof") return fetch(`${real}/server-proof${url.search}`);
          return Response.json({ actions: [], schedules: [], status: "ok" });
        },
      });
      break;
    } catch {}
  }
  if (relay === undefined) throw new Error("neither loopback address was free");
  try {
    for (const argv of [["actions", "list", "--json"], ["actions", "answer", "act_0000000000000000000000000", "--allow-once"], ["console"]]) {
      await airlockClient(d, argv);
    }
    expect(seen.filter((s) => !s.startsWith("/server-proof "))).toEqual([]);
    expect(JSON.stringify(seen)).not.toContain(token);
    expect(JSON.stringify(seen)).not.toContain(approver);
    // the real server is reached (the legit path keeps working)
    const ok = await airlockClient(d, ["actions", "list", "--json"]);
    expect({ code: ok.code, stderr: ok.stderr }).toEqual({ code: 0, stderr: "" });
  } finally {
    await relay!.stop(true);
  }
}, 120_000);

test("config 127.0.0.1: a listener there that relays the proof to the data dir's server on the same port of 127.0.0.2 gets no token", async () => {
  const port = await deadPort();
  const d = scratch.dataDir("airlock-proof-addr-", port);
  await scratch.serve(d, ["--host", "127.0.0.2", "--port", String(port)]);
  rmSync(join(d, "serve.lock"));
  const token = readFileSync(join(d, "api-token"), "utf8").trim();
  const approver = readFileSync(join(d, "approver-token"), "utf8").trim();
  const seen: string[] = [];
  const relay = Bun.serve({
    hostname: "127.0.0.1",
    port,
    async fetch(req) {
      const url = new URL(req.url);
      seen.push(`${url.pathname} ${req.headers.get("authorization") ?? "-"} ${req.headers.get("x-airlock-approver") ?? "-"}`);
      if (url.pathname === "/server-proof") return fetch(`http://127.0.0.2:${port}/server-proof${url.search}`);
      return Response.json({ actions: [], schedules: [], status: "ok" });
    },
  });
  try {
    for (const argv of [["actions", "list", "--json"], ["actions", "answer", "act_0000000000000000000000000", "--allow-once"], ["console"]]) {
      const r = await airlockClient(d, argv);
      expect({ argv, code: r.code }).toEqual({ argv, code: 1 });
      expect(r.stderr).toContain("could not prove it is the airlock serve of the data dir");
      expect(r.stdout).not.toContain(token);
    }
    expect(seen.filter((s) => !s.startsWith("/server-proof "))).toEqual([]);
    expect(JSON.stringify(seen)).not.toContain(token);
    expect(JSON.stringify(seen)).not.toContain(approver);
  } finally {
    await relay.stop(true);
  }
}, 120_000);

// (a wildcard server.host is left out: its Host header, 0.0.0.0, is refused 421 by the server's Host check, as before the proof)
for (const host of ["localhost", "127.0.0.1", "::1"]) {
  test.skipIf(host === "::1" && !hasIpv6Loopback())(`config server.host ${host}, the data dir's server there and no serve.lock: the client commands prove it and work`, async () => {
    const port = await deadPort();
    const d = scratch.dataDir("airlock-proof-legit-", port);
    writeFileSync(join(d, "airlock.yaml"), `mode: smart\nprovider: { name: scripted, script: turns.yaml }\nserver: { host: "${host}", port: ${port} }\n`);
    await scratch.serve(d, ["--port", String(port)]);
    rmSync(join(d, "serve.lock"));
    const token = readFileSync(join(d, "api-token"), "utf8").trim();
    const list = await airlockClient(d, ["actions", "list", "--json"]);
    expect({ code: list.code, stderr: list.stderr }).toEqual({ code: 0, stderr: "" });
    const link = await airlockClient(d, ["console"]);
    expect({ code: link.code, stderr: link.stderr }).toEqual({ code: 0, stderr: "" });
    expect(link.stdout).toEndWith(`:${port}/#t=${token}\n`);
  }, 60_000);
}

test.skipIf(!hasIpv6Loopback())("a config host name with several addresses: the first that proves is used, a relay on the other one is passed over", async () => {
  const port = await deadPort();
  const d = scratch.dataDir("airlock-proof-alt-", port);
  await scratch.serve(d, ["--host", "127.0.0.1", "--port", String(port)]);
  const token = readFileSync(join(d, "api-token"), "utf8").trim();
  const seen: string[] = [];
  const relay = Bun.serve({
    hostname: "::1",
    port,
    async fetch(req) {
      const url = new URL(req.url);
      seen.push(url.pathname);
      return fetch(`http://127.0.0.1:${port}${url.pathname}${url.search}`);
    },
  });
  try {
    const target = { base: `http://[::1]:${port}`, alternates: [`http://127.0.0.1:${port}`], from: "config" as const, fromText: "the config", recorded: { state: "none" } as never };
    expect((await provenConfigTarget(target, token, d)).base).toBe(`http://127.0.0.1:${port}`);
    expect(seen).toEqual(["/server-proof"]);
    // nothing proves: the target is kept (its next proof says why); a URL not from the config is not asked
    expect((await provenConfigTarget(target, "0".repeat(64), d)).base).toBe(`http://[::1]:${port}`);
    expect((await provenConfigTarget({ ...target, from: "--url" }, token, d)).base).toBe(`http://[::1]:${port}`);
    expect(seen.length).toBe(2);
  } finally {
    await relay.stop(true);
  }
}, 60_000);

test("--url and $AIRLOCK_URL are not asked for a proof: the commands go straight to the URL given", async () => {
  const port = await deadPort();
  const d = scratch.dataDir("airlock-proof-url-", port);
  const seen: string[] = [];
  const given = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      seen.push(new URL(req.url).pathname);
      return Response.json({ actions: [], schedules: [], status: "ok" });
    },
  });
  try {
    const url = `http://127.0.0.1:${given.port}`;
    expect((await airlockClient(d, ["actions", "list", "--json", "--url", url])).code).toBe(0);
    expect((await airlockClient(d, ["console", "--url", url])).code).toBe(0);
    const p = Bun.spawn([process.execPath, join(import.meta.dir, "../../src/main.ts"), "schedule", "list", "--json", "--data-dir", d], {
      cwd: d,
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
      env: { ...process.env, AIRLOCK_HOME: "", AIRLOCK_URL: url, NO_COLOR: "1" },
    });
    expect(await p.exited).toBe(0);
    expect(seen.length).toBeGreaterThanOrEqual(3);
    expect(seen.filter((s) => s === "/server-proof")).toEqual([]);
  } finally {
    await given.stop(true);
  }
}, 60_000);

test("config 127.0.0.1, the data dir's server bound to 0.0.0.0 on that port and no serve.lock: its proof for the wildcard is taken", async () => {
  const port = await deadPort();
  const d = scratch.dataDir("airlock-proof-wild-", port);
  await scratch.serve(d, ["--host", "0.0.0.0", "--port", String(port)]);
  rmSync(join(d, "serve.lock"));
  const list = await airlockClient(d, ["actions", "list", "--json"]);
  expect({ code: list.code, stderr: list.stderr }).toEqual({ code: 0, stderr: "" });
  // nothing can bind 127.0.0.1 on that port beside it (a relay there is impossible)
  expect(() => Bun.serve({ hostname: "127.0.0.1", port, fetch: () => new Response("") })).toThrow();
}, 60_000);
