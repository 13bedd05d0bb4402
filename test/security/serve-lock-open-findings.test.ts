/**
 * @module test/security/serve-lock-open-findings
 * Findings of the review of the client commands' server discovery (`serve.lock`, store/serve-lock.ts
 * `recordedServer`, cli/context.ts `serverTarget`).
 *
 * FINDING (medium), fixed: the fallback to the config's address had no proof that what answers there is this data
 * dir's server. A hook or `danger-full-access` process of the same user (network, write access to the data dir, no
 * token) removed `serve.lock` while the real server ran on another port (`--port 0`) and listened on the config's
 * `server.host:server.port` itself: `airlock actions list`, `console`, `schedule`, `attach` sent it the API token
 * (`actions answer --allow-once` the approver token too). Now, on the config's address only, a client first asks
 * `GET /server-proof` with a fresh nonce (no token sent) and sends nothing unless the answer is HMAC-SHA-256 under its
 * own API token over the nonce, that address and that port (server/server-proof.ts): a listener without the token cannot answer,
 * and one relaying the nonce to the real server on its other port gets a proof for that port, not the config's.
 * Real processes: `airlock serve` from source, a fake listener (Bun.serve, this user) on the config's port.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { serverProof } from "../../src/server/server-proof.ts";
import { airlockClient, deadPort, MAIN, serveScratch } from "../harness-serve.ts";

const scratch = serveScratch();

/** Every client command with a token to send, as argv (attach with --plain: no terminal). */
const COMMANDS: string[][] = [
  ["actions", "list", "--json"],
  ["actions", "answer", "act_0000000000000000000000000", "--allow-once"],
  ["schedule", "list"],
  ["console"],
  ["attach", "--plain"],
];

/** A fake airlock on `port` (this user's, no token): records each request's path and token headers; `proof` answers `/server-proof`. */
function fakeListener(port: number, proof: (url: URL) => Promise<Response>) {
  const seen: { path: string; authorization: string | null; approver: string | null }[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port,
    async fetch(req) {
      const url = new URL(req.url);
      seen.push({ path: url.pathname, authorization: req.headers.get("authorization"), approver: req.headers.get("x-airlock-approver") });
      if (url.pathname === "/server-proof") return proof(url);
      return Response.json({ actions: [], schedules: [], status: "ok" });
    },
  });
  return { seen, server };
}

describe("the data dir's server on --port 0, its serve.lock removed, the config's port held by another listener of the same user", () => {
  for (const [name, proof] of [
    ["a listener that answers like airlock, with a made-up proof", async () => Response.json({ proof: "0".repeat(64) })],
    ["a listener that answers 404 on /server-proof", async () => Response.json({ error: "not_found", message: "no" }, { status: 404 })],
    ["a listener that relays the nonce to the real server (its proof is for the real server's port)", null],
  ] as const) {
    test(`${name}: every client command refuses server_unreachable and sends it no token`, async () => {
      const port = await deadPort();
      const d = scratch.dataDir("airlock-proof-", port);
      const sp = await scratch.serve(d);
      rmSync(join(d, "serve.lock"));
      const relay = async (url: URL) => fetch(`${sp.url}/server-proof${url.search}`);
      const fake = fakeListener(port, proof ?? relay);
      try {
        const token = readFileSync(join(d, "api-token"), "utf8").trim();
        const approver = readFileSync(join(d, "approver-token"), "utf8").trim();
        for (const argv of COMMANDS) {
          const r = await airlockClient(d, argv);
          expect({ argv, code: r.code }).toEqual({ argv, code: 1 });
          expect(r.stderr).toStartWith(
            `airlock: server_unreachable: what answers at http://127.0.0.1:${port} could not prove it is the airlock serve of the data dir ${d} (`,
          );
          expect(r.stderr).toContain("), so nothing was sent there.\n  The URL came from server.host/server.port of the config");
          // something answers there: starting a server is not the advice (it would find the port in use)
          expect(r.stderr).toContain(`Port ${port} is taken by another program`);
          expect(r.stderr).toContain("--url http://HOST:PORT");
          expect(r.stdout).not.toContain(token);
        }
        expect(fake.seen.length).toBeGreaterThanOrEqual(COMMANDS.length);
        expect(fake.seen.filter((s) => s.path !== "/server-proof" || s.authorization !== null || s.approver !== null)).toEqual([]);
        expect(JSON.stringify(fake.seen)).not.toContain(token);
        expect(JSON.stringify(fake.seen)).not.toContain(approver);
      } finally {
        await fake.server.stop(true);
      }
    }, 120_000);
  }
});

