/**
 * `airlock attach` in a real terminal (tmux) against a real `airlock serve` (issue 18): `n` asks for a reason
 * and Enter denies with it (the model's tool result carries it); a card decided through the HTTP API while
 * its prompt is shown cancels the prompt ("decided elsewhere"); a card that needs user proof, answered from a
 * data dir whose approver token the server refuses, asks for the token with hidden input and the typed
 * token allows the call (and with the server's data dir, --plain sends its token); the queue, oldest first, with skip.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { removeAfterAllTests } from "../cleanup.ts";
import { serveFixture, type ServeProcess } from "../harness-serve.ts";
import { waitFor } from "../processes.ts";
import { openTerminal, type Terminal } from "../tmux.ts";
import { apiOf, newRoot, spawnAttach, startTurn, until, SUBAGENT_CARD_SCRIPT, writeScriptedConfig } from "./attach-helpers.ts";

const subagents = serveFixture("airlock-attach-term-");
const proof = serveFixture("airlock-attach-proof-");
let server: ServeProcess;
let proofServer: ServeProcess;

beforeAll(async () => {
  writeScriptedConfig(subagents.dir, SUBAGENT_CARD_SCRIPT);
  // the root reads .env: the security floor asks, and an allow needs user proof
  writeScriptedConfig(proof.dir, ['turns:', '  - tool_calls: [{ name: developer__read_file, arguments: { path: ".env" } }]', '  - text: "read it"', ""].join("\n"));
  [server, proofServer] = await Promise.all([subagents.serve(["--config", join(subagents.dir, "airlock.yaml")]), proof.serve(["--config", join(proof.dir, "airlock.yaml")])]);
});

/** attach ROOT in a tmux terminal, waited on until attached. */
async function attachIn(main: string, root: string, dataDir: string, url: string): Promise<Terminal> {
  const term = openTerminal([process.execPath, main, "attach", root, "--data-dir", dataDir, "--url", url], { env: { NO_COLOR: "1" } });
  await term.waitScreen(/attached to root ses_\w+ on http/);
  return term;
}

/** Waits until the card of `root` is pending and shown armed; returns it. */
async function armedCard(term: Terminal, url: string, dataDir: string, root: string): Promise<any> {
  const api = apiOf(url, dataDir);
  const card = await until(async () => (await api("GET", `/sessions/${root}/actions`)).body.actions?.[0], "the card to park");
  await term.waitScreen(new RegExp(`request ${card.request_id}[\\s\\S]*allow\\? \\[y\\] once`));
  return card;
}

describe("airlock attach in a terminal", () => {
  test("n asks for a reason; Enter denies the call and the model's tool result carries the reason", async () => {
    const root = await newRoot(server.url, subagents.dir, "ws-deny");
    const term = await attachIn(subagents.main, root.id, subagents.dir, server.url);
    // attached before any turn runs: "the session keeps running" is not said of a session with none
    expect(term.screen()).toMatch(/attached to root ses_\w+ on http\S+ \(q or Ctrl-C detaches\)/);
    startTurn(server.url, subagents.dir, root.id, "go");
    const card = await armedCard(term, server.url, subagents.dir, root.id);
    // v shows the arguments again (they fit the screen: no pager) and arms the card anew
    term.keys(["v"]);
    await term.waitScreen(/\n {2}\{\n {4}"path": "out\.txt",\n {4}"content": "w"\n {2}\}\n {2}allow\? \[y\] once/);
    term.keys(["n"]);
    await term.waitScreen(/reason for the model \(Enter sends, empty for none, Esc goes back\):/);
    term.keys(["use a branch"], true);
    term.keys(["Enter"]);
    await term.waitScreen(new RegExp(`developer__write_file: denied ${card.request_id} \\(reason: use a branch\\)`));
    const api = apiOf(server.url, subagents.dir);
    const tool = await until(async () => (await api("GET", `/sessions/${card.home_session_id}`)).body.messages.find((m: any) => m.role === "tool"), "the child's tool result");
    expect(String(tool.content)).toContain("use a branch");
    expect(existsSync(join(root.workspace, "out.txt"))).toBe(false);
    term.close();
  }, 120_000);

  test("a card decided through the API while its prompt is shown cancels the prompt; a later y does nothing", async () => {
    const root = await newRoot(server.url, subagents.dir, "ws-elsewhere");
    const term = await attachIn(subagents.main, root.id, subagents.dir, server.url);
    startTurn(server.url, subagents.dir, root.id, "go");
    const card = await armedCard(term, server.url, subagents.dir, root.id);
    const r = await apiOf(server.url, subagents.dir)("POST", `/sessions/${root.id}/actions/${card.request_id}`, { decision: "deny" });
    expect(r.status).toBe(200);
    await term.waitScreen(new RegExp(`card ${card.request_id} decided elsewhere: denied in ${root.id}`));
    await term.waitScreen(/\[root\] ■ turn completed: root done/);
    term.keys(["y"]);
    term.keys(["C-c"]);
    // the turn has ended: nothing keeps running, and detaching does not say it does
    await term.waitScreen(/detached\s*\n\[exited 0\]/);
    expect(term.screen()).not.toContain("allowed once");
    expect(existsSync(join(root.workspace, "out.txt"))).toBe(false);
  }, 120_000);

  test("a proof card whose data-dir token the server refuses asks for the approver token, hidden; the typed token allows it", async () => {
    // a data dir holding the server's API token but another approver token (attach creates its own)
    const other = mkdtempSync(join(tmpdir(), "airlock-attach-other-"));
    removeAfterAllTests(other);
    copyFileSync(join(proof.dir, "api-token"), join(other, "api-token"));
    const root = await newRoot(proofServer.url, proof.dir, "ws");
    await Bun.write(join(root.workspace, ".env"), "API=1\n");
    const term = await attachIn(proof.main, root.id, other, proofServer.url);
    startTurn(proofServer.url, proof.dir, root.id, "go");
    const card = await armedCard(term, proofServer.url, proof.dir, root.id);
    expect(card.requires_user_proof).toBe(true);
    await term.waitScreen(/allowing needs the approver token \(sent from the data dir\)/);
    term.keys(["y"]);
    await term.waitScreen(new RegExp(`${card.request_id}: the approver token was refused \\(user_proof_invalid`));
    await term.waitScreen(/approver token \(hidden; Enter sends, Esc goes back\):/);
    const token = readFileSync(join(proof.dir, "approver-token"), "utf8").trim();
    term.keys([token], true);
    term.keys(["Enter"]);
    await term.waitScreen(new RegExp(`developer__read_file: allowed once ${card.request_id}`));
    await term.waitScreen(/\[root\] ■ turn completed: read it/);
    expect(term.screen()).not.toContain(token);
    const tool = await until(async () => (await apiOf(proofServer.url, proof.dir)("GET", `/sessions/${root.id}`)).body.messages.find((m: any) => m.role === "tool"), "the tool result");
    expect(tool.is_error ?? false).toBe(false);
    term.close();
  }, 120_000);
});

