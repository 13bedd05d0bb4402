/**
 * `airlock attach --plain` across a server restart on the same data dir and port (issue 18): attach says
 * the connection dropped, reconnects with backoff, resyncs from the fresh snapshot (the card the old
 * process held is dropped from its queue, the card pending in the new process is shown, with its BEL) and
 * a decision line still answers it.
 */
import { expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { serveFixture } from "../harness-serve.ts";
import { waitFor } from "../processes.ts";
import { apiOf, newRoot, spawnAttach, startTurn, TWO_WRITES_SCRIPT, until, writeScriptedConfig } from "./attach-helpers.ts";

const fixture = serveFixture("airlock-attach-restart-");
const { dir, main } = fixture;

test("after a server restart attach reconnects, drops the card the old process held and shows the one pending now", async () => {
  // the root asks to write a.txt; after the restart its next turn asks to write b.txt
  writeScriptedConfig(dir, TWO_WRITES_SCRIPT);
  const config = ["--config", join(dir, "airlock.yaml")];
  const first = await fixture.serve(config);
  const port = new URL(first.url).port;
  const root = await newRoot(first.url, dir, "ws");
  const a = spawnAttach(main, [root.id, "--plain", "--data-dir", dir, "--url", first.url]);
  fixture.track(a.proc);
  await a.waitOut(/^attached to root /m);
  startTurn(first.url, dir, root.id, "one");
  const cardA = (await a.waitOut(/developer__write_file[\s\S]*?"path": "a\.txt"[\s\S]*?request (act_\w+)/))[1]!;

  first.proc.kill("SIGTERM");
  expect(await first.proc.exited).toBe(0);
  await a.waitOut(/^airlock: the connection to http:\/\/127\.0\.0\.1:\d+ dropped; reconnecting/m);
  const mark = a.out().length;

  const second = await fixture.serve([...config, "--port", port]);
  expect(second.url).toBe(first.url);
  startTurn(second.url, dir, root.id, "two");
  const api = apiOf(second.url, dir);
  const cardB = await until(async () => (await api("GET", `/sessions/${root.id}/actions`)).body.actions?.[0]?.request_id as string | undefined, "the new card");

  await a.waitOut(/^airlock: reconnected to /m, 60_000, mark);
  // The old process's card leaves attach's queue either way: withdrawn, when the SIGTERM's cancel reached
  // the stream before it closed, or dropped, when the reconnect's snapshot no longer lists it.
  await a.waitOut(new RegExp(`card ${cardA} (?:is no longer pending \\(dropped\\)|withdrawn)`), 60_000, 0);
  const shown = await a.waitOut(new RegExp(`\\x07[^\\x07]*"path": "b\\.txt"[\\s\\S]*?request ${cardB}`), 60_000, mark);
  expect(shown[0]).toContain("[root] developer__write_file");

  await a.send(`y ${cardB}`);
  await waitFor(() => existsSync(join(root.workspace, "b.txt")), "the allowed write after the restart");
  expect(existsSync(join(root.workspace, "a.txt"))).toBe(false);
  a.proc.kill("SIGTERM");
  expect(await a.proc.exited).toBe(0);
  second.proc.kill("SIGTERM");
  expect(await second.proc.exited).toBe(0);
}, 120_000);
