import { describe, expect, test } from "bun:test";
import type { NewSession } from "../store/store.ts";
import { Store } from "../store/store.ts";
import { INTERRUPTED_CARD_WHY, interruptOrphanCards } from "./recovery.ts";

const base: NewSession = { workspace: "/tmp/ws", mode: "smart", sandbox: "workspace-write", privacy: "public", headless: false, provider: "scripted" };

async function park(s: Store, requestId: string, home: string, turnId?: string): Promise<void> {
  await s.audit({ kind: "card_parked", outcome: "recorded", request_id: requestId, session_id: home, home_session_id: home, detail: { tool: "developer__shell", ...(turnId ? { turn_id: turnId } : {}) } });
}

describe("approval.interruptOrphanCards", () => {
  test("a card whose turn is no longer running is closed as interrupted; a live turn's card, a decided card and an expired one are not", async () => {
    const s = await Store.open(":memory:");
    const a = await s.createSession(base);
    const b = await s.createSession(base);
    const dead = await s.startTurn(a.id);
    const live = await s.startTurn(b.id);
    await s.finishTurn(dead.id, "cancelled", {});
    park(s, "act_dead", a.id, dead.id);
    park(s, "act_live", b.id, live.id);
    park(s, "act_decided", a.id, dead.id);
    await s.audit({ kind: "card_decision", outcome: "accepted", request_id: "act_decided", session_id: a.id, home_session_id: a.id, decision: "deny" });
    park(s, "act_expired", a.id, dead.id);
    await s.audit({ kind: "card_decision", outcome: "recorded", request_id: "act_expired", home_session_id: a.id, decision: "expired" });
    park(s, "act_refused_only", a.id, dead.id);
    await s.audit({ kind: "card_decision", outcome: "refused", request_id: "act_refused_only", session_id: a.id, decision: "allow_once", code: "user_proof_required" });

    expect(await interruptOrphanCards(s)).toEqual(["act_dead", "act_refused_only"]);
    const rows = (await s.listAudit({ request_id: "act_dead" })).map((r) => ({ kind: r.kind, outcome: r.outcome, decision: r.decision, code: r.code, detail: r.detail }));
    expect(rows.at(-1)).toEqual({ kind: "card_decision", outcome: "recorded", decision: "interrupted", code: "interrupted", detail: { why: INTERRUPTED_CARD_WHY, turn_id: dead.id } });
    // idempotent: a second start closes nothing more
    expect(await interruptOrphanCards(s)).toEqual([]);
  });

  test("an old card row without turn_id is closed when its home session has no running turn, and kept while one runs", async () => {
    const s = await Store.open(":memory:");
    const a = await s.createSession(base);
    const t = await s.startTurn(a.id);
    park(s, "act_old", a.id);
    expect(await interruptOrphanCards(s)).toEqual([]);
    await s.finishTurn(t.id, "completed", {});
    expect(await interruptOrphanCards(s)).toEqual(["act_old"]);
  });
});
