/**
 * `airlock attach --plain` through pipes against a real `airlock serve` (issue 18): a subagent's card is
 * printed as a block labelled with its chain and preceded by the BEL byte; `y ID` allows it and the call
 * runs; `n ID reason` denies it and the reason reaches the model's tool result; a card answered through
 * the HTTP API while attach waits is "decided elsewhere"; without SESSION it picks the busy root, and with
 * no busy root it says so and exits 1.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { serveFixture, type ServeProcess } from "../harness-serve.ts";
import { waitFor } from "../processes.ts";
import { apiOf, newRoot, spawnAttach, startTurn, SUBAGENT_CARD_SCRIPT, until, writeScriptedConfig, type AttachProcess } from "./attach-helpers.ts";

const fixture = serveFixture("airlock-attach-plain-");
const { dir, main } = fixture;
let server: ServeProcess;

beforeAll(async () => {
  writeScriptedConfig(dir, SUBAGENT_CARD_SCRIPT);
  server = await fixture.serve(["--config", join(dir, "airlock.yaml")]);
});

/** Attaches to `root` and waits for its first line. */
async function attachTo(root: string, extra: string[] = []): Promise<AttachProcess> {
  const a = spawnAttach(main, [root, "--plain", "--data-dir", dir, "--url", server.url, ...extra]);
  fixture.track(a.proc);
  await a.waitOut(/^attached to root /m);
  return a;
}

