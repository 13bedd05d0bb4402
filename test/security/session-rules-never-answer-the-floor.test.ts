/**
 * A session rule ("Allow for this session") is an allow rule like any other: it answers the mode's ask
 * and nothing else. Over the real runtime and HTTP API: after `Bash(cp:*)` is allowed for the session,
 * a `cp` the security floor asks about still parks a card that offers no rule (the floor needs proof
 * each time), and `allow_session` on it is refused `session_rule_not_offered`; a config rule's ask still
 * asks, a config rule's deny still refuses.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { harnessSse, startHarness, type Harness } from "../harness.ts";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const TURNS = `
turns:
  - tool_calls: [{ name: developer__shell, arguments: { command: "cp notes.txt copy.txt" } }]
  - tool_calls: [{ name: developer__shell, arguments: { command: "cp .env stolen.txt" } }]
  - tool_calls: [{ name: developer__shell, arguments: { command: "cp notes.txt asked.txt" } }]
  - tool_calls: [{ name: developer__shell, arguments: { command: "cp notes.txt denied.txt" } }]
  - text: "done"
`;

async function post(h: Harness, sessionId: string, requestId: string, decision: string, approver?: string) {
  const res = await h.api(`/sessions/${sessionId}/actions/${requestId}`, { method: "POST", json: { decision }, headers: approver ? { "X-Airlock-Approver": approver } : {} });
  return { status: res.status, body: (await res.json()) as any };
}

describe("session rules never answer the floor, a rule's ask or a rule's deny", () => {
  test("after Bash(cp:*) is allowed for the session, the floor's and a rule's asks still park cards without a suggested rule, and allow_session on them is refused", async () => {
    h = await startHarness({
      config: {
        provider: { name: "scripted", script: "turns.yaml" },
        mode: "smart",
        permissions: { ask: ["Bash(cp notes.txt asked.txt)"], deny: ["Bash(cp notes.txt denied.txt)"] },
      },
      files: { "turns.yaml": TURNS },
      workspaceFiles: { "notes.txt": "notes", ".env": "API_KEY=secret" },
    });
    const root = await h.createSession({ mode: "smart" });
    const s = await harnessSse(h, `/sessions/${root.id}/reply`, { method: "POST", json: { message: "go" } });
    const cards = () => s.events.filter((e) => e.event === "action_required").map((e) => e.data);

    const first = (await s.waitFor((e) => e.event === "action_required")).data;
    expect(first).toMatchObject({ inspector: "mode", suggested_rule: "Bash(cp:*)" });
    expect(await post(h, root.id, first.request_id, "allow_session")).toMatchObject({ status: 200, body: { rule: "Bash(cp:*)" } });

    // the floor asks about reading .env: a card (the session rule does not answer it), with no rule offered
    const floor = (await s.waitFor((e) => e.event === "action_required" && e.data.request_id !== first.request_id)).data;
    expect(floor).toMatchObject({ inspector: "sensitive_ops", requires_user_proof: true, arguments: { command: "cp .env stolen.txt" } });
    expect(floor.suggested_rule).toBeUndefined();
    // refused with or without the approver token; the card stays pending
    for (const token of [undefined, h.rt.tokens.approverToken]) {
      const r = await post(h, root.id, floor.request_id, "allow_session", token);
      expect(r).toMatchObject({ status: 409, body: { error: "session_rule_not_offered" } });
      expect(r.body.message).toContain("allow_once");
    }
    expect(h.rt.cards.get(floor.request_id)).toBeDefined();
    expect((await (await h.api(`/sessions/${root.id}/rules`)).json()) as any).toMatchObject({ rules: [{ rule: "Bash(cp:*)" }] });
    expect(await post(h, root.id, floor.request_id, "deny")).toMatchObject({ status: 200 });

    // a config rule's ask still asks, offering nothing
    const ruleAsk = (await s.waitFor((e) => e.event === "action_required" && e.data.arguments.command === "cp notes.txt asked.txt")).data;
    expect(ruleAsk).toMatchObject({ inspector: "rule" });
    expect(ruleAsk.suggested_rule).toBeUndefined();
    expect(await post(h, root.id, ruleAsk.request_id, "allow_session")).toMatchObject({ status: 409, body: { error: "session_rule_not_offered" } });
    expect(await post(h, root.id, ruleAsk.request_id, "deny")).toMatchObject({ status: 200 });

    const fin = await s.waitFor((e) => e.event === "turn_finished");
    expect(fin.data).toMatchObject({ status: "completed", answer: "done" });
    s.close();
    // a config rule's deny still refuses, with no card
    expect(cards().map((c) => c.request_id)).toEqual([first.request_id, floor.request_id, ruleAsk.request_id]);
    const denied = (await h.rt.store.listAudit({ kind: "call_judged" })).find((r) => (r.detail as any).arguments?.command === "cp notes.txt denied.txt" || JSON.stringify(r.detail).includes("denied.txt"));
    expect(denied).toMatchObject({ decision: "deny", code: "denied" });
    expect(existsSync(join(h.workspace, "copy.txt"))).toBe(true);
    for (const f of ["stolen.txt", "asked.txt", "denied.txt"]) expect(existsSync(join(h.workspace, f))).toBe(false);
    // every refused allow_session is in the audit log with its code
    const refused = (await h.rt.store.listAudit({ kind: "card_decision" })).filter((a) => a.code === "session_rule_not_offered");
    expect(refused.map((a) => a.request_id)).toEqual([floor.request_id, floor.request_id, ruleAsk.request_id]);
  });
});