describe("airlock attach --plain: user proof", () => {
  test("a card that needs user proof is allowed with the approver token read from the data dir", async () => {
    const root = await newRoot(proofServer.url, proof.dir, "ws-plain");
    await Bun.write(join(root.workspace, ".env"), "API=1\n");
    const a = spawnAttach(proof.main, [root.id, "--plain", "--data-dir", proof.dir, "--url", proofServer.url]);
    proof.track(a.proc);
    await a.waitOut(/^attached to root /m);
    startTurn(proofServer.url, proof.dir, root.id, "go");
    const id = (await a.waitOut(/allowing needs the approver token \(sent from the data dir\)\n│ request (act_\w+)/))[1]!;
    await a.send(`y ${id}`);
    await a.waitOut(new RegExp(`developer__read_file: allowed once ${id}`));
    await a.waitOut(/^\[root\] ■ turn completed: read it$/m);
    a.proc.kill("SIGTERM");
    expect(await a.proc.exited).toBe(0);
  }, 120_000);
});

const queue = serveFixture("airlock-attach-queue-");
let queueServer: ServeProcess;

beforeAll(async () => {
  // one script makes two calls at once: two cards wait together
  writeScriptedConfig(
    queue.dir,
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
  queueServer = await queue.serve(["--config", join(queue.dir, "airlock.yaml")]);
});

describe("airlock attach in a terminal: the queue", () => {
  test("cards come one at a time, oldest first, with how many more wait; s skips one, r brings it back", async () => {
    const root = await newRoot(queueServer.url, queue.dir, "ws");
    const term = await attachIn(queue.main, root.id, queue.dir, queueServer.url);
    startTurn(queueServer.url, queue.dir, root.id, "go");
    const api = apiOf(queueServer.url, queue.dir);
    const cards = await until(async () => {
      const list = (await api("GET", `/sessions/${root.id}/actions`)).body.actions ?? [];
      return list.length === 2 ? (list as any[]) : undefined;
    }, "two cards");
    // the first is shown (with "1 more pending" when both were there already); the other waits, with a line
    const first = (await term.waitScreen(/request (act_\w+) [\s\S]*allow\? \[y\] once/))[1]!;
    const second = cards.map((c) => c.request_id).find((id: string) => id !== first)!;
    expect(cards[0].request_id).toBe(first); // the API lists cards oldest first
    await term.waitScreen(new RegExp(`card ${second} waits \\(1 more pending\\)|request ${first} .*\\n│ 1 more pending`));

    term.keys(["s"]);
    await term.waitScreen(new RegExp(`skipped ${first} \\(still pending\\)[\\s\\S]*request ${second}[\\s\\S]*allow\\? \\[y\\] once`));
    term.keys(["y"]);
    await term.waitScreen(new RegExp(`developer__write_file: allowed once ${second}`));
    await term.waitScreen(/1 skipped card\(s\) still pending: r shows them again/);
    expect((await api("GET", `/sessions/${root.id}/actions`)).body.actions.map((c: any) => c.request_id)).toEqual([first]);

    term.keys(["r"]);
    await term.waitScreen(new RegExp(`allowed once ${second}[\\s\\S]*request ${first}[\\s\\S]*allow\\? \\[y\\] once`));
    term.keys(["n"]);
    await term.waitScreen(/reason for the model/);
    term.keys(["Enter"]);
    await term.waitScreen(new RegExp(`developer__write_file: denied ${first}`));
    await term.waitScreen(/\[root\] ■ turn completed: both asked/);
    expect((await api("GET", `/sessions/${root.id}/actions`)).body.actions).toEqual([]);
    term.close();
  }, 120_000);
});
