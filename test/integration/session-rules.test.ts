/**
 * "Allow for this session" over the real runtime and HTTP API, the scripted provider driving a root and
 * its child: a card offers the narrowest rule covering the call (`suggested_rule`); `allow_session`
 * runs the call and stores the rule for the session tree, so a later matching call in a child runs
 * without a card while another tree still asks; the tree's rules are listed at `GET /sessions/:id/rules`,
 * a DELETE removes one (the next call asks again), and they survive a restart.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { harnessSse, startHarness, type Harness } from "../harness.ts";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

// every root session replays these turns from its first; each `reply` continues where the last stopped
const TURNS = `
turns:
  - tool_calls: [{ name: developer__shell, arguments: { command: "touch one.txt" } }]
  - tool_calls: [{ name: subagent__spawn, arguments: { instructions: "child" } }]
  - text: "root done"
  - tool_calls: [{ name: developer__shell, arguments: { command: "touch after-delete.txt" } }]
  - text: "again done"
subagents:
  - turns:
      - tool_calls: [{ name: developer__shell, arguments: { command: "touch -c two.txt three.txt && touch two.txt" } }]
      - text: "child done"
`;

const CONFIG = { provider: { name: "scripted", script: "turns.yaml" }, mode: "smart" };

async function json(h: Harness, path: string, init: RequestInit & { json?: unknown } = {}): Promise<{ status: number; body: any }> {
  const res = await h.api(path, init);
  return { status: res.status, body: await res.json() };
}

/** Starts a reply on `sessionId` and returns its stream. */
function reply(h: Harness, sessionId: string) {
  return harnessSse(h, `/sessions/${sessionId}/reply`, { method: "POST", json: { message: "go" } });
}

