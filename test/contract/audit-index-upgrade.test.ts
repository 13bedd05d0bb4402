/**
 * @module test/contract/audit-index-upgrade.test
 * Schema version 13 against cards parked before the upgrade (SQLite, where start-up recovery runs): a version-12
 * file holds 300 cards parked by a process that died (its turn left `running`), in every state — answered
 * (accepted), closed (recorded), refused only, and unanswered with rows of OTHER kinds carrying their request id
 * (`call_judged`, `session_rule_added`, `card_stale`: no longer in the request index). Three processes start on it
 * at once (each migrates, then recovers): the version is applied once, every unanswered card is closed
 * `interrupted` exactly once (by one of them), no answered or closed card gets a second close.
 */
import { expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MIGRATIONS } from "../../src/store/db.ts";
import { migrateSql, schemaVersionSql } from "../../src/store/migrate.ts";
import { Store } from "../../src/store/store.ts";
import { openSqliteFile } from "./backends.ts";

const CHILD = join(import.meta.dir, "audit-index-upgrade-child.ts");

test("v12 file with cards parked by a dead process; three processes start at once: one version 13, each open card closed once", async () => {
  const dir = mkdtempSync(join(tmpdir(), "airlock-audit-upgrade-"));
  try {
    const file = join(dir, "airlock.db");
    const sql = openSqliteFile(file);
    await migrateSql(sql, MIGRATIONS.filter((m) => m.version <= 12));
    const now = "2026-12-02T10:00:00.000Z";
    await sql.run("INSERT INTO sessions (id, parent_session_id, workspace, mode, sandbox, provider, created_at, updated_at) VALUES ('ses_a', NULL, '/w', 'smart', 'read-only', 'scripted', ?, ?)", [now, now]);
    // a turn of a process that is gone (no such pid): start-up marks it interrupted, so its cards are orphans
    await sql.run("INSERT INTO turns (id, session_id, status, started_at, owner_pid, owner_start) VALUES ('turn_dead', 'ses_a', 'running', ?, 999999999, 'gone')", [now]);
    const store = new Store(sql);
    const open: string[] = [];
    for (let i = 0; i < 300; i++) {
      const req = `act_${String(i).padStart(4, "0")}`;
      await store.audit({ kind: "card_parked", outcome: "recorded", request_id: req, session_id: "ses_a", home_session_id: "ses_a", detail: { turn_id: "turn_dead" } });
      await store.audit({ kind: "call_judged", outcome: "recorded", request_id: req, session_id: "ses_a", home_session_id: "ses_a", decision: "ask" });
      switch (i % 6) {
        case 1:
          await store.audit({ kind: "card_decision", outcome: "accepted", request_id: req, session_id: "ses_a", home_session_id: "ses_a", decision: "allow_once", detail: { proof: true } });
          break;
        case 2:
          await store.audit({ kind: "card_decision", outcome: "recorded", request_id: req, home_session_id: "ses_a", decision: "expired" });
          break;
        case 3:
          await store.audit({ kind: "card_decision", outcome: "refused", request_id: req, session_id: "ses_a", decision: "allow_once", code: "outside_scope", detail: { proof: false } });
          open.push(req);
          break;
        case 4:
          await store.audit({ kind: "session_rule_added", outcome: "accepted", request_id: req, session_id: "ses_a", home_session_id: "ses_a", decision: "allow_session" });
          open.push(req);
          break;
        case 5:
          await store.audit({ kind: "card_stale", outcome: "recorded", request_id: req, session_id: "ses_a", home_session_id: "ses_a", decision: "approval_stale" });
          open.push(req);
          break;
        default:
          open.push(req);
      }
    }
    await store.close();

    const starts = [0, 1, 2].map(() => Bun.spawn([process.execPath, CHILD, file], { stdout: "pipe", stderr: "pipe" }));
    const outs = await Promise.all(
      starts.map(async (p) => {
        const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
        expect({ code, err }).toEqual({ code: 0, err: "" });
        return (JSON.parse(out) as { closed: string[] }).closed;
      }),
    );
    // one of them closed every open card, the others none
    expect(outs.map((c) => c.length).sort((a, b) => a - b)).toEqual([0, 0, open.length]);
    expect(outs.flat().sort()).toEqual(open);

    const after = openSqliteFile(file);
    // 13 and every later version (14: the audit table copied without AUTOINCREMENT) applied once
    const latest = Math.max(...MIGRATIONS.map((m) => m.version));
    expect(await schemaVersionSql(after)).toBe(latest);
    for (let v = 13; v <= latest; v++) expect((await after.all<{ version: number }>("SELECT version FROM schema_version WHERE version = ?", [v])).length).toBe(1);
    const closes = await after.all<{ request_id: string; n: number }>(
      "SELECT p.request_id, (SELECT COUNT(*) FROM audit d WHERE d.request_id = p.request_id AND d.kind = 'card_decision' AND d.outcome IN ('accepted', 'recorded')) AS n FROM audit p WHERE p.kind = 'card_parked' ORDER BY p.id",
    );
    expect(closes.length).toBe(300);
    expect(closes.filter((c) => Number(c.n) !== 1)).toEqual([]);
    const interrupted = await after.all<{ request_id: string }>("SELECT request_id FROM audit WHERE kind = 'card_decision' AND decision = 'interrupted' ORDER BY request_id");
    expect(interrupted.map((r) => r.request_id)).toEqual(open);
    await after.close();

    // a fourth start finds nothing left to close
    const again = Bun.spawn([process.execPath, CHILD, file], { stdout: "pipe", stderr: "pipe" });
    expect(JSON.parse(await new Response(again.stdout).text())).toEqual({ closed: [] });
    expect(await again.exited).toBe(0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 120_000);
