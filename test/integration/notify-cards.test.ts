/**
 * notify: over the real runtime, HTTP server and a real HTTP receiver on loopback: a subagent's card is
 * sent once per notifier in each format (json, ntfy, slack) with its chain label, tool, reason, request
 * id, expiry and console link, never its arguments or a token; its end is sent once too; `console_url`
 * replaces the server's own URL in links; `/health` counts what was sent.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { startHarness, type Harness } from "../harness.ts";
import { startReceiver, type Receiver } from "../fixtures/webhook-receiver.ts";
import { decide } from "./gate-helpers.ts";
import { harnessSse } from "../harness.ts";

let h: Harness | undefined;
let r: Receiver | undefined;
afterEach(async () => {
  await h?.close();
  await r?.close();
  h = undefined;
  r = undefined;
});

const TREE = `
turns:
  - tool_calls: [{ name: subagent__spawn, arguments: { instructions: "child" } }]
  - text: "root done"
subagents:
  - turns:
      - tool_calls: [{ name: developer__write_file, arguments: { path: "secret-plan.txt", content: "ARGUMENT-CONTENT-NOT-SENT" } }]
      - text: "child done"
`;

const HEADER_SECRET = "tk_header_value_9d2e71";

async function start(notify: Record<string, unknown>): Promise<Harness> {
  return startHarness({
    config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "smart", notify },
    files: { "turns.yaml": TREE },
    env: { NOTIFY_AUTH: `Bearer ${HEADER_SECRET}` },
  });
}

describe("notify: cards over the real runtime", () => {
  test("a subagent's card reaches each format once with chain, tool, reason, request id, expiry and link; never its arguments or a token", async () => {
    r = startReceiver(() => 200);
    h = await start({
      notifiers: [
        { name: "json", webhook: { url: `${r.url}/json`, headers_env: { Authorization: "NOTIFY_AUTH" } } },
        { name: "ntfy", on: ["card_parked"], webhook: { url: `${r.url}/ntfy/airlock-cards`, format: "ntfy" } },
        { name: "slack", on: ["card_parked"], webhook: { url: `${r.url}/slack`, format: "slack" } },
      ],
    });
    const root = await h.createSession({ mode: "smart" });
    const reply = await harnessSse(h, `/sessions/${root.id}/reply`, { method: "POST", json: { message: "go" } });
    const card = (await reply.waitFor((e) => e.event === "action_required")).data;
    await r.waitFor(3);
    const [child] = await h.rt.store.listSessions({ parent: root.id });
    const link = `${h.url}/#/s/${root.id}/${card.request_id}`;

    const json = r.received.find((x) => x.path === "/json")!;
    expect(json.body).toMatchObject({
      event: "card_parked",
      request_id: card.request_id,
      session_id: child!.id,
      root_session_id: root.id,
      tool: "developer__write_file",
      inspector: "mode",
      reason: card.reason,
      requires_user_proof: false,
      expires_at: card.expires_at,
      url: link,
    });
    expect(json.body.chain_label).toMatch(/^root›subagent#\d+$/);
    expect(json.headers.authorization).toBe(`Bearer ${HEADER_SECRET}`);

    const ntfy = r.received.find((x) => x.path === "/ntfy/")!;
    expect(ntfy.body).toMatchObject({ topic: "airlock-cards", priority: 4, click: link, tags: ["lock"] });
    expect(ntfy.body.title).toContain("developer__write_file");
    expect(ntfy.body.message).toContain(json.body.chain_label);
    expect(ntfy.body.message).toContain(card.request_id);
    expect(ntfy.body.message).toContain(card.expires_at);

    const slack = r.received.find((x) => x.path === "/slack")!;
    expect(Object.keys(slack.body)).toEqual(["text"]);
    expect(slack.body.text).toContain(card.request_id);
    expect(slack.body.text).toContain(`<${link}|`);

    for (const x of r.received) {
      const text = JSON.stringify(x.body);
      expect(text).not.toContain("ARGUMENT-CONTENT-NOT-SENT");
      expect(text).not.toContain(h.token);
      expect(text).not.toContain(h.rt.tokens.approverToken);
      expect(text).not.toContain(HEADER_SECRET);
    }
    // once per card, though the card is published on the child and on the root
    expect(r.received.length).toBe(3);

    expect((await decide(h, root.id, card.request_id, "deny")).status).toBe(200);
    expect((await reply.waitFor((e) => e.event === "turn_finished")).data.status).toBe("completed");
    await r.waitFor(4);
    await h.rt.notify.idle();
    const resolved = r.received.filter((x) => x.body.event === "card_resolved");
    expect(resolved.length).toBe(1);
    expect(resolved[0]!.body).toMatchObject({ request_id: card.request_id, decision: "deny", decided_in: root.id, tool: "developer__write_file", url: link });
    const health = (await (await fetch(`${h.url}/health`)).json()) as any;
    expect(health.notify).toEqual({ sent: 4, failed: 0 });
  });

  test("a private session's card carries no text of its conversation: no reason, no title in the chain", async () => {
    r = startReceiver(() => 200);
    h = await start({ notifiers: [{ on: ["card_parked"], webhook: { url: r.url } }] });
    const root = await h.rt.createSession({ workspace: h.workspace, mode: "smart", privacy: "private", title: "PRIVATE-TITLE-NOT-SENT" });
    const reply = await harnessSse(h, `/sessions/${root.id}/reply`, { method: "POST", json: { message: "go" } });
    const card = (await reply.waitFor((e) => e.event === "action_required")).data;
    const [got] = await r.waitFor(1);
    expect(got!.body).toMatchObject({ request_id: card.request_id, tool: "developer__write_file", expires_at: card.expires_at });
    expect(got!.body.chain_label).toMatch(/^root›subagent#\d+$/);
    expect(got!.body.reason).not.toBe(card.reason);
    expect(JSON.stringify(got!.body)).not.toContain("PRIVATE-TITLE-NOT-SENT");
    reply.close();
  });

  test("console_url replaces the server's own URL in the card's link", async () => {
    r = startReceiver(() => 200);
    h = await start({ console_url: "https://airlock.tunnel.example/console/", notifiers: [{ on: ["card_parked"], webhook: { url: r.url } }] });
    const root = await h.createSession({ mode: "smart" });
    const reply = await harnessSse(h, `/sessions/${root.id}/reply`, { method: "POST", json: { message: "go" } });
    const card = (await reply.waitFor((e) => e.event === "action_required")).data;
    const [got] = await r.waitFor(1);
    expect(got!.body.url).toBe(`https://airlock.tunnel.example/console/#/s/${root.id}/${card.request_id}`);
    expect(JSON.stringify(got!.body)).not.toContain(h.url);
    reply.close();
  });
});