test("the data dir's server on the config's port with no serve.lock: the client commands prove it and work", async () => {
  const port = await deadPort();
  const d = scratch.dataDir("airlock-proof-ok-", port);
  const sp = await scratch.serve(d, ["--port", String(port)]);
  expect(sp.url).toBe(`http://127.0.0.1:${port}`);
  rmSync(join(d, "serve.lock"));
  const token = readFileSync(join(d, "api-token"), "utf8").trim();
  expect(await airlockClient(d, ["actions", "list", "--json"])).toEqual({ code: 0, stdout: expect.stringContaining('"actions"'), stderr: "" });
  expect(await airlockClient(d, ["schedule", "list", "--json"])).toEqual({ code: 0, stdout: expect.stringContaining('"schedules"'), stderr: "" });
  expect(await airlockClient(d, ["console"])).toEqual({ code: 0, stdout: `http://127.0.0.1:${port}/#t=${token}\n`, stderr: "" });
  const answer = await airlockClient(d, ["actions", "answer", "act_0000000000000000000000000", "--allow-once"]);
  expect(answer.code).toBe(1);
  expect(answer.stderr).toStartWith("airlock: not_found:"); // the server's own answer: the request reached it
  const attach = await airlockClient(d, ["attach", "--plain"]);
  expect(attach.code).toBe(1);
  expect(attach.stderr).toContain(`airlock: session_not_found: no root session on http://127.0.0.1:${port} has a running turn`);
}, 120_000);

test("GET /server-proof: no token needed; a bad nonce is 400 bad_request; the proof is the HMAC of the nonce, the address and the port under the API token", async () => {
  const d = scratch.dataDir("airlock-proof-route-", await deadPort());
  const sp = await scratch.serve(d);
  const port = Number(new URL(sp.url).port);
  const token = readFileSync(join(d, "api-token"), "utf8").trim();
  for (const q of ["", "?nonce=", `?nonce=${"a".repeat(31)}`, `?nonce=${"a".repeat(129)}`, `?nonce=${"A".repeat(32)}`, `?nonce=${"g".repeat(32)}`]) {
    const r = await fetch(`${sp.url}/server-proof${q}`);
    expect({ q, status: r.status, error: ((await r.json()) as { error: string }).error }).toEqual({ q, status: 400, error: "bad_request" });
  }
  for (const nonce of ["0".repeat(32), "ab".repeat(64), "0123456789abcdef".repeat(4)]) {
    const r = await fetch(`${sp.url}/server-proof?nonce=${nonce}`);
    expect(r.status).toBe(200);
    const body = await r.json();
    expect(body).toEqual({ proof: serverProof(token, "127.0.0.1", port, nonce) });
    expect(body.proof).not.toBe(serverProof(token, "127.0.0.1", port + 1, nonce));
    expect(body.proof).not.toBe(serverProof(token, "::1", port, nonce));
    expect(JSON.stringify(body)).not.toContain(token);
  }
}, 60_000);

test("attach on the config's port: its reconnects send nothing to a listener that took the port after the server stopped, and follow the server once it is back", async () => {
  const port = await deadPort();
  const d = scratch.dataDir("airlock-proof-attach-", port);
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
  for (const stream of [attach.stdout, attach.stderr]) {
    void (async () => {
      for await (const c of stream.pipeThrough(new TextDecoderStream())) said += c;
    })();
  }
  const waitFor = async (text: string, ms: number) => {
    const t0 = Date.now();
    while (!said.includes(text) && Date.now() - t0 < ms) await Bun.sleep(20);
    expect(said).toContain(text);
  };
  await waitFor("attached", 20_000);

  sp.proc.kill("SIGTERM");
  expect(await sp.proc.exited).toBe(0);
  const fake = fakeListener(port, async () => Response.json({ proof: "0".repeat(64) }));
  try {
    await waitFor("dropped; reconnecting", 10_000);
    await Bun.sleep(6_000); // several reconnect attempts (250 ms doubling to 5 s)
  } finally {
    await fake.server.stop(true);
  }
  expect(fake.seen.length).toBeGreaterThan(0);
  expect(fake.seen.filter((x) => x.path !== "/server-proof" || x.authorization !== null || x.approver !== null)).toEqual([]);
  expect(JSON.stringify(fake.seen)).not.toContain(token);

  // the data dir's server back on the config's port (no lock): attach proves it and reconnects
  await scratch.serve(d, ["--port", String(port)]);
  rmSync(join(d, "serve.lock"));
  await waitFor(`reconnected to http://127.0.0.1:${port}`, 15_000);
  attach.kill("SIGTERM");
  await attach.exited;
}, 90_000);
