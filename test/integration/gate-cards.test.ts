/**
 * The gate over the real runtime, HTTP and SSE with the scripted provider driving root, child and
 * grandchild: cards escalate to the root, are answered once from a surface, and never reach a conversation.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { TypedEvent } from "../../src/bus/bus.ts";
import { harnessSse, waitForBus, type Harness } from "../harness.ts";
import { decide, lingering, startGateHarness } from "./gate-helpers.ts";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const TREE = `
turns:
  - tool_calls: [{ name: subagent__spawn, arguments: { instructions: "child" } }]
  - text: "root done"
subagents:
  - turns:
      - tool_calls: [{ name: subagent__spawn, arguments: { instructions: "grandchild" } }]
      - text: "child done"
  - turns:
      - tool_calls:
          - name: code_execution__execute
            arguments:
              code: |
                const path = ["made", "txt"].join(".");  // composed at run time: the gate sees the concrete value
                return await tools.developer__write_file({ path, content: "from the grandchild" });
      - text: "grandchild done"
`;

describe("gate cards across root, child and grandchild", () => {
  test("a grandchild's script ask reaches the root's /reply stream, is answered once from the root, and the call runs once", async () => {
    h = await startGateHarness({ config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "smart" }, files: { "turns.yaml": TREE } });
    const root = await h.createSession({ mode: "smart" });
    const published = new Map<string, number>();
    h.rt.bus.subscribeAll((ev) => {
      if (ev.type === "action_required") published.set(`${ev.session_id}:${ev.data.request_id}`, performance.now());
    });
    const reply = await harnessSse(h, `/sessions/${root.id}/reply`, { method: "POST", json: { message: "go" } });
    const cardEv = await reply.waitFor((e) => e.event === "action_required");
    const receivedAt = performance.now();
    const card = cardEv.data;
    const [child] = await h.rt.store.listSessions({ parent: root.id });
    const [grand] = await h.rt.store.listSessions({ parent: child!.id });
    expect(card).toMatchObject({
      home_session_id: grand!.id,
      surfaced_in: root.id,
      tool: "developer__write_file",
      arguments: { path: "made.txt", content: "from the grandchild" },
      inspector: "mode",
      requires_user_proof: false,
      user_only: true,
    });
    // delivered without waiting on anything (the latency itself is scripts/bench/approvals.ts park_to_root_sse)
    expect(receivedAt - published.get(`${root.id}:${card.request_id}`)!).toBeLessThan(20_000);
    // the same request id is homed in the grandchild
    const homeActions = (await (await h.api(`/sessions/${grand!.id}/actions`)).json()) as any;
    expect(homeActions.actions.map((c: any) => [c.request_id, c.surfaced_in])).toEqual([[card.request_id, grand!.id]]);

    // a sibling, an unrelated session and the middle child (not a surface) get 403; the card stays pending
    const sibling = await h.createSession({ parent_session_id: root.id });
    const unrelated = await h.createSession();
    for (const who of [sibling.id, unrelated.id, child!.id]) {
      const r = await decide(h, who, card.request_id, "allow_once");
      expect(r).toMatchObject({ status: 403, body: { error: "outside_scope" } });
    }
    const middle = (await (await h.api(`/sessions/${child!.id}/actions`)).json()) as any;
    expect(middle.actions).toEqual([]);
    expect(((await (await h.api(`/sessions/${root.id}/actions`)).json()) as any).actions.map((c: any) => c.request_id)).toEqual([card.request_id]);
    expect(existsSync(join(h.workspace, "made.txt"))).toBe(false);

    // late observers: the root (escalation surface) and the grandchild (home) see the card in their snapshot; the middle does not
    for (const [sid, n] of [[root.id, 1], [grand!.id, 1], [child!.id, 0]] as const) {
      const obs = await harnessSse(h, `/sessions/${sid}/events`);
      const snap = await obs.waitFor((e) => e.event === "snapshot");
      expect(snap.data.pending_actions.map((c: any) => c.request_id)).toEqual(n ? [card.request_id] : []);
      obs.close();
    }

    expect(await decide(h, root.id, card.request_id, "allow_once")).toMatchObject({ status: 200, body: { decision: "allow_once", decided_in: root.id } });
    expect(await decide(h, root.id, card.request_id, "deny")).toMatchObject({ status: 409, body: { error: "already_decided" } });
    const fin = await reply.waitFor((e) => e.event === "turn_finished");
    expect(fin.data).toMatchObject({ status: "completed", answer: "root done" });
    expect(readFileSync(join(h.workspace, "made.txt"), "utf8")).toBe("from the grandchild");
    expect(reply.events.filter((e) => e.event === "action_resolved").map((e) => e.data)).toEqual([
      { request_id: card.request_id, decision: "allow_once", decided_in: root.id },
    ]);

    // the grandchild's call ran exactly once
    const writes = h.rt.bus.since(grand!.id, 0)!.filter((e): e is TypedEvent<"tool_result"> => e.type === "tool_result" && e.data.tool === "developer__write_file");
    expect(writes.map((e) => e.data.ok)).toEqual([true]);
    // no conversation holds the card
    for (const sid of [root.id, child!.id, grand!.id]) {
      for (const m of await h.rt.store.listMessages(sid)) expect(JSON.stringify(m)).not.toContain(card.request_id);
    }
    // reconnecting after the decision shows no stale card
    const again = await harnessSse(h, `/sessions/${root.id}/events`);
    expect((await again.waitFor((e) => e.event === "snapshot")).data.pending_actions).toEqual([]);
    again.close();
    // every refused attempt is in the audit log with the session it came from
    const audit = (await h.rt.store.listAudit({ request_id: card.request_id })).filter((a) => a.kind === "card_decision");
    expect(audit.map((a) => [a.session_id, a.outcome, a.code])).toEqual([
      [sibling.id, "refused", "outside_scope"],
      [unrelated.id, "refused", "outside_scope"],
      [child!.id, "refused", "outside_scope"],
      [root.id, "accepted", null],
      [root.id, "refused", "already_decided"],
    ]);
  });

  test("an unproven allow is refused at the surface exactly as at home; the approver token allows", async () => {
    h = await startGateHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous" },
      files: {
        "turns.yaml": `
turns:
  - tool_calls: [{ name: subagent__spawn, arguments: { instructions: "child" } }]
  - text: "root done"
subagents:
  - turns:
      - tool_calls: [{ name: developer__read_file, arguments: { path: ".env" } }]
      - text: "child done"
`,
      },
      workspaceFiles: { ".env": "API=1" },
    });
    const root = await h.createSession({ mode: "autonomous" });
    const reply = await harnessSse(h, `/sessions/${root.id}/reply`, { method: "POST", json: { message: "go" } });
    const card = (await reply.waitFor((e) => e.event === "action_required")).data;
    expect(card).toMatchObject({ inspector: "sensitive_ops", requires_user_proof: true, tool: "developer__read_file" });
    const atHome = await decide(h, card.home_session_id, card.request_id, "allow_once");
    const atRoot = await decide(h, root.id, card.request_id, "allow_once");
    expect(atHome.status).toBe(403);
    expect(atRoot.status).toBe(403);
    expect(atHome.body.error).toBe("user_proof_required");
    expect(atRoot.body).toEqual(atHome.body);
    expect(atRoot.body.message).toContain("X-Airlock-Approver");
    // a wrong token is refused alike at home and at the surface, with its own code
    const wrongAtHome = await decide(h, card.home_session_id, card.request_id, "allow_once", "not-the-token");
    const wrongAtRoot = await decide(h, root.id, card.request_id, "allow_once", "not-the-token");
    expect(wrongAtHome).toMatchObject({ status: 403, body: { error: "user_proof_invalid" } });
    expect(wrongAtRoot.body).toEqual(wrongAtHome.body);
    expect(await decide(h, root.id, card.request_id, "allow_once", h.rt.tokens.approverToken)).toMatchObject({ status: 200 });
    await reply.waitFor((e) => e.event === "turn_finished");
    const tool = (await h.rt.store.listMessages(card.home_session_id)).find((m) => m.role === "tool")!;
    expect(tool.content).toContain("API=1");
  });

  test("a call from a script that outlived its turn is refused gate_no_session", async () => {
    lingering.length = 0;
    h = await startGateHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous" },
      files: { "turns.yaml": `turns:\n  - tool_calls: [{ name: testscript__run, arguments: { keep_alive: true } }]\n  - text: done\n` },
    });
    const s = await h.createSession({ mode: "autonomous" });
    const r = await h.rt.runTurn(s.id, "go");
    expect(r.status).toBe("completed");
    const late = await lingering[0]!();
    expect(late).toMatchObject({ ok: false, error: { code: "gate_no_session" } });
    expect(h.rt.bus.since(s.id, 0)!.filter((e) => e.type === "tool_request" && e.data.tool === "developer__list_dir")).toEqual([]);
  });
});

describe("permits over the real runtime", () => {
  test("with max_concurrent_calls 1, two parked calls do not stop a third session, and a parent blocked on its child completes", async () => {
    h = await startGateHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, limits: { max_concurrent_calls: 1 } },
      files: {
        "turns.yaml": `
turns:
  - tool_calls: [{ name: developer__write_file, arguments: { path: "w.txt", content: "x" } }]
  - text: "written"
`,
      },
    });
    const a = await h.createSession({ mode: "smart" });
    const b = await h.createSession({ mode: "smart" });
    const c = await h.createSession({ mode: "autonomous" });
    const ra = h.rt.runTurn(a.id, "go");
    const rb = h.rt.runTurn(b.id, "go");
    await waitForBus(h.rt, () => h!.rt.cards.size === 2);
    expect(h.rt.permits.inUse).toBe(0);
    expect(await h.rt.runTurn(c.id, "go")).toMatchObject({ status: "completed", answer: "written" });
    for (const s of [a, b]) {
      const [card] = h.rt.cards.listForSession(s.id);
      expect((await decide(h, s.id, card!.request_id, "deny")).status).toBe(200);
    }
    expect((await Promise.all([ra, rb])).map((r) => r.status)).toEqual(["completed", "completed"]);
    expect(h.rt.permits.inUse).toBe(0);
  });

  test("a parent waiting on a child whose call needs the only permit completes", async () => {
    h = await startGateHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, limits: { max_concurrent_calls: 1 }, mode: "autonomous" },
      files: {
        "turns.yaml": `
turns:
  - tool_calls: [{ name: subagent__spawn, arguments: { instructions: "child" } }]
  - text: "root done"
subagents:
  - turns:
      - tool_calls: [{ name: developer__list_dir, arguments: { path: "." } }]
      - text: "child done"
`,
      },
    });
    const s = await h.createSession({ mode: "autonomous" });
    expect(await h.rt.runTurn(s.id, "go")).toMatchObject({ status: "completed", answer: "root done" });
  });
});
