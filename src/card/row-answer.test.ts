/**
 * Answering a card row from another process (card/row-answer.ts) with the in-process rules of SPEC §5.6:
 * scope, user proof, allow_session's rule, first answer wins; every attempt audited. On SQLite and on a
 * throwaway PostgreSQL cluster, where process A parks and waits and process B answers.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { openFleetPg, openFleetSqlite, type FleetDb } from "../../test/fixtures/fleet-db.ts";
import { pgAvailable } from "../../test/pg-cluster.ts";
import { CardRows } from "../fleet/card-rows.ts";
import { Leases } from "../fleet/leases.ts";
import { pgListener } from "../fleet/notify.ts";
import { parkAndAwait } from "../fleet/park.ts";
import { CardWaker } from "../fleet/waker.ts";
import { answerCardRow, type RowAnswerDeps } from "./row-answer.ts";

const TOKEN = "approver-token-0123456789abcdef";
const T = 120_000;
let n = 0;
const uid = (p: string) => `${p}_${process.pid}_${++n}`;

function suite(name: string, open: () => Promise<FleetDb>, skip: string | null) {
  describe.skipIf(skip !== null)(`answering a card row on ${name}`, () => {
    let db: FleetDb;
    beforeAll(async () => {
      db = await open();
    }, 180_000);
    afterAll(async () => {
      await db?.close();
    }, 60_000);

    /** Process A: a turn under a lease, parking one card and waiting for it. */
    async function parkOnA(opts: { proof?: boolean; suggested?: string; ttlMs?: number } = {}) {
      const home = uid("ses");
      const root = uid("root");
      const turn = uid("turn");
      const now = new Date().toISOString();
      for (const s of [root, home]) {
        await db.a.run("INSERT INTO sessions (id, parent_session_id, workspace, mode, sandbox, provider, created_at, updated_at) VALUES (?, ?, '/w', 'smart', 'workspace-write', 'scripted', ?, ?)", [
          s,
          s === home ? root : null,
          now,
          now,
        ]);
      }
      await db.a.run("INSERT INTO turns (id, session_id, status, started_at) VALUES (?, ?, 'running', ?)", [turn, home, now]);
      const rows = new CardRows(db.a);
      const leases = new Leases(db.a, { workerId: "A", ttlMs: 600_000 });
      const listener = db.url ? pgListener(db.url) : undefined;
      const waker = new CardWaker(rows, { pollMs: db.url ? 2000 : 50, ...(listener ? { listener } : {}) });
      await waker.start();
      const lease = await leases.acquire(home, turn);
      const id = uid("act");
      let ran = 0;
      const verdict = parkAndAwait({ rows, waker, leases }, lease, {
        id,
        sessionId: home,
        rootSessionId: root,
        callId: "call_1",
        surfaces: [home, root],
        requiresUserProof: opts.proof ?? false,
        card: { request_id: id, ...(opts.suggested ? { suggested_rule: opts.suggested } : {}) },
        expiresAt: Date.now() + (opts.ttlMs ?? 600_000),
      }).then((v) => {
        if (v.run) ran++;
        return v;
      });
      const b = new CardRows(db.b);
      for (let i = 0; !(await b.get(id)); i++) {
        if (i > 3000) throw new Error("the card row never appeared");
        await Bun.sleep(10);
      }
      return {
        home,
        root,
        id,
        verdict,
        ran: () => ran,
        async close() {
          void verdict.catch(() => undefined); // a card still pending is abandoned with its waker
          await waker.close();
          await listener?.close();
        },
      };
    }

    const onB = (extra: Partial<RowAnswerDeps> = {}): RowAnswerDeps => ({ sql: db.b, rows: new CardRows(db.b), approverToken: TOKEN, ...extra });
    const onA = (extra: Partial<RowAnswerDeps> = {}): RowAnswerDeps => ({ sql: db.a, rows: new CardRows(db.a), approverToken: TOKEN, ...extra });

    test("B answers from the root: A's call runs exactly once; a second answer is already_decided; every attempt is audited", async () => {
      const a = await parkOnA();
      try {
        const outside = await answerCardRow(onB(), a.id, "allow_once", { sessionId: uid("stranger") });
        expect(outside.ok ? "" : outside.error.code).toBe("outside_scope");
        const ok = await answerCardRow(onB(), a.id, "allow_once", { sessionId: a.root, actor: "tester" });
        expect(ok).toEqual({ ok: true, outcome: { request_id: a.id, decision: "allow_once", decided_in: a.root } });
        const v = await a.verdict;
        expect(v.run).toBe(true);
        const again = await answerCardRow(onB(), a.id, "deny", { sessionId: a.home });
        expect(again.ok ? "" : again.error.code).toBe("already_decided");
        expect(a.ran()).toBe(1);
        const audit = await db.b.all<{ outcome: string; code: string | null; session_id: string | null }>(
          "SELECT outcome, code, session_id FROM audit WHERE request_id = ? AND kind = 'card_decision' ORDER BY id",
          [a.id],
        );
        expect(audit.map((r) => `${r.outcome}:${r.code ?? ""}`)).toEqual(["refused:outside_scope", "accepted:", "refused:already_decided"]);
      } finally {
        await a.close();
      }
    }, T);

    test("a proof card: an allow without the approver token is refused (required, then invalid), a deny needs none", async () => {
      const a = await parkOnA({ proof: true });
      try {
        const none = await answerCardRow(onB(), a.id, "allow_once", { sessionId: a.root });
        expect(none.ok ? "" : none.error.code).toBe("user_proof_required");
        const wrong = await answerCardRow(onB(), a.id, "allow_once", { sessionId: a.root, approverToken: "not-the-token" });
        expect(wrong.ok ? "" : wrong.error.code).toBe("user_proof_invalid");
        expect((await new CardRows(db.b).get(a.id))!.status).toBe("pending");
        const deny = await answerCardRow(onB(), a.id, "deny", { sessionId: a.home, reason: "no" });
        expect(deny.ok).toBe(true);
        const v = await a.verdict;
        expect(v.run ? "ran" : v.error.code).toBe("denied");
      } finally {
        await a.close();
      }
    }, T);

    test("a proof card allowed with the approver token runs", async () => {
      const a = await parkOnA({ proof: true });
      try {
        expect((await answerCardRow(onB(), a.id, "allow_once", { sessionId: a.root, approverToken: TOKEN })).ok).toBe(true);
        expect((await a.verdict).run).toBe(true);
      } finally {
        await a.close();
      }
    }, T);

    test("allow_session: refused without a suggested rule; with one, the rule is stored once the answer has won", async () => {
      const plain = await parkOnA();
      const offered = await parkOnA({ suggested: "Bash(ls:*)" });
      try {
        const r = await answerCardRow(onB(), plain.id, "allow_session", { sessionId: plain.root });
        expect(r.ok ? "" : r.error.code).toBe("session_rule_not_offered");
        const added: string[] = [];
        const rules = { add: async (s: string, rule: string) => (added.push(`${s} ${rule}`), { rule, id: "rul_1" }) };
        const ok = await answerCardRow(onB({ sessionRules: rules }), offered.id, "allow_session", { sessionId: offered.root });
        expect(ok.ok ? ok.outcome : null).toMatchObject({ decision: "allow_session", rule: "Bash(ls:*)", rule_id: "rul_1" });
        expect(added).toEqual([`${offered.home} Bash(ls:*)`]);
        expect((await offered.verdict).run).toBe(true);
      } finally {
        await plain.close();
        await offered.close();
      }
    }, T);

    test("an allow_session that loses to a deny stores no rule (the answers race from A and B)", async () => {
      for (let i = 0; i < 10; i++) {
        const a = await parkOnA({ suggested: "Bash(rm:*)" });
        try {
          const added: string[] = [];
          // the rule store takes a round trip, as the real one does, so the two answers overlap
          const rules = { add: async (_s: string, rule: string) => (await db.b.get("SELECT 1 AS one"), added.push(rule), { rule, id: "rul_r" }) };
          const [deny, allow] = await Promise.all([
            answerCardRow(onA(), a.id, "deny", { sessionId: a.home }),
            answerCardRow(onB({ sessionRules: rules }), a.id, "allow_session", { sessionId: a.root }),
          ]);
          // exactly one answer wins; a rule exists only when the allow_session is the one that won
          expect(deny.ok !== allow.ok).toBe(true);
          expect(added).toEqual(allow.ok ? ["Bash(rm:*)"] : []);
          expect((await a.verdict).run).toBe(allow.ok);
        } finally {
          await a.close();
        }
      }
    }, T);

    test("an allow_session on a card past its expiry is refused expired and stores no rule", async () => {
      const a = await parkOnA({ suggested: "Bash(rm:*)", ttlMs: 300 });
      try {
        await Bun.sleep(400); // past expires_at whether or not a waker has marked the row yet
        const added: string[] = [];
        const rules = { add: async (_s: string, rule: string) => (added.push(rule), { rule, id: "rul_e" }) };
        const r = await answerCardRow(onB({ sessionRules: rules }), a.id, "allow_session", { sessionId: a.root });
        expect(r.ok ? "" : r.error.code).toBe("expired");
        expect(added).toEqual([]);
      } finally {
        await a.close();
      }
    }, T);

    test("an unknown card is not_found (audited)", async () => {
      const id = uid("act");
      const r = await answerCardRow(onB(), id, "deny", { sessionId: "ses_x" });
      expect(r.ok ? "" : r.error.code).toBe("not_found");
      expect(await db.b.get("SELECT code FROM audit WHERE request_id = ?", [id])).toEqual({ code: "not_found" });
    }, T);
  });
}

suite("SQLite", openFleetSqlite, null);
suite("PostgreSQL", openFleetPg, pgAvailable());
