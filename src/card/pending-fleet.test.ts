/**
 * Cards in fleet mode (card/pending.ts with `fleet`, SPEC §5.8) on a real PostgreSQL database, two
 * processes stood for by two pools, nodes and `Cards`: a subagent's card parked by A under its turn's
 * lease is listed by B (from B's feed) and answered by B at its root surface; A's wait ends with B's
 * decision; a second answer is `already_decided`. A turn with no lease parks nothing (`lease_lost`). A turn
 * ending on A withdraws the row (`cancelled`), and B stops listing it. Waits are conditions with bounds.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { openFleetPg, type FleetDb } from "../../test/fixtures/fleet-db.ts";
import { pgAvailable } from "../../test/pg-cluster.ts";
import { Bus } from "../bus/bus.ts";
import { FleetConfig } from "../config/schema.ts";
import { FleetNode } from "../fleet/node.ts";
import { TurnLeases } from "../fleet/turn-leases.ts";
import { Inflight } from "../session/inflight.ts";
import { Store } from "../store/store.ts";
import { Cards, type ParkInput } from "./pending.ts";

async function until(cond: () => boolean | Promise<boolean>, what: string, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(25);
  }
}

const why = pgAvailable();

describe.skipIf(why !== null)("Cards in fleet mode (PostgreSQL, two processes)", () => {
  let db: FleetDb;
  let a: { node: FleetNode; turnLeases: TurnLeases; cards: Cards; inflight: Inflight };
  let b: { node: FleetNode; turnLeases: TurnLeases; cards: Cards; inflight: Inflight };
  const config = FleetConfig.parse({ lease_ttl_seconds: 600, sweep_seconds: 0.2, poll_seconds: 0.2 });

  async function side(sqlOf: "a" | "b", name: string) {
    const sql = db[sqlOf];
    const bus = new Bus();
    const node = await FleetNode.start({ sql, bus, config, workerId: name, listenUrl: db.url! });
    const inflight = new Inflight();
    const turnLeases = new TurnLeases(node.leases, (sid) => inflight.cancel(sid, "lease lost"));
    const cards = new Cards({ store: new Store(sql), bus, inflight, approverToken: "approver", fleet: { node, turnLeases } });
    return { node, turnLeases, cards, inflight };
  }

  beforeAll(async () => {
    db = await openFleetPg();
    a = await side("a", "proc-A");
    b = await side("b", "proc-B");
  }, 180_000);
  afterAll(async () => {
    for (const s of [a, b]) {
      s?.cards.close();
      await s?.turnLeases.close();
      await s?.node.close();
    }
    await db?.close();
  }, 60_000);

  let n = 0;
  /** A root and its child session, and a running turn of the child registered on A. */
  async function childTurn(): Promise<{ root: string; child: string; turn: string }> {
    const k = ++n;
    const now = new Date().toISOString();
    const root = `ses_root_${k}`;
    const child = `ses_child_${k}`;
    const turn = `turn_child_${k}`;
    await db.a.run("INSERT INTO sessions (id, parent_session_id, workspace, mode, sandbox, provider, created_at, updated_at) VALUES (?, NULL, '/w', 'smart', 'workspace-write', 'scripted', ?, ?)", [root, now, now]);
    await db.a.run("INSERT INTO sessions (id, parent_session_id, workspace, mode, sandbox, provider, created_at, updated_at) VALUES (?, ?, '/w', 'smart', 'workspace-write', 'scripted', ?, ?)", [child, root, now, now]);
    await db.a.run("INSERT INTO turns (id, session_id, status, started_at) VALUES (?, ?, 'running', ?)", [turn, child, now]);
    a.inflight.register(child, turn);
    return { root, child, turn };
  }

  const input = (home: string, turnId: string): ParkInput => ({
    homeSessionId: home,
    turnId,
    callId: "call_1",
    tool: "developer__shell",
    arguments: { command: "true" },
    inspector: "hook",
    reason: "a hook asks",
    requiresUserProof: false,
    ttlSeconds: 600,
  });

  test("a card parked by A is listed by B and denied through B; A's wait ends denied; a second answer is already_decided", async () => {
    const t = await childTurn();
    await a.turnLeases.acquire(t.child, t.turn);
    const outcome = a.cards.park(input(t.child, t.turn));
    await until(() => b.cards.listAll().length > 0, "B lists A's card");
    const [card] = b.cards.listForSession(t.root);
    expect(card).toMatchObject({ home_session_id: t.child, surfaced_in: t.root, tool: "developer__shell" });
    expect(b.cards.listForSession(t.child).map((c) => c.request_id)).toEqual([card!.request_id]);
    const r = await b.cards.resolveAtSurface(card!.request_id, "deny", { actor: "test", reason: "no" });
    expect(r).toMatchObject({ ok: true, outcome: { decision: "deny", decided_in: t.root } });
    expect(await outcome).toMatchObject({ request_id: card!.request_id, decision: "deny", decided_in: t.root, reason: "no" });
    const again = await b.cards.resolve(card!.request_id, "allow_once", { sessionId: t.root });
    expect(again.ok).toBe(false);
    if (!again.ok) expect(again.error.code).toBe("already_decided");
    await until(() => b.cards.listAll().length === 0, "B stops listing the decided card");
    expect(a.cards.size).toBe(0);
    await a.turnLeases.release(t.turn);
  }, 120_000);

  test("a deny nobody gave (an attended run's terminal input ended) reaches the parking process as such: the outcome says nobody", async () => {
    const t = await childTurn();
    await a.turnLeases.acquire(t.child, t.turn);
    const outcome = a.cards.park(input(t.child, t.turn));
    await until(() => b.cards.listForSession(t.root).length === 1, "B lists A's card");
    const [card] = b.cards.listForSession(t.root);
    const r = await b.cards.resolve(card!.request_id, "deny", { sessionId: t.root, actor: "terminal", reason: "stdin_closed: the terminal's input ended", nobody: true });
    expect(r).toMatchObject({ ok: true, outcome: { decision: "deny", nobody: true } });
    expect(await outcome).toMatchObject({ request_id: card!.request_id, decision: "deny", reason: "stdin_closed: the terminal's input ended", nobody: true });
    await a.turnLeases.release(t.turn);
  }, 120_000);

  test("an answer from a session that is not a surface is outside_scope, and the card stays pending", async () => {
    const t = await childTurn();
    const other = await childTurn();
    await a.turnLeases.acquire(t.child, t.turn);
    void a.cards.park(input(t.child, t.turn));
    await until(() => b.cards.listForSession(t.root).length === 1, "B lists the card");
    const id = b.cards.listForSession(t.root)[0]!.request_id;
    const r = await b.cards.resolve(id, "allow_once", { sessionId: other.root });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error.code).toBe("outside_scope");
    expect((await a.node.rows.get(id))?.status).toBe("pending");
    // the turn ends on A: the card is withdrawn, its row cancelled, and B stops listing it
    a.inflight.unregister(t.child, t.turn);
    await until(async () => (await a.node.rows.get(id))?.status === "cancelled", "the row cancelled");
    await until(() => b.cards.listForSession(t.root).length === 0, "B stops listing the withdrawn card");
    await a.turnLeases.release(t.turn);
    a.inflight.unregister(other.child, other.turn);
  }, 120_000);

  test("a card past its TTL: the row is marked expired first, then A's wait ends expired; B's late answer is refused", async () => {
    const t = await childTurn();
    await a.turnLeases.acquire(t.child, t.turn);
    const outcome = await a.cards.park({ ...input(t.child, t.turn), ttlSeconds: 0.3 });
    expect(outcome.decision).toBe("expired");
    const row = await a.node.rows.get(outcome.request_id);
    expect(row?.status).toBe("expired");
    const late = await b.cards.resolve(outcome.request_id, "allow_once", { sessionId: t.root });
    expect(late.ok).toBe(false);
    if (!late.ok) expect(["expired", "already_decided"]).toContain(late.error.code);
    expect((await a.node.rows.get(outcome.request_id))?.status).toBe("expired");
    await a.turnLeases.release(t.turn);
    a.inflight.unregister(t.child, t.turn);
  }, 60_000);

  test("a turn holding no lease in this process parks nothing: lease_lost", async () => {
    const t = await childTurn();
    await expect(a.cards.park(input(t.child, t.turn))).rejects.toMatchObject({ code: "lease_lost" });
    expect(a.cards.size).toBe(0);
    expect(await db.a.get("SELECT 1 AS one FROM cards WHERE session_id = ?", [t.child])).toBeNull();
    a.inflight.unregister(t.child, t.turn);
  }, 60_000);
});