describe("allow for this session", () => {
  test("applies to a later call in a child, not to another tree; listed; removed by DELETE (the next call asks again)", async () => {
    h = await startHarness({ config: CONFIG, files: { "turns.yaml": TURNS } });
    const root = await h.createSession({ mode: "smart" });
    const s1 = await reply(h, root.id);
    const card = (await s1.waitFor((e) => e.event === "action_required")).data;
    // shown before it is taken: on the card, in the list of pending cards
    expect(card).toMatchObject({ tool: "developer__shell", inspector: "mode", requires_user_proof: false, suggested_rule: "Bash(touch:*)" });
    expect((await json(h, `/sessions/${root.id}/actions`)).body.actions[0].suggested_rule).toBe("Bash(touch:*)");
    expect((await json(h, `/sessions/${root.id}/rules`)).body).toEqual({ rules: [] });

    const answered = await json(h, `/sessions/${root.id}/actions/${card.request_id}`, { method: "POST", json: { decision: "allow_session" } });
    expect(answered).toMatchObject({ status: 200, body: { decision: "allow_session", decided_in: root.id, rule: "Bash(touch:*)" } });
    const ruleId: string = answered.body.rule_id;
    expect(ruleId).toMatch(/^rul_/);

    const fin = await s1.waitFor((e) => e.event === "turn_finished");
    expect(fin.data).toMatchObject({ status: "completed", answer: "root done" });
    s1.close();
    // the allowed call ran, and the child's later compound call (every part covered) ran without a card
    expect(existsSync(join(h.workspace, "one.txt"))).toBe(true);
    expect(existsSync(join(h.workspace, "two.txt"))).toBe(true);
    expect(s1.events.filter((e) => e.event === "action_required").map((e) => e.data.request_id)).toEqual([card.request_id]);
    const [child] = await h.rt.store.listSessions({ parent: root.id });
    const childCalls = (await h.rt.store.listAudit({ kind: "call_judged" })).filter((r) => r.session_id === child!.id && (r.detail as any).tool === "developer__shell");
    expect(childCalls.map((r) => [r.decision, (r.detail as any).inspector, (r.detail as any).rule, (r.detail as any).session_rule, (r.detail as any).ran])).toEqual([["allow", "rule", "Bash(touch:*)", true, true]]);

    // listed for the tree, from the root and from the child; audited with who added it
    const listed = { rules: [{ id: ruleId, root_session_id: root.id, rule: "Bash(touch:*)", request_id: card.request_id, added_in: root.id, actor: "http", created_at: expect.any(String) }] };
    expect((await json(h, `/sessions/${root.id}/rules`)).body).toEqual(listed);
    expect((await json(h, `/sessions/${child!.id}/rules`)).body).toEqual(listed);
    const added = await h.rt.store.listAudit({ kind: "session_rule_added" });
    expect(added.map((a) => [a.request_id, a.session_id, a.home_session_id, a.decision, a.actor, a.detail])).toEqual([
      [card.request_id, root.id, root.id, "allow_session", "http", { rule: "Bash(touch:*)", rule_id: ruleId, root_session_id: root.id, proof: false }],
    ]);

    // another tree: the same call still asks (and still offers the rule); its rules are its own
    const other = await h.createSession({ mode: "smart" });
    expect((await json(h, `/sessions/${other.id}/rules`)).body).toEqual({ rules: [] });
    const s2 = await reply(h, other.id);
    const otherCard = (await s2.waitFor((e) => e.event === "action_required")).data;
    expect(otherCard).toMatchObject({ home_session_id: other.id, tool: "developer__shell", arguments: { command: "touch one.txt" }, suggested_rule: "Bash(touch:*)" });
    // nor can the other tree remove the first tree's rule
    expect(await json(h, `/sessions/${other.id}/rules/${ruleId}`, { method: "DELETE" })).toMatchObject({ status: 404, body: { error: "not_found" } });
    expect(await json(h, `/sessions/${other.id}/cancel`, { method: "POST" })).toMatchObject({ status: 200 });
    await s2.waitFor((e) => e.event === "turn_finished");
    s2.close();

    // removed from the child's side of the tree: gone for the whole tree, and the next call asks again
    expect(await json(h, `/sessions/${child!.id}/rules/${ruleId}`, { method: "DELETE" })).toMatchObject({ status: 200, body: { removed: { id: ruleId, rule: "Bash(touch:*)" } } });
    expect((await json(h, `/sessions/${root.id}/rules`)).body).toEqual({ rules: [] });
    expect(await json(h, `/sessions/${root.id}/rules/${ruleId}`, { method: "DELETE" })).toMatchObject({ status: 404, body: { error: "not_found" } });
    expect((await h.rt.store.listAudit({ kind: "session_rule_removed" })).map((a) => [a.session_id, a.home_session_id, (a.detail as any).rule_id])).toEqual([[child!.id, root.id, ruleId]]);
    const s3 = await reply(h, root.id);
    const again = (await s3.waitFor((e) => e.event === "action_required")).data;
    expect(again).toMatchObject({ tool: "developer__shell", arguments: { command: "touch after-delete.txt" }, inspector: "mode" });
    expect(existsSync(join(h.workspace, "after-delete.txt"))).toBe(false);
    expect(await json(h, `/sessions/${root.id}/actions/${again.request_id}`, { method: "POST", json: { decision: "deny" } })).toMatchObject({ status: 200 });
    await s3.waitFor((e) => e.event === "turn_finished");
    s3.close();
  });

  test("a session rule is stored: after a restart it is listed and still answers the tree's calls", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "airlock-session-rules-"));
    try {
      h = await startHarness({ config: CONFIG, files: { "turns.yaml": TURNS }, dataDir });
      const root = await h.createSession({ mode: "smart" });
      const s1 = await reply(h, root.id);
      const card = (await s1.waitFor((e) => e.event === "action_required")).data;
      const answered = await json(h, `/sessions/${root.id}/actions/${card.request_id}`, { method: "POST", json: { decision: "allow_session" } });
      expect(answered.status).toBe(200);
      await s1.waitFor((e) => e.event === "turn_finished");
      s1.close();
      await h.close();
      h = undefined;

      h = await startHarness({ config: CONFIG, files: { "turns.yaml": TURNS }, dataDir });
      expect((await json(h, `/sessions/${root.id}/rules`)).body.rules.map((r: any) => [r.id, r.rule])).toEqual([[answered.body.rule_id, "Bash(touch:*)"]]);
      // the root's next reply runs `touch after-delete.txt`: the stored rule answers it, no card
      const s2 = await reply(h, root.id);
      const fin = await s2.waitFor((e) => e.event === "turn_finished");
      expect(fin.data).toMatchObject({ status: "completed", answer: "again done" });
      expect(s2.events.filter((e) => e.event === "action_required")).toEqual([]);
      expect(existsSync(join(h.workspace, "after-delete.txt"))).toBe(true);
      s2.close();
    } finally {
      await h?.close();
      h = undefined;
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