/** Waits for the subagent's card block; returns its request id and the child session id. */
async function subagentCard(a: AttachProcess): Promise<{ requestId: string; child: string }> {
  const m = await a.waitOut(/\[root›subagent#0\] developer__write_file \(asked in subagent#0, (ses_\w+)\)[\s\S]*?request (act_\w+)/);
  return { child: m[1]!, requestId: m[2]! };
}

describe("airlock attach --plain", () => {
  test("a subagent's card comes labelled with its chain after a BEL byte; `y ID` allows it once and the call runs", async () => {
    const root = await newRoot(server.url, dir, "ws-allow");
    const a = await attachTo(root.id);
    startTurn(server.url, dir, root.id, "go");
    const { requestId } = await subagentCard(a);
    const out = a.out();
    const bel = out.indexOf("\x07");
    expect(bel).toBeGreaterThanOrEqual(0);
    expect(bel).toBeLessThan(out.indexOf(`request ${requestId}`));
    // the card comes after the lines of the subagent that led to it (its stream is replayed from its first event)
    expect(out.indexOf("[root›subagent#0] → developer__write_file")).toBeGreaterThanOrEqual(0);
    expect(out.indexOf("[root›subagent#0] → developer__write_file")).toBeLessThan(bel);
    expect(out).toContain(`answer: y ${requestId} | n ${requestId} [reason] | a ${requestId}`);
    // one line per event, labelled with the chain; the name is printed, colours are off
    expect(out).toMatch(/^\[root\] → subagent__spawn \{"instructions":"write it"\}$/m);
    expect(out).not.toContain("\x1b[");
    expect(existsSync(join(root.workspace, "out.txt"))).toBe(false);

    await a.send(`y ${requestId}`);
    await a.waitOut(new RegExp(`developer__write_file: allowed once ${requestId}`));
    // the write tool creates the file, then writes it: wait for the text, not for the file alone
    const written = join(root.workspace, "out.txt");
    await waitFor(() => existsSync(written) && readFileSync(written, "utf8") === "w", "the allowed write to run");
    await a.waitOut(/^\[root\] ■ turn completed: root done$/m);
    a.proc.kill("SIGTERM");
    expect(await a.proc.exited).toBe(0);
  }, 120_000);

  test("`n ID reason` denies the card and the reason reaches the model's tool result", async () => {
    const root = await newRoot(server.url, dir, "ws-deny");
    const a = await attachTo(root.id);
    startTurn(server.url, dir, root.id, "go");
    const { requestId, child } = await subagentCard(a);
    await a.send(`n ${requestId} not on main, use a branch`);
    await a.waitOut(new RegExp(`denied ${requestId} \\(reason: not on main, use a branch\\)`));
    const api = apiOf(server.url, dir);
    const toolMessage = await until(async () => (await api("GET", `/sessions/${child}`)).body.messages.find((m: any) => m.role === "tool"), "the child's tool result");
    expect(toolMessage.is_error).toBe(true);
    expect(String(toolMessage.content)).toContain("not on main, use a branch");
    expect(existsSync(join(root.workspace, "out.txt"))).toBe(false);
    a.proc.kill("SIGTERM");
    expect(await a.proc.exited).toBe(0);
  }, 120_000);

  test("`a ID` allows the card for the session: the call runs and the tree gets the card's suggested rule", async () => {
    const root = await newRoot(server.url, dir, "ws-session");
    const a = await attachTo(root.id);
    startTurn(server.url, dir, root.id, "go");
    const { requestId } = await subagentCard(a);
    const rule = (await a.waitOut(/allow for this session adds the rule (\S+) /))[1]!;
    await a.send(`a ${requestId}`);
    await a.waitOut(new RegExp(`allowed for this session ${requestId} \\(rule ${rule.replace(/[()/.]/g, "\\$&")} now allows`));
    await waitFor(() => existsSync(join(root.workspace, "out.txt")), "the allowed write to run");
    const rules = await apiOf(server.url, dir)("GET", `/sessions/${root.id}/rules`);
    expect(rules.body.rules.map((r: any) => r.rule)).toEqual([rule]);
    a.proc.kill("SIGTERM");
    expect(await a.proc.exited).toBe(0);
  }, 120_000);

  test("a card answered through the HTTP API while attach waits is reported as decided elsewhere and leaves the queue", async () => {
    const root = await newRoot(server.url, dir, "ws-elsewhere");
    const a = await attachTo(root.id, ["--notify"]);
    startTurn(server.url, dir, root.id, "go");
    const { requestId } = await subagentCard(a);
    // --notify: an OSC 9 desktop notification with the bell
    expect(a.out()).toContain("\x07\x1b]9;airlock: developer__write_file waits for you (root›subagent#0)\x07");
    const r = await apiOf(server.url, dir)("POST", `/sessions/${root.id}/actions/${requestId}`, { decision: "deny", reason: "from curl" });
    expect(r.status).toBe(200);
    await a.waitOut(new RegExp(`card ${requestId} decided elsewhere: denied in ${root.id}`));
    const mark = a.out().length;
    await a.send(`y ${requestId}`);
    await a.waitOut(new RegExp(`\\? ${requestId} is not a pending card of this tree`), 60_000, mark);
    a.proc.kill("SIGTERM");
    expect(await a.proc.exited).toBe(0);
  }, 120_000);

  test("--exit-when-idle detaches once the tree has no running turn and no pending card", async () => {
    const root = await newRoot(server.url, dir, "ws-idle");
    startTurn(server.url, dir, root.id, "go");
    const api = apiOf(server.url, dir);
    const card = await until(async () => (await api("GET", `/sessions/${root.id}/actions`)).body.actions?.[0], "a card");
    const a = spawnAttach(main, [root.id, "--plain", "--exit-when-idle", "--data-dir", dir, "--url", server.url]);
    fixture.track(a.proc);
    await a.waitOut(new RegExp(`request ${card.request_id}`));
    await a.send(`y ${card.request_id}`);
    expect(await a.proc.exited).toBe(0);
    // lines of one session keep their order; the root's end comes before the detach line
    const out = a.out();
    expect(out).toEndWith("\nidle: no running turn and no pending card; detaching\n");
    expect(out).toContain("[root] ■ turn completed: root done\n");
    expect(out).toContain("[root›subagent#0] ■ turn completed: child done\n");
  }, 120_000);

  test("without SESSION it attaches to the newest root with a pending card; with none busy it says so and exits 1", async () => {
    const root = await newRoot(server.url, dir, "ws-default");
    startTurn(server.url, dir, root.id, "go");
    const api = apiOf(server.url, dir);
    const card = await until(async () => (await api("GET", `/sessions/${root.id}/actions`)).body.actions?.[0], "a card");
    const a = spawnAttach(main, ["--plain", "--data-dir", dir, "--url", server.url]);
    fixture.track(a.proc);
    await a.waitOut(new RegExp(`^attached to root ${root.id} `, "m"));
    await a.waitOut(new RegExp(`request ${card.request_id}`));
    await a.send(`y ${card.request_id}`);
    await a.waitOut(/^\[root\] ■ turn completed: root done$/m);
    a.proc.kill("SIGTERM");
    expect(await a.proc.exited).toBe(0);

    const none = spawnAttach(main, ["--plain", "--data-dir", dir, "--url", server.url]);
    fixture.track(none.proc);
    expect(await none.proc.exited).toBe(1);
    await waitFor(() => none.err().includes("\n"), "the error line");
    expect(none.err()).toContain("airlock: session_not_found: no root session on");
    expect(none.err()).toContain("name one: airlock attach SESSION");
  }, 120_000);
});
