/**
 * @module test/security/serve-lock-url-never-outlives-the-listener
 * The client commands follow the URL a live `airlock serve` signed into its `serve.lock` (store/serve-lock.ts
 * `recordedServer`) and send the API token there.
 * FINDING (high): on SIGTERM the server closed its listening socket first (`server.stop(false)`), then waited up to its
 * 5 s close deadline for the SSE streams and open connections to end, and only then released its lock. For that time
 * the lock still named the port with a valid MAC and a live pid, while the port was free: any local user — `nobody`,
 * no token, no write access to the data dir — who polls a bind on that port gets it the moment the listener closes
 * (held open the whole 5 s by one connection that sends half a request, which needs no token), and
 * `airlock actions list` (or `attach`, `console`, `schedule`) sent its bearer token to that user's server.
 * Fixed: the server takes the URL out of its lock (signed, no URL) before it closes the listener, and a client that
 * finds a live server with no URL recorded refuses to send its token anywhere (`server_unreachable`): such a server
 * listens nowhere, so whatever answers at the config's address is not it.
 * Real processes: `airlock serve` as the current user, the squatter as `nobody` when the tests run as root.
 */
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { testUsers } from "../as-user.ts";
import { airlockClient, deadPort, serveScratch, SQUATTER_WHEN_FREE } from "../harness-serve.ts";

const scratch = serveScratch();

test("after SIGTERM, a client never sends its token to whoever takes the server's port while the lock still names it", async () => {
  const d = scratch.dataDir("airlock-lockurl-", await deadPort());
  const sp = await scratch.serve(d);
  const token = readFileSync(join(d, "api-token"), "utf8").trim();
  const port = Number(new URL(sp.url).port);

  // the other user (nobody when the tests run as root) waits for the port
  const other = testUsers().at(-1)!;
  const squatter = scratch.track(Bun.spawn([...other.prefix, process.execPath, "-e", SQUATTER_WHEN_FREE, String(port)], { cwd: "/", stdin: "ignore", stdout: "pipe", stderr: "inherit" }));
  let seen = "";
  const out = (async () => {
    for await (const chunk of squatter.stdout.pipeThrough(new TextDecoderStream())) seen += chunk;
  })();

  // half a request (no token needed): the server's stop waits for this connection until its close deadline
  const half = await Bun.connect({ hostname: "127.0.0.1", port, socket: { data() {} } });
  half.write(`GET /health HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n`);
  await Bun.sleep(100);

  sp.proc.kill("SIGTERM");
  const t0 = Date.now();
  while (!seen.includes("bound") && Date.now() - t0 < 10_000) await Bun.sleep(5);
  expect(seen).toContain("bound"); // the listener is closed: the other user holds the port
  expect(sp.proc.exitCode).toBeNull(); // while the server (and its lock) still live

  const { stdout, stderr, code } = await airlockClient(d, ["actions", "list", "--json"]);
  half.end();
  expect(await sp.proc.exited).toBe(0);
  squatter.kill("SIGKILL");
  await squatter.exited;
  await out;

  expect(seen).not.toContain(token);
  expect(seen).not.toContain("AUTH ");
  expect({ code, stdout }).toEqual({ code: 1, stdout: "" }); // server_unreachable
  expect(stderr).toContain("server_unreachable");
}, 60_000);
