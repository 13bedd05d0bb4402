/** The decision log's store side: deferred rows (`auditSoon`) are never lost or reordered by a read, a direct row or close; queries filter a session's tree. */
import { describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { exportAudit, queryAudit } from "./audit-log.ts";
import { Store, type NewSession } from "./store.ts";

const base: NewSession = { workspace: "/tmp/ws", mode: "smart", sandbox: "workspace-write", privacy: "public", headless: false, provider: "scripted" };

describe("deferred audit rows", () => {
  test("a read, a direct row and close write them first, in the order they were logged, with the time they were logged", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "airlock-audit-")), "airlock.db");
    const s = await Store.open(path);
    s.auditSoon({ kind: "call_judged", outcome: "recorded", decision: "allow" });
    s.auditSoon({ kind: "call_judged", outcome: "recorded", decision: "deny" });
    await s.audit({ kind: "card_parked", outcome: "recorded" });
    expect((await queryAudit(s, {})).map((r) => [r.kind, r.decision])).toEqual([
      ["card_parked", null],
      ["call_judged", "deny"],
      ["call_judged", "allow"],
    ]);
    s.auditSoon({ kind: "call_judged", outcome: "recorded", decision: "ask" });
    const loggedAt = new Date().toISOString();
    await s.close();
    const again = await Store.open(path);
    const rows = await Array.fromAsync(exportAudit(again));
    expect(rows.map((r) => r.decision)).toEqual(["allow", "deny", null, "ask"]);
    expect(rows.at(-1)!.at <= loggedAt).toBe(true);
    again.close();
  });

  test("a direct row after deferred ones is written with them in one transaction: one commit in the WAL, not two", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "airlock-audit-")), "airlock.db");
    const s = await Store.open(path);
    await s.audit({ kind: "card_parked", outcome: "recorded" }); // the WAL exists
    const before = walCommits(`${path}-wal`);
    s.auditSoon({ kind: "call_judged", outcome: "recorded", decision: "allow" });
    s.auditSoon({ kind: "call_judged", outcome: "recorded", decision: "deny" });
    await s.audit({ kind: "card_parked", outcome: "recorded", request_id: "act_after" });
    expect(walCommits(`${path}-wal`) - before).toBe(1);
    expect((await queryAudit(s, {})).map((r) => [r.kind, r.decision]).slice(0, 3)).toEqual([
      ["card_parked", null],
      ["call_judged", "deny"],
      ["call_judged", "allow"],
    ]);
    await s.close();
  });

  test("a row logged while close() flushes is written too, not dropped", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "airlock-audit-")), "airlock.db");
    const s = await Store.open(path);
    s.auditSoon({ kind: "call_judged", outcome: "recorded", request_id: "before_close" });
    const closing = s.close(); // its flush has taken the buffer and waits on its transaction
    s.auditSoon({ kind: "call_judged", outcome: "recorded", request_id: "during_close" });
    await closing;
    const again = await Store.open(path);
    expect((await queryAudit(again, {})).map((r) => r.request_id).sort()).toEqual(["before_close", "during_close"]);
    await again.close();
  });

  test("a session filter takes the session and every session under it, matched as the acting or the home session", async () => {
    const s = await Store.open(":memory:");
    const root = await s.createSession(base);
    const child = await s.createSession({ ...base, parent_session_id: root.id });
    const grand = await s.createSession({ ...base, parent_session_id: child.id }, root.id);
    const other = await s.createSession(base);
    s.auditSoon({ kind: "call_judged", outcome: "recorded", session_id: grand.id, home_session_id: grand.id });
    await s.audit({ kind: "card_decision", outcome: "refused", session_id: other.id, home_session_id: grand.id, code: "outside_scope" });
    await s.audit({ kind: "call_judged", outcome: "recorded", session_id: other.id, home_session_id: other.id });
    await s.audit({ kind: "call_judged", outcome: "recorded", session_id: root.id, home_session_id: root.id });
    const sessionsOf = async (id: string) => (await queryAudit(s, { session: id })).map((r) => r.session_id);
    expect(await sessionsOf(root.id)).toEqual([root.id, other.id, grand.id]);
    expect(await sessionsOf(child.id)).toEqual([other.id, grand.id]);
    expect(await sessionsOf(other.id)).toEqual([other.id, other.id]);
    expect((await queryAudit(s, { decision: "outside_scope" })).map((r) => r.kind)).toEqual(["card_decision"]);
    await expect(queryAudit(s, { session: "ses_nope" })).rejects.toThrow(expect.objectContaining({ code: "session_not_found" }));
    await s.close();
  });
});

/**
 * Commits in a WAL file (SQLite's file format, "WAL File Format"): frames of the current WAL (its header's salts)
 * whose header gives the database size after a commit (non-zero).
 */
function walCommits(walPath: string): number {
  const wal = readFileSync(walPath);
  const pageSize = wal.readUInt32BE(8);
  const salt1 = wal.readUInt32BE(16);
  const salt2 = wal.readUInt32BE(20);
  let commits = 0;
  for (let at = 32; at + 24 + pageSize <= wal.length; at += 24 + pageSize) {
    if (wal.readUInt32BE(at + 8) !== salt1 || wal.readUInt32BE(at + 12) !== salt2) break;
    if (wal.readUInt32BE(at + 4) !== 0) commits++;
  }
  return commits;
}
