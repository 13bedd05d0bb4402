/**
 * @module test/security/serve-lock-url-names-the-bound-address
 * The client commands send their token to the URL `airlock serve` records in its `serve.lock`.
 * FINDING (high): with `--host localhost` the server bound one address (getaddrinfo's first: `127.0.0.1` here) but
 * recorded `http://localhost:PORT`, a name the client's fetch tries as `::1` first. The same port on `::1` was free,
 * and any local user — `nobody`, no token, no access to the data dir — who bound it got the API token of
 * `airlock actions list` (and of `attach`, `console`, `schedule`).
 * Fixed: a server whose host is a name records the loopback address it bound (`127.0.0.1` or `[::1]`, names the Host
 * check accepts), so the client connects to the very socket the server listens on; so do the console link (the token
 * in its fragment, which the page that answers reads) and the curl line serve prints.
 * Real processes: `airlock serve` as the current user, the squatter as `nobody` when the tests run as root. Skipped
 * where `::1` cannot be bound.
 */
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { testUsers } from "../as-user.ts";
import { airlockClient, deadPort, hasIpv6Loopback, serveScratch } from "../harness-serve.ts";

const scratch = serveScratch();

/** The other user's server on HOST:PORT: says `bound`, prints the Authorization header of every request (`AUTH …`). */
const SQUATTER = `
const s = Bun.serve({ hostname: process.argv[1], port: Number(process.argv[2]), fetch(r) {
  console.log("AUTH " + (r.headers.get("authorization") ?? "-") + " " + new URL(r.url).pathname);
  return Response.json({ actions: [] });
} });
console.log("bound " + s.port);
setTimeout(() => process.exit(0), 30000);
`;

test.skipIf(!hasIpv6Loopback())("serve --host localhost: a client never sends its token to whoever binds the same port on the other loopback address", async () => {
  const d = scratch.dataDir("airlock-lockhost-", await deadPort());
  const sp = await scratch.serve(d, ["--host", "localhost"]);
  const token = readFileSync(join(d, "api-token"), "utf8").trim();
  const port = Number(new URL(sp.url).port);

  // the other user (nobody when the tests run as root) binds whichever loopback address the server left free
  const other = testUsers().at(-1)!;
  let squat = { out: "" };
  for (const host of ["::1", "127.0.0.1"]) {
    const p = scratch.track(Bun.spawn([...other.prefix, process.execPath, "-e", SQUATTER, host, String(port)], { cwd: "/", stdin: "ignore", stdout: "pipe", stderr: "ignore" }));
    const mine = { out: "" };
    void (async () => {
      for await (const c of p.stdout.pipeThrough(new TextDecoderStream())) mine.out += c;
    })();
    let exited = false;
    void p.exited.then(() => (exited = true));
    while (!mine.out.includes("bound") && !exited) await Bun.sleep(10);
    if (mine.out.includes("bound")) {
      squat = mine;
      break;
    }
  }
  expect(squat.out).toContain(`bound ${port}`);

  const { stdout, stderr, code } = await airlockClient(d, ["actions", "list", "--json"]);
  await Bun.sleep(200);
  expect(squat.out).not.toContain(token);
  expect(squat.out).not.toContain("AUTH ");
  expect({ code, stderr }).toEqual({ code: 0, stderr: "" }); // it reached the real server
  expect(stdout).toContain('"actions"');
  // serve's own console link (the token in its fragment, read by whatever page answers) and curl line name it too
  expect(sp.stderr()).toContain(`airlock: console: http://127.0.0.1:${port}/#t=`);
  expect(sp.stderr()).toContain(` http://127.0.0.1:${port}/sessions\n`);
}, 60_000);
