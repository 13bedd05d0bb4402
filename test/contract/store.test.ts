/**
 * @module test/contract/store.test
 * The store modules give the same answers on SQLite and PostgreSQL (one suite body, test/contract/backends.ts):
 * sessions (create, children's spawn index, list, parent), turns (start, finish, list), messages (order,
 * tool calls, is_error, provider state), audit (buffered and direct rows, the decision-log query over a
 * session tree), session rules, trusted folders, token usage sums, schedules and runs (a removed
 * schedule's runs kept). Each test migrates a fresh database with its dialect's list first.
 */
import { expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { deleteSchedule, finishRun, getRun, insertRun, insertSchedule, listRuns, listSchedules, setLastFire } from "../../src/scheduler/store.ts";
import { queryAudit } from "../../src/store/audit-log.ts";
import { MIGRATIONS } from "../../src/store/db.ts";
import { migrateSql } from "../../src/store/migrate.ts";
import { PG_MIGRATIONS } from "../../src/store/migrations-pg.ts";
import { SessionRuleSets } from "../../src/gate/rules/session.ts";
import { SessionRules } from "../../src/store/session-rules.ts";
import { Store } from "../../src/store/store.ts";
import { TrustStore } from "../../src/store/trust.ts";
import { UsageLedger } from "../../src/store/usage.ts";
import { contract } from "./backends.ts";

const base = { workspace: "/w", mode: "smart", sandbox: "workspace-write", privacy: "public", headless: false, provider: "scripted" } as const;

contract("store", (backend) => {
  async function store(): Promise<Store> {
    const sql = (await backend.fresh()).open();
    await migrateSql(sql, backend.dialect === "postgres" ? PG_MIGRATIONS : MIGRATIONS);
    return new Store(sql);
  }

  test("sessions: create, children get spawn indexes from their root, list and look up", async () => {
    const s = await store();
    const root = await s.createSession({ ...base, title: "root" });
    expect(root).toMatchObject({ title: "root", headless: false, parent_session_id: null, workspace: "/w" });
    const c1 = await s.createSession({ ...base, parent_session_id: root.id });
    const c2 = await s.createSession({ ...base, parent_session_id: root.id });
    const g = await s.createSession({ ...base, parent_session_id: c1.id }, root.id);
    expect([c1.spawn_index, c2.spawn_index, g.spawn_index]).toEqual([0, 1, 2]);
    expect((await s.getSession(root.id))!.title).toBe("root");
    expect(await s.getSession("ses_nope")).toBeNull();
    expect((await s.listSessions({ parent: root.id })).map((x) => x.id)).toEqual([c1.id, c2.id]);
    expect((await s.listSessions({ parent: null })).map((x) => x.id)).toEqual([root.id]);
    expect((await s.listSessions()).length).toBe(4);
    expect(await s.parentOf(g.id)).toBe(c1.id);
    await expect(s.createSession({ ...base, parent_session_id: "ses_missing" })).rejects.toMatchObject({ code: "session_not_found" });
    expect((await s.listSessions()).length).toBe(4);
  });

  test("turns and messages: order, tool calls, errors and provider state round-trip", async () => {
    const s = await store();
    const ses = await s.createSession(base);
    const turn = await s.startTurn(ses.id);
    expect(turn.status).toBe("running");
    await s.appendMessages([
      { session_id: ses.id, turn_id: turn.id, role: "user", content: "hi" },
      { session_id: ses.id, turn_id: turn.id, role: "assistant", content: "", tool_calls: [{ id: "c1", name: "developer__shell", arguments: { command: "ls" } }], provider_state: { provider: "anthropic", data: { blocks: [1, 2] } } },
    ]);
    await s.appendMessage({ session_id: ses.id, turn_id: turn.id, role: "tool", content: "boom", tool_call_id: "c1", name: "developer__shell", is_error: true });
    await s.appendMessage({ session_id: ses.id, turn_id: turn.id, role: "assistant", content: "done ✓" });
    await s.finishTurn(turn.id, "completed", { answer: "done ✓" });
    const msgs = await s.listMessages(ses.id);
    expect(msgs.map((m) => [m.role, m.content])).toEqual([["user", "hi"], ["assistant", ""], ["tool", "boom"], ["assistant", "done ✓"]]);
    expect(msgs[1]!.tool_calls).toEqual([{ id: "c1", name: "developer__shell", arguments: { command: "ls" } }]);
    expect(msgs[1]!.provider_state).toEqual({ provider: "anthropic", data: { blocks: [1, 2] } });
    expect(msgs[2]).toMatchObject({ tool_call_id: "c1", is_error: true });
    expect(await s.getTurn(turn.id)).toMatchObject({ status: "completed", answer: "done ✓" });
    expect((await s.listTurns(ses.id)).map((t) => t.id)).toEqual([turn.id]);
    expect(await s.previousMessageId(msgs[2]!.id)).toBe(msgs[1]!.id);
  });

  test("audit: direct and buffered rows, the decision log over a session tree, newest first", async () => {
    const s = await store();
    const root = await s.createSession(base);
    const child = await s.createSession({ ...base, parent_session_id: root.id });
    const other = await s.createSession(base);
    await s.audit({ kind: "gate", outcome: "accepted", request_id: "r1", session_id: root.id, decision: "allow", detail: { tool: "a" } });
    s.auditSoon({ kind: "gate", outcome: "refused", request_id: "r2", session_id: child.id, home_session_id: child.id, decision: "deny", code: "denied" });
    s.auditSoon({ kind: "gate", outcome: "accepted", request_id: "r3", session_id: other.id, decision: "allow" });
    await s.flushAudit();
    expect((await s.listAudit({ request_id: "r1" }))[0]).toMatchObject({ kind: "gate", decision: "allow", detail: { tool: "a" } });
    const tree = await queryAudit(s, { session: root.id });
    expect(tree.map((r) => r.request_id)).toEqual(["r2", "r1"]);
    expect((await queryAudit(s, { decision: "denied" })).map((r) => r.request_id)).toEqual(["r2"]);
    expect(typeof tree[0]!.id).toBe("number");
  });

  test("audit: a direct row the engine refuses does not take the buffered rows with it (they are written, in their order, as a flush would)", async () => {
    const s = await store();
    await s.audit({ kind: "gate", outcome: "recorded", request_id: "first" });
    // the engine refuses the direct row: PostgreSQL a NUL in a TEXT column; SQLite a full database (its max_page_count:
    // the same SQLITE_FULL as a full disk) with room for the two small buffered rows but not for a 256 KB row
    let direct: Parameters<Store["audit"]>[0];
    if (backend.dialect === "postgres") direct = { kind: "card_decision", outcome: "refused", request_id: "act_\u0000nul", code: "not_found" };
    else {
      const pages = (await s.sql.get<{ n: number }>("SELECT page_count AS n FROM pragma_page_count()"))!.n;
      await s.sql.get(`PRAGMA max_page_count = ${pages + 8}`);
      direct = { kind: "card_parked", outcome: "recorded", request_id: "big", detail: { reason: "x".repeat(256 * 1024) } };
    }
    s.auditSoon({ kind: "call_judged", outcome: "recorded", request_id: "judged1", decision: "allow" });
    s.auditSoon({ kind: "call_judged", outcome: "recorded", request_id: "judged2", decision: "allow" });
    await expect(s.audit(direct)).rejects.toThrow();
    // the calls judged before it are in the log (main wrote them in their own transaction first)
    expect((await s.sql.all<{ request_id: string }>("SELECT request_id FROM audit ORDER BY id")).map((r) => r.request_id)).toEqual(["first", "judged1", "judged2"]);
    // and nothing is left buffered to be written twice
    await s.flushAudit();
    expect((await s.sql.get<{ n: number }>("SELECT COUNT(*) AS n FROM audit"))!.n).toBe(3);
  });

  test.skipIf(backend.dialect !== "postgres")("session rules changed through another process judge this one's next call at once (PostgreSQL: no per-process cache of a tree's rules)", async () => {
    const db = await backend.fresh();
    const sqlA = db.open();
    await migrateSql(sqlA, PG_MIGRATIONS);
    const a = new Store(sqlA);
    const b = new Store(db.open());
    const root = await a.createSession({ ...base });
    const sets = new SessionRuleSets(new SessionRules(a));
    const none = { allow: [], ask: [], deny: [] };
    expect([...(await sets.forSession(none, root.id)).session]).toEqual([]);
    // added through B: A's next judgement has it
    const added = await new SessionRules(b).add(root.id, "Bash(ls:*)");
    expect([...(await sets.forSession(none, root.id)).session]).toEqual(["Bash(ls:*)"]);
    // removed through B: A's next judgement no longer allows by it (it allowed, cached, before the fix)
    await new SessionRules(b).remove(root.id, added.id);
    expect([...(await sets.forSession(none, root.id)).session]).toEqual([]);
  });

  test("session rules, trusted folders and token usage", async () => {
    const s = await store();
    const root = await s.createSession(base);
    const child = await s.createSession({ ...base, parent_session_id: root.id });
    const rules = new SessionRules(s);
    const r = await rules.add(child.id, "Bash(npm test)", { actor: "user" });
    expect(r.root_session_id).toBe(root.id);
    expect((await rules.list(root.id)).map((x) => x.rule)).toEqual(["Bash(npm test)"]);
    await rules.remove(root.id, r.id, "user");
    expect(await rules.list(child.id)).toEqual([]);

    const dir = mkdtempSync(join(tmpdir(), "airlock-contract-trust-"));
    try {
      mkdirSync(join(dir, "sub"));
      const trust = new TrustStore(s);
      expect((await trust.add(dir)).already).toBe(false);
      expect((await trust.add(dir)).already).toBe(true);
      expect((await trust.list()).length).toBe(1);
      expect(await trust.trustedFolderOf(join(dir, "sub"))).not.toBeNull();
      await trust.revoke(dir);
      expect(await trust.list()).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }

    const usage = new UsageLedger(s);
    const t1 = await s.startTurn(root.id);
    const t2 = await s.startTurn(child.id);
    await usage.record({ session_id: root.id, turn_id: t1.id, provider: "scripted", usage: { input_tokens: 100, output_tokens: 10 } });
    await usage.record({ session_id: root.id, turn_id: t1.id, provider: "scripted", usage: { input_tokens: 50, output_tokens: 5, reasoning_tokens: 2 } });
    await usage.record({ session_id: child.id, turn_id: t2.id, provider: "scripted" });
    await usage.record({ session_id: child.id, turn_id: t2.id, provider: "scripted", usage: { input_tokens: 7, output_tokens: 1 } });
    expect(await usage.ofTurn(t1.id)).toMatchObject({ input_tokens: 150, output_tokens: 15 });
    const subtree = await usage.ofSubtree(root.id);
    expect(subtree).toMatchObject({ input_tokens: 157, output_tokens: 16 });
    expect(typeof subtree!.input_tokens).toBe("number");
  });

  test("schedules and runs: insert, list, finish; a removed schedule's runs are kept", async () => {
    const s = await store();
    const sch = await insertSchedule(s.sql, { name: "nightly", cron: "0 3 * * *", recipe_path: "/r.yaml", recipe_text: "steps: []", params: { a: 1 } });
    expect((await listSchedules(s.sql)).map((x) => [x.id, x.name, x.enabled])).toEqual([[sch.id, "nightly", true]]);
    await setLastFire(s.sql, sch.id, "2026-12-01T03:00:00.000Z");
    const run = await insertRun(s.sql, { schedule_id: sch.id, status: "running", trigger: "cron" });
    await finishRun(s.sql, run.id, { status: "completed", result: { ok: true } });
    await finishRun(s.sql, run.id, { status: "failed", result: null });
    expect(await getRun(s.sql, run.id)).toMatchObject({ status: "completed", result: { ok: true } });
    expect(await deleteSchedule(s.sql, sch.id)).toBe(true);
    expect(await listSchedules(s.sql)).toEqual([]);
    expect(await getRun(s.sql, run.id)).toMatchObject({ status: "completed" });
    expect(await deleteSchedule(s.sql, sch.id)).toBe(false);
  });
});
