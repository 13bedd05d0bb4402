/**
 * Attacks on the multi-process mode (SPEC §5.8) at the runtime level, on one throwaway PostgreSQL database:
 * runtimes in this process stand for nodes, and the database is changed under them the way a paused worker, a
 * dead one or another version would leave it. The model is the scripted provider. Skipped only without
 * PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import type { AnyEvent } from "../../src/bus/bus.ts";
import { Config } from "../../src/config/schema.ts";
import { createRuntime, type Runtime } from "../../src/runtime.ts";
import type { ServeRole } from "../../src/fleet/role.ts";
import { type PgCluster, pgAvailable, startPgCluster } from "../pg-cluster.ts";

const why = pgAvailable();

async function until(what: string, cond: () => boolean | Promise<boolean>, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(20);
  }
}

describe.skipIf(why !== null)(`fleet attacks at the runtime level on PostgreSQL${why ? ` — skipped: ${why}` : ""}`, () => {
  let cluster: PgCluster;
  let url: string;
  let pg: InstanceType<typeof Bun.SQL>;
  const dir = mkdtempSync(join(tmpdir(), "airlock-fleet-attack-"));
  const runtimes: Runtime[] = [];

  beforeAll(async () => {
    cluster = await startPgCluster();
    url = await cluster.createDatabase("airlock_fleet_attack");
    pg = new Bun.SQL(url, { max: 1 });
  }, 120_000);
  afterAll(async () => {
    for (const rt of runtimes.reverse()) await rt.close();
    await pg?.close();
    cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  async function runtime(name: string, turns: unknown[], fleet: Record<string, number>, role?: ServeRole, extra: Record<string, unknown> = {}): Promise<Runtime> {
    const d = join(dir, name);
    mkdirSync(join(d, "ws"), { recursive: true });
    writeFileSync(join(d, "turns.yaml"), stringify({ turns }));
    const config = Config.parse({ provider: { name: "scripted", script: "turns.yaml" }, storage: url, fleet, ...extra });
    const rt = await createRuntime({ config, configDir: d, dataDir: d, workspace: join(d, "ws"), env: {}, ...(role ? { role } : {}) });
    runtimes.push(rt);
    return rt;
  }

  test("fencing: a worker whose lease expired under it (paused past its TTL) never runs a policy-allowed tool call afterwards", async () => {
    const marker = join(dir, "stale", "ws", "stale-ran.txt");
    // a long TTL and sweep: neither the heartbeat nor a sweep notices in time; only the call's own check can
    const rt = await runtime(
      "stale",
      [{ text: "thinking", delay_ms: 1500, tool_calls: [{ name: "developer__shell", arguments: { command: `echo ran > ${marker}` } }] }, { text: "done" }],
      { lease_ttl_seconds: 60, sweep_seconds: 50, poll_seconds: 0.3 },
      "all",
      { mode: "smart", tools: { developer__shell: { permission: "allow" } } },
    );
    const session = await rt.createSession({ workspace: join(dir, "stale", "ws") });
    const seen: AnyEvent[] = [];
    rt.bus.subscribe(session.id, (ev) => seen.push(ev));
    const started = await rt.startTurn(session.id, "go");
    await until("the turn's lease", async () => (await pg`SELECT 1 FROM inflight WHERE turn_id = ${started.turnId}`).length === 1);
    // the worker is "paused" past its lease: the lease is expired in the database (as it would be after a SIGSTOP)
    await pg`UPDATE inflight SET expires_at = 0 WHERE turn_id = ${started.turnId}`;
    await started.done.catch(() => undefined);
    const results = seen.filter((e) => e.type === "tool_result").map((e) => e.data as { ok: boolean; error?: { code: string } });
    expect(results.length).toBe(1);
    expect(existsSync(marker)).toBe(false);
    expect(results[0]).toMatchObject({ ok: false, error: { code: "lease_lost" } });
    // the tests below need no claimer alive
    await rt.close();
  }, 120_000);

  test("cancel of a session withdraws its descendants' queued turns too (none survives to run later)", async () => {
    const api = await runtime("api-cancel", [{ text: "hi" }], { lease_ttl_seconds: 8, sweep_seconds: 0.5, poll_seconds: 0.3, queue_timeout_seconds: 60 }, "api");
    const ws = join(dir, "api-cancel", "ws");
    const root = await api.createSession({ workspace: ws });
    const child = await api.createSession({ workspace: ws, parent_session_id: root.id });
    const seen: AnyEvent[] = [];
    api.bus.subscribe(child.id, (ev) => seen.push(ev));
    // no worker alive: the child's turn stays queued
    const { turnId } = await api.requestTurn(child.id, "work");
    expect(await api.cancelEverywhere(root.id, "stop the tree")).toBe(true);
    const [req] = await pg`SELECT state FROM turn_requests WHERE id = ${turnId}`;
    expect(req.state).toBe("cancelled");
    expect(seen.find((e) => e.type === "turn_finished")?.data).toMatchObject({ turn_id: turnId, status: "cancelled" });
  }, 120_000);

  test(
    "a request claimed by a worker that died before taking the turn's lease (no turn row, no lease) ends: the api node's reply gets turn_finished failed (worker_lost) instead of waiting forever",
    async () => {
      const api = await runtime("api-orphan", [{ text: "hi" }], { lease_ttl_seconds: 2, sweep_seconds: 0.5, poll_seconds: 0.3, queue_timeout_seconds: 5 }, "api");
      const session = await api.createSession({ workspace: join(dir, "api-orphan", "ws") });
      const seen: AnyEvent[] = [];
      api.bus.subscribe(session.id, (ev) => seen.push(ev));
      const { turnId } = await api.requestTurn(session.id, "hi");
      // a worker claims it, then is killed -9 before startTurn took the lease
      await pg`UPDATE turn_requests SET state = 'running', worker_id = 'dead-worker', claimed_at = ${Date.now()} WHERE id = ${turnId}`;
      await until("turn_finished of the orphaned request", () => seen.some((e) => e.type === "turn_finished"), 30_000);
      expect(seen.find((e) => e.type === "turn_finished")?.data).toMatchObject({ turn_id: turnId, status: "failed", error: { code: "worker_lost" } });
      const [req] = await pg`SELECT state FROM turn_requests WHERE id = ${turnId}`;
      expect(req.state).toBe("done");
      // nothing ran: no turn row
      expect((await pg`SELECT id FROM turns WHERE id = ${turnId}`).length).toBe(0);
    },
    120_000,
  );

  test("fencing: a worker paused past its lease, swept by another node, writes nothing more into the session when it resumes", async () => {
    const a = await runtime(
      "paused",
      [{ text: "thinking", delay_ms: 2500, tool_calls: [{ name: "developer__shell", arguments: { command: "true" } }] }, { text: "done" }],
      { lease_ttl_seconds: 60, sweep_seconds: 50, poll_seconds: 0.3 },
      "all",
      { mode: "smart", tools: { developer__shell: { permission: "allow" } } },
    );
    // the sweeping node (claims nothing: no role)
    const b = await runtime("sweeper", [{ text: "x" }], { lease_ttl_seconds: 60, sweep_seconds: 0.3, poll_seconds: 0.3 });
    const session = await a.createSession({ workspace: join(dir, "paused", "ws") });
    const started = await a.startTurn(session.id, "go");
    await until("the turn's lease", async () => (await pg`SELECT 1 FROM inflight WHERE turn_id = ${started.turnId}`).length === 1);
    await pg`UPDATE inflight SET expires_at = 0 WHERE turn_id = ${started.turnId}`;
    await until("the sweep", async () => (await pg`SELECT status FROM turns WHERE id = ${started.turnId}`)[0].status === "interrupted");
    const atSweep = (await pg`SELECT id FROM messages WHERE session_id = ${session.id}`).length;
    await started.done.catch(() => undefined);
    const after = await pg`SELECT role, content FROM messages WHERE session_id = ${session.id} ORDER BY created_at`;
    expect((await pg`SELECT status FROM turns WHERE id = ${started.turnId}`)[0].status).toBe("interrupted");
    expect(after.length).toBe(atSweep);
    await a.close();
    await b.close();
  }, 120_000);

  test("queued rows another version (or a broken writer) left are failed one by one with their own events; the worker goes on and runs the good request", async () => {
    const api = await runtime("api-hostile", [{ text: "hi" }], { lease_ttl_seconds: 8, sweep_seconds: 0.5, poll_seconds: 0.3, queue_timeout_seconds: 60 }, "api");
    const ws = join(dir, "api-hostile", "ws");
    const done = await api.createSession({ workspace: ws });
    const good = await api.createSession({ workspace: ws });
    const seen: AnyEvent[] = [];
    api.bus.subscribeAll((ev) => seen.push(ev));
    const now = Date.now();
    // a request of a session that does not exist; one whose id is an existing, completed turn's; then a good one
    await pg`INSERT INTO turn_requests (id, session_id, message, state, created_at, expires_at) VALUES ('turn_ghost', 'ses_missing', 'x', 'queued', ${now - 3}, ${now + 60_000})`;
    await pg`INSERT INTO turns (id, session_id, status, answer, started_at, finished_at) VALUES ('turn_dupe', ${done.id}, 'completed', 'kept', ${new Date().toISOString()}, ${new Date().toISOString()})`;
    await pg`INSERT INTO turn_requests (id, session_id, message, state, created_at, expires_at) VALUES ('turn_dupe', ${done.id}, 'x', 'queued', ${now - 2}, ${now + 60_000})`;
    const { turnId } = await api.requestTurn(good.id, "hello");
    const worker = await runtime("worker-hostile", [{ text: "hello back" }], { lease_ttl_seconds: 8, sweep_seconds: 0.5, poll_seconds: 0.3 }, "worker");
    await until("the good turn's end on the api bus", () => seen.some((e) => e.type === "turn_finished" && (e.data as { turn_id: string }).turn_id === turnId));
    expect(seen.find((e) => e.type === "turn_finished" && (e.data as { turn_id: string }).turn_id === turnId)!.data).toMatchObject({ status: "completed", answer: "hello back" });
    await until("the ghost request ended", async () => (await pg`SELECT state FROM turn_requests WHERE id = 'turn_ghost'`)[0].state === "done");
    expect(seen.find((e) => e.type === "turn_finished" && (e.data as { turn_id: string }).turn_id === "turn_ghost")?.data).toMatchObject({ status: "failed", error: { code: "session_not_found" } });
    await until("the colliding request ended", async () => (await pg`SELECT state FROM turn_requests WHERE id = 'turn_dupe'`)[0].state === "done");
    // the completed turn it collided with is untouched, and its session got no message from it
    expect((await pg`SELECT status, answer FROM turns WHERE id = 'turn_dupe'`)[0]).toMatchObject({ status: "completed", answer: "kept" });
    expect((await pg`SELECT id FROM messages WHERE session_id = ${done.id}`).length).toBe(0);
    await worker.close();
  }, 120_000);

  test("a takeover of an expired lease (a new turn before any sweep) announces the lost turn's end on every node, as a sweep does", async () => {
    const fleet = { lease_ttl_seconds: 60, sweep_seconds: 50, poll_seconds: 0.3 };
    // A's turn waits long in the model; its lease is expired under it (A paused), no sweep comes in time
    const a = await runtime("takeover-a", [{ text: "slow", delay_ms: 20_000 }], fleet, "all");
    const b = await runtime("takeover-b", [{ text: "new turn" }], fleet);
    const watcher = await runtime("takeover-api", [{ text: "x" }], fleet, "api");
    const session = await a.createSession({ workspace: join(dir, "takeover-a", "ws") });
    const seen: AnyEvent[] = [];
    watcher.bus.subscribe(session.id, (ev) => seen.push(ev));
    const old = await a.startTurn(session.id, "go");
    await until("A's lease", async () => (await pg`SELECT 1 FROM inflight WHERE turn_id = ${old.turnId}`).length === 1);
    await pg`UPDATE inflight SET expires_at = 0 WHERE turn_id = ${old.turnId}`;
    const next = await b.startTurn(session.id, "again");
    await next.done;
    expect((await pg`SELECT status FROM turns WHERE id = ${old.turnId}`)[0].status).toBe("interrupted");
    // the old turn's end, as the sweep would have told it (A's own end, later, would carry lease_lost or cancelled)
    await until("the old turn's interrupted end on the watching node", () =>
      seen.some((e) => e.type === "turn_finished" && (e.data as { turn_id: string; error?: { code: string } }).turn_id === old.turnId && (e.data as { error?: { code: string } }).error?.code === "interrupted"),
    );
    await a.close();
    await b.close();
    await watcher.close();
  }, 120_000);
});

describe("the SQLite default is untouched by the fleet", () => {
  test("a turn with a tool call and a cancel on the SQLite store: single process, nothing queued, relayed, leased or parked as a row", async () => {
    const d = mkdtempSync(join(tmpdir(), "airlock-fleet-attack-sqlite-"));
    try {
      mkdirSync(join(d, "ws"));
      writeFileSync(join(d, "turns.yaml"), stringify({ turns: [{ tool_calls: [{ name: "developer__shell", arguments: { command: "echo hi" } }] }, { text: "done" }] }));
      const config = Config.parse({ provider: { name: "scripted", script: "turns.yaml" }, mode: "smart", tools: { developer__shell: { permission: "allow" } } });
      const rt = await createRuntime({ config, configDir: d, dataDir: d, workspace: join(d, "ws"), env: {}, role: "all" });
      try {
        expect(rt.store.sql.dialect).toBe("sqlite");
        const session = await rt.createSession({ workspace: join(d, "ws") });
        const seen: AnyEvent[] = [];
        rt.bus.subscribe(session.id, (ev) => seen.push(ev));
        const { turnId } = await rt.requestTurn(session.id, "go");
        await until("turn_finished", () => seen.some((e) => e.type === "turn_finished" && (e.data as { turn_id: string }).turn_id === turnId));
        expect(seen.find((e) => e.type === "turn_finished")!.data).toMatchObject({ status: "completed", answer: "done" });
        expect(seen.find((e) => e.type === "tool_result")!.data).toMatchObject({ ok: true });
        expect(await rt.cancelEverywhere(session.id)).toBe(false);
        expect(await rt.remoteInFlight()).toEqual([]);
        for (const table of ["fleet_relay", "turn_requests", "inflight", "cards"]) {
          expect({ table, n: Number((await rt.store.sql.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table}`))!.n) }).toEqual({ table, n: 0 });
        }
      } finally {
        await rt.close();
      }
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  }, 60_000);
});
