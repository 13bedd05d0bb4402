/**
 * `airlock attach --plain` when the data dir's `airlock serve --port 0` stops and starts again on another port: with
 * no `--url` and no `$AIRLOCK_URL` (the URL came from the data dir's `serve.lock`), each reconnect attempt reads the
 * lock again and follows the new URL, saying so in one line, and answers the new server's card; a URL the person
 * gave (`--url`) is kept. Also: the stopped server's last stderr line (`airlock: stopped; URL no longer answers`),
 * and attach's turn-end line for the turn the SIGTERM cancelled.
 */
import { expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { serveFixture } from "../harness-serve.ts";
import { waitFor } from "../processes.ts";
import { apiOf, newRoot, spawnAttach, startTurn, TWO_WRITES_SCRIPT, until, writeScriptedConfig } from "./attach-helpers.ts";

const fixture = serveFixture("airlock-attach-moved-");
const { dir, main } = fixture;
const env = { ...process.env, AIRLOCK_URL: "", AIRLOCK_HOME: "", NO_COLOR: "1" };

test("attach without --url follows the data dir's server to its new port after a restart; --url is kept", async () => {
  writeScriptedConfig(dir, TWO_WRITES_SCRIPT);
  const config = ["--config", join(dir, "airlock.yaml")];
  const first = await fixture.serve(config);
  const root = await newRoot(first.url, dir, "ws");
  const found = spawnAttach(main, [root.id, "--plain", "--data-dir", dir], env);
  const given = spawnAttach(main, [root.id, "--plain", "--data-dir", dir, "--url", first.url], env);
  fixture.track(found.proc);
  fixture.track(given.proc);
  await found.waitOut(new RegExp(`^attached to root ${root.id} on ${first.url};`, "m"));
  await given.waitOut(/^attached to root /m);
  startTurn(first.url, dir, root.id, "one");
  await found.waitOut(/"path": "a\.txt"[\s\S]*?request act_\w+/);

  first.proc.kill("SIGTERM");
  expect(await first.proc.exited).toBe(0);
  // the server's log ends with a line saying it has stopped (read from the pipe, which may lag the exit)
  await waitFor(() => first.stderr().includes("airlock: stopped"), "serve's last line");
  expect(first.stderr()).toMatch(new RegExp(`airlock: SIGTERM: stopping [^\\n]*\\nairlock: stopped; ${first.url} no longer answers\\n$`));
  for (const a of [found, given]) {
    await a.waitOut(/^airlock: the connection to http:\/\/127\.0\.0\.1:\d+ dropped; reconnecting/m);
    // the cancelled turn ends with its turn line, as a completed one does, saying cancelled once (its error's
    // code is its status: not said again, and no ✖ line before it)
    expect(a.out()).toMatch(/^\[root\] ■ turn cancelled: (?!cancelled:)\S/m);
    expect(a.out()).not.toContain("✖ cancelled");
  }

  const second = await fixture.serve(config);
  expect(second.url).not.toBe(first.url);
  const mark = found.out().length;
  await found.waitOut(new RegExp(`^airlock: the airlock serve of the data dir ${dir} now listens on ${second.url} \\(pid ${second.proc.pid}, as its ${join(dir, "serve.lock")} says\\); following it there$`, "m"), 60_000, mark);
  await found.waitOut(new RegExp(`^airlock: reconnected to ${second.url};`, "m"), 60_000, mark);
  startTurn(second.url, dir, root.id, "two");
  const api = apiOf(second.url, dir);
  const cardB = await until(async () => (await api("GET", `/sessions/${root.id}/actions`)).body.actions?.[0]?.request_id as string | undefined, "the new card");
  await found.waitOut(new RegExp(`"path": "b\\.txt"[\\s\\S]*?request ${cardB}`), 60_000, mark);
  await found.send(`y ${cardB}`);
  await waitFor(() => existsSync(join(root.workspace, "b.txt")), "the allowed write on the new server");

  // the URL the person gave is kept: no line about the new server, no reconnect
  expect(given.out()).not.toContain("now listens on");
  expect(given.out()).not.toContain("reconnected to");
  for (const a of [found, given]) {
    a.proc.kill("SIGTERM");
    expect(await a.proc.exited).toBe(0);
  }
  second.proc.kill("SIGTERM");
  expect(await second.proc.exited).toBe(0);
}, 120_000);
