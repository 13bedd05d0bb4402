/**
 * @module test/security/serve-lock-replayed-during-the-drain
 * A stopping `airlock serve` takes its URL out of its signed `serve.lock` before it closes its listener, then drains
 * its streams (up to its 5 s close deadline) while its pid lives on.
 * FINDING (high): the client commands trusted any lock signed under the data dir's approver token whose pid and start
 * identity were alive. A process that can write the data dir but not read the token — a `danger-full-access` tool of
 * an `airlock run` on the same data dir, a hook — copied the lock while the server listened, put that copy back once
 * the server had taken its URL out (the same pid, start and URL: the MAC still matches), and bound the freed port:
 * `airlock actions list` sent it the API token. A signed lock says who wrote it, not that its server still listens.
 * Fixed: a URL from the lock is followed only when the lock's pid holds a listening socket on that address and port
 * (/proc/net/tcp{,6} and the pid's /proc/PID/fd); where that cannot be read, the lock is not followed.
 * Real processes: `airlock serve`, the squatter and the CLI as the current user (the attacker is of that user).
 */
import { expect, test } from "bun:test";
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { airlockClient, deadPort, serveScratch, SQUATTER_WHEN_FREE } from "../harness-serve.ts";

const scratch = serveScratch();

test("a signed lock copied while the server listened and put back while it drains is not followed to its freed port", async () => {
  const d = scratch.dataDir("airlock-lockreplay-", await deadPort());
  const sp = await scratch.serve(d);
  const token = readFileSync(join(d, "api-token"), "utf8").trim();
  const port = Number(new URL(sp.url).port);
  const lockPath = join(d, "serve.lock");
  const listening = readFileSync(lockPath, "utf8"); // the attacker's copy: no token needed
  expect(JSON.parse(listening).url).toBe(sp.url);

  const squatter = scratch.track(Bun.spawn([process.execPath, "-e", SQUATTER_WHEN_FREE, String(port)], { cwd: "/", stdin: "ignore", stdout: "pipe", stderr: "inherit" }));
  const squat = { out: "" };
  void (async () => {
    for await (const c of squatter.stdout.pipeThrough(new TextDecoderStream())) squat.out += c;
  })();

  // half a request (no token needed) holds the server's drain until its close deadline
  const half = await Bun.connect({ hostname: "127.0.0.1", port, socket: { data() {} } });
  half.write(`GET /health HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n`);
  await Bun.sleep(100);
  sp.proc.kill("SIGTERM");
  const t0 = Date.now();
  while (!squat.out.includes("bound") && Date.now() - t0 < 10_000) await Bun.sleep(2);
  expect(squat.out).toContain("bound");
  // the copy goes back in place (a regular 0600 file of the user, renamed over the lock)
  writeFileSync(`${lockPath}.x`, listening, { mode: 0o600 });
  renameSync(`${lockPath}.x`, lockPath);
  expect(sp.proc.exitCode).toBeNull(); // the server (its pid) still lives: it drains

  const { stdout, code } = await airlockClient(d, ["actions", "list", "--json"]);
  half.end();
  await sp.proc.exited;
  await Bun.sleep(100);
  expect(squat.out).not.toContain(token);
  expect(squat.out).not.toContain("AUTH ");
  expect({ code, stdout }).toEqual({ code: 1, stdout: "" }); // server_unreachable
}, 60_000);
