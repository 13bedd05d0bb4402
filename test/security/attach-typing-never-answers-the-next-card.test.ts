/**
 * @module test/security/attach-typing-never-answers-the-next-card
 * In `airlock attach`, `n` opens a line for the deny reason (and a refused token opens one for the approver
 * token). When the shown card ended elsewhere while the person typed there (decided in the console, expired,
 * cancelled), attach showed the next card at once and armed it after 400 ms — and the rest of the sentence
 * the person was still typing answered it: the `y` of "try again" allowed a card they never read (an `a`, as
 * in a hex token, allowed it for the whole session tree). The keys of an interrupted line never answer a card:
 * attach says the card ended and waits for Enter or Esc before it shows the next one. A real terminal (tmux),
 * a real `airlock serve`, two cards waiting together.
 */
import { beforeAll, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { serveFixture, type ServeProcess } from "../harness-serve.ts";
import { openTerminal } from "../tmux.ts";
import { apiOf, newRoot, startTurn, until, writeScriptedConfig } from "../integration/attach-helpers.ts";

const fixture = serveFixture("airlock-attach-typing-");
let server: ServeProcess;

beforeAll(async () => {
  writeScriptedConfig(
    fixture.dir,
    [
      "turns:",
      "  - tool_calls:",
      "      - name: code_execution__execute",
      "        arguments:",
      `          code: "return await Promise.allSettled([tools.developer__write_file({ path: 'a.txt', content: 'a' }), tools.developer__write_file({ path: 'b.txt', content: 'b' })])"`,
      '  - text: "both asked"',
      "",
    ].join("\n"),
  );
  server = await fixture.serve(["--config", join(fixture.dir, "airlock.yaml")]);
});

test("a deny reason still being typed when its card is decided elsewhere never answers the next card", async () => {
  const root = await newRoot(server.url, fixture.dir, "ws");
  const term = openTerminal([process.execPath, fixture.main, "attach", root.id, "--data-dir", fixture.dir, "--url", server.url], { env: { NO_COLOR: "1" } });
  try {
    await term.waitScreen(/attached to root ses_\w+ on http/);
    startTurn(server.url, fixture.dir, root.id, "go");
    const api = apiOf(server.url, fixture.dir);
    const cards = await until(async () => {
      const list = (await api("GET", `/sessions/${root.id}/actions`)).body.actions ?? [];
      return list.length === 2 ? (list as any[]) : undefined;
    }, "two cards");
    const first = (await term.waitScreen(/request (act_\w+) [\s\S]*allow\? \[y\] once/))[1]!;
    const second = cards.map((c) => c.request_id as string).find((id) => id !== first)!;
    // the person starts to deny the first card with a reason
    term.keys(["n"]);
    await term.waitScreen(/reason for the model/);
    term.keys(["do not write there,"], true);
    // meanwhile someone decides the first card elsewhere
    expect((await api("POST", `/actions/${first}`, { decision: "deny" })).status).toBe(200);
    await term.waitScreen(new RegExp(`card ${first} decided elsewhere`));
    // whatever attach shows now (the next card armed, or a line waiting for Enter), the person types on
    await term.waitScreen(/allow\? \[y\] once|Enter/);
    term.keys([" try another way"], true);
    // then Esc, and q (detach: it works on a card not yet armed, and when no card is shown)
    term.keys(["Escape", "q"]);
    await term.waitScreen(new RegExp(`detached; the session keeps running|allowed[^\\n]*${second}`));
    expect(term.screen()).not.toMatch(new RegExp(`allowed[^\\n]*${second}`));
    // the second card is still pending: none of those keys answered it
    expect((await api("GET", `/sessions/${root.id}/actions`)).body.actions.map((c: any) => c.request_id)).toEqual([second]);
    expect(existsSync(join(root.workspace, "b.txt")) || existsSync(join(root.workspace, "a.txt"))).toBe(false);
    expect((await api("POST", `/actions/${second}`, { decision: "deny" })).status).toBe(200);
  } finally {
    term.close();
  }
}, 120_000);
