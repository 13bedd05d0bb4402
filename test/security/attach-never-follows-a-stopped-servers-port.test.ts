/**
 * @module test/security/attach-never-follows-a-stopped-servers-port
 * `airlock attach` without `--url` finds its server in the data dir's `serve.lock` (store/serve-lock.ts
 * `recordedServer`), then follows it, reconnecting (250 ms, doubling up to 5 s) whenever the connection drops.
 * FINDING (high): the lock was checked once, when attach started; every reconnect, and every answer to a card, went to
 * that URL whatever the lock said later. Once its server stopped (the lock released), the port was free, and any local
 * user — `nobody`, no token, no access to the data dir — who bound it got attach's API token within seconds, and could
 * show a card of its own (or one it copied, with that token, from the real server restarted elsewhere) whose allow
 * sends the approver token as well.
 * Fixed: with a URL from the lock, attach (its reconnects and its answers, every request of cli/server-client.ts)
 * talks to it only while the lock still names a live server listening there: else it waits without connecting.
 * Real processes: `airlock serve` and `airlock attach --plain` as the current user, the squatter as `nobody` when the
 * tests run as root.
 */
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { testUsers } from "../as-user.ts";
import { deadPort, MAIN, serveScratch } from "../harness-serve.ts";

const scratch = serveScratch();

/** The other user's server on 127.0.0.1:PORT: prints the Authorization header of every request (`AUTH …`). */
const SQUATTER = `
const s = Bun.serve({ hostname: "127.0.0.1", port: Number(process.argv[1]), fetch(r) {
  console.log("AUTH " + (r.headers.get("authorization") ?? "-") + " " + new URL(r.url).pathname);
  return new Response("no", { status: 503 });
} });
console.log("bound " + s.port);
setTimeout(() => process.exit(0), 30000);
`;

test("after its server stops, attach never reconnects to whoever takes the port the lock named", async () => {
  const d = scratch.dataDir("airlock-attachport-", await deadPort());
  const sp = await scratch.serve(d);
  const token = readFileSync(join(d, "api-token"), "utf8").trim();
  const port = Number(new URL(sp.url).port);
  const h = { authorization: `Bearer ${token}`, "content-type": "application/json" };
  const s = (await (await fetch(`${sp.url}/sessions`, { method: "POST", headers: h, body: JSON.stringify({ workspace: d }) })).json()) as { id: string };

  const attach = scratch.track(Bun.spawn([process.execPath, MAIN, "attach", s.id, "--plain", "--data-dir", d], {
    cwd: d,
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, AIRLOCK_HOME: "", AIRLOCK_URL: "", NO_COLOR: "1" },
  }));
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

  // the other user (nobody when the tests run as root) takes the port, then attach has several reconnects' time
  const other = testUsers().at(-1)!;
  const squatter = scratch.track(Bun.spawn([...other.prefix, process.execPath, "-e", SQUATTER, String(port)], { cwd: "/", stdin: "ignore", stdout: "pipe", stderr: "inherit" }));
  let seen = "";
  const out = (async () => {
    for await (const chunk of squatter.stdout.pipeThrough(new TextDecoderStream())) seen += chunk;
  })();
  const t1 = Date.now();
  while (!seen.includes("bound") && Date.now() - t1 < 10_000) await Bun.sleep(5);
  expect(seen).toContain(`bound ${port}`);
  await Bun.sleep(6_000);
  attach.kill("SIGTERM");
  await attach.exited;
  squatter.kill("SIGKILL");
  await squatter.exited;
  await out;

  expect(seen).not.toContain(token);
  expect(seen).not.toContain("AUTH ");
}, 60_000);
