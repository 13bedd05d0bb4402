/**
 * A key typed before a card reaches the terminal never answers it (issue 18; complaints of stray keys
 * approving, approval-ui.md §2 items 10–11). `airlock attach` runs in a real terminal (tmux) against a real
 * `airlock serve`: `y` typed while no card is shown is dropped; the card, once shown and armed, stays pending;
 * only a `y` typed after it armed allows it, and the screen shows the outcome.
 */
import { beforeAll, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { serveFixture, type ServeProcess } from "../harness-serve.ts";
import { waitFor } from "../processes.ts";
import { openTerminal } from "../tmux.ts";
import { apiOf, newRoot, startTurn, until, SUBAGENT_CARD_SCRIPT, writeScriptedConfig } from "../integration/attach-helpers.ts";

const fixture = serveFixture("airlock-attach-tty-");
const { dir, main } = fixture;
let server: ServeProcess;

beforeAll(async () => {
  writeScriptedConfig(dir, SUBAGENT_CARD_SCRIPT);
  server = await fixture.serve(["--config", join(dir, "airlock.yaml")]);
});

test("a y typed before the card arrives does not approve it; a y after the card armed does", async () => {
  const root = await newRoot(server.url, dir, "ws");
  const term = openTerminal([process.execPath, main, "attach", root.id, "--data-dir", dir, "--url", server.url], { env: { NO_COLOR: "1" } });
  await term.waitScreen(/attached to root ses_\w+ on http/);

  // type-ahead: keys while no card is shown (a y, and a y with Enter as a line-reading prompt would take it)
  term.keys(["y", "y", "Enter", "y"]);
  startTurn(server.url, dir, root.id, "go");
  const api = apiOf(server.url, dir);
  const card = await until(async () => (await api("GET", `/sessions/${root.id}/actions`)).body.actions?.[0], "the card to park");

  // the card is on screen with its chain and armed: every key typed before it was dropped
  await term.waitScreen(new RegExp(`request ${card.request_id}`));
  await term.waitScreen(/\[root›subagent#0\] developer__write_file/);
  await term.waitScreen(/allow\? \[y\] once {2}\[n\] deny {2}\[a\] allow for this session/);
  const still = await api("GET", `/sessions/${root.id}/actions`);
  expect(still.body.actions.map((c: any) => c.request_id)).toEqual([card.request_id]);
  expect(existsSync(join(root.workspace, "out.txt"))).toBe(false);

  term.keys(["y"]);
  await term.waitScreen(new RegExp(`developer__write_file: allowed once ${card.request_id}`));
  await waitFor(() => existsSync(join(root.workspace, "out.txt")), "the allowed write to run");
  await term.waitScreen(/\[root\] ■ turn completed: root done/);

  term.keys(["q"]);
  // the tree has no turn running any more: plain "detached" ("the session keeps running" only while one runs)
  await term.waitScreen(/\ndetached\s*\n\[exited 0\]/);
}, 120_000);
