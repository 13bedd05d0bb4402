/**
 * @module test/security/config-port-of-another-user-gets-no-token
 * With no live server recorded in the data dir's `serve.lock` (none running, or the lock removed), the client
 * commands talk to the config's `server.host:server.port` (default 127.0.0.1:7420).
 * FINDING (high, as before the lock existed): whatever listened there got the API token — another local user (`nobody`,
 * no access to the data dir) who bound that loopback port got it from `airlock actions list` (and the console link
 * from `airlock console`, whose page reads the token in its fragment; `attach` sends the approver token on an allow).
 * Fixed: on a loopback or wildcard config host, a port held by a socket of another uid (/proc/self/net/tcp{,6}) is
 * refused `server_unreachable`, nothing sent and no link printed. (A process of airlock's own user there — a hook
 * that removed the lock — is not told apart: test/security/serve-lock-open-findings.test.ts.)
 * Real processes, as root with the squatter as nobody; skipped when the tests do not run as root (no other user).
 */
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { IS_ROOT, testUsers } from "../as-user.ts";
import { airlockClient, serveScratch } from "../harness-serve.ts";

const scratch = serveScratch();

/** The other user's server on 127.0.0.1, port 0: says `bound PORT`, prints every Authorization header. */
const SQUATTER = `
const s = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch(r) {
  console.log("AUTH " + (r.headers.get("authorization") ?? "-") + " " + new URL(r.url).pathname);
  return Response.json({ actions: [], status: "ok" });
} });
console.log("bound " + s.port);
setTimeout(() => process.exit(0), 30000);
`;

test.skipIf(!IS_ROOT)("no server of the data dir runs: a client never sends its token to another user's server on the config's port", async () => {
  const other = testUsers().at(-1)!;
  const squatter = scratch.track(Bun.spawn([...other.prefix, process.execPath, "-e", SQUATTER], { cwd: "/", stdin: "ignore", stdout: "pipe", stderr: "inherit" }));
  const squat = { out: "" };
  void (async () => {
    for await (const c of squatter.stdout.pipeThrough(new TextDecoderStream())) squat.out += c;
  })();
  const t0 = Date.now();
  while (!squat.out.includes("bound") && Date.now() - t0 < 10_000) await Bun.sleep(10);
  const port = Number(/bound (\d+)/.exec(squat.out)?.[1]);
  expect(port).toBeGreaterThan(0);

  const d = scratch.dataDir("airlock-cfgport-", port);
  const run = (args: string[]) => airlockClient(d, args);
  const list = await run(["actions", "list", "--json"]);
  const link = await run(["console"]);
  await Bun.sleep(100);
  const token = readFileSync(join(d, "api-token"), "utf8").trim();
  expect(squat.out).not.toContain(token);
  expect(squat.out).not.toContain("AUTH Bearer");
  expect(list).toMatchObject({ code: 1, stdout: "" });
  expect(list.stderr).toContain(`airlock: server_unreachable: port ${port} on this machine is held by uid ${other.uid}`);
  expect(link.stdout).not.toContain(token);
  expect(link.code).toBe(1);
}, 60_000);
