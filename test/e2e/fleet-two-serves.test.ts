/**
 * @module test/e2e/fleet-two-serves
 * Two `airlock serve` processes (from source) on one throwaway PostgreSQL database (SPEC §5.8): a
 * subagent's card parked by process A is listed by process B (`GET /actions`, and the root session's SSE
 * on B), answered through B's HTTP API, and the call runs once on A; a second answer gets 409. Then A is
 * killed with SIGKILL while a card waits: within the (short) lease TTL, B's sweeper marks the turn
 * `interrupted` and the card row `worker_lost`, and B no longer lists the card; B refused to run a turn in
 * A's session while A held it (`session_busy`), runs it once swept, and its own turn (a card parked on B
 * across A's death) is unaffected. The same for a grandchild (a subagent of a subagent): its card, parked
 * on A under A's lease, is listed and answered on B — right after `pg_terminate_backend` killed both
 * processes' LISTEN connections — and its call runs once, on A; the listeners come back. Skipped, with the
 * reason, only when PostgreSQL is not installed.
 */
import { describe, expect, test } from "bun:test";
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { openSse } from "../harness.ts";
import { spawnServe, type ServeProcess } from "../harness-serve.ts";
import { useFleetE2e } from "../fixtures/fleet-e2e.ts";
import { pgAvailable } from "../pg-cluster.ts";

const MAIN = join(import.meta.dir, "..", "..", "src", "main.ts");
const HOOKS = join(import.meta.dir, "..", "fixtures", "hooks");
const why = pgAvailable();

interface CardView {
  request_id: string;
  home_session_id: string;
  tool: string;
}

async function until<T>(what: string, f: () => Promise<T | undefined>, ms = 90_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(100);
  }
}

describe.skipIf(why !== null)(`two airlock serve processes on one PostgreSQL database${why ? ` — skipped: ${why}` : ""}`, () => {
  const fx = useFleetE2e("airlock_fleet_e2e", "airlock-fleet-e2e-");
  const { dir, ws, procs } = fx;
  const marker = join(ws, "ran.txt");

  /** The root spawns a subagent whose shell call appends to `file`. */
  const childScript = (file: string) => ({
    turns: [{ tool_calls: [{ name: "subagent__spawn", arguments: { instructions: "append to the file" } }] }, { text: "root done" }],
    subagents: [{ turns: [{ tool_calls: [{ name: "developer__shell", arguments: { command: `echo ran >> ${file}` } }] }, { text: "child done" }] }],
  });
  /** The root spawns a child, the child a grandchild, whose shell call appends to `file` (subagents are taken in spawn order). */
  const grandchildScript = (file: string) => ({
    turns: [{ tool_calls: [{ name: "subagent__spawn", arguments: { instructions: "spawn a grandchild" } }] }, { text: "root done" }],
    subagents: [
      { turns: [{ tool_calls: [{ name: "subagent__spawn", arguments: { instructions: "append to the file" } }] }, { text: "child done" }] },
      { turns: [{ tool_calls: [{ name: "developer__shell", arguments: { command: `echo ran >> ${file}` } }] }, { text: "grandchild done" }] },
    ],
  });

  /** A data dir: the root runs `script` (default: a subagent whose shell call a hook sends to a person); a short lease. */
  function dataDir(name: string, script: unknown = childScript(marker), leaseTtlSeconds = 3): string {
    const d = join(dir, name);
    mkdirSync(d, { recursive: true });
    writeFileSync(join(d, "turns.yaml"), stringify(script));
    writeFileSync(
      join(d, "airlock.yaml"),
      stringify({
        provider: { name: "scripted", script: "turns.yaml" },
        hooks: { PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: join(HOOKS, "ask.sh"), timeout: 30 }] }] },
        fleet: { lease_ttl_seconds: leaseTtlSeconds, sweep_seconds: 0.5, poll_seconds: 0.5 },
        storage: fx.url,
      }),
    );
    return d;
  }

  async function serve(d: string): Promise<ServeProcess & { token: string; approver: string }> {
    const sp = await spawnServe([process.execPath, MAIN, "serve", "--port", "0", "--data-dir", d], { cwd: ws });
    procs.push(sp.proc);
    return { ...sp, token: readFileSync(join(d, "api-token"), "utf8").trim(), approver: readFileSync(join(d, "approver-token"), "utf8").trim() };
  }

  const api = (s: { url: string; token: string; approver: string }, path: string, init: RequestInit = {}) =>
    fetch(s.url + path, {
      ...init,
      headers: { authorization: `Bearer ${s.token}`, "x-airlock-approver": s.approver, "content-type": "application/json", ...(init.headers ?? {}) },
    });

  /** A pending shell card listed by `s` whose home is a subagent (at any depth) of `root`. */
  async function pendingOn(s: { url: string; token: string; approver: string }, root: string): Promise<CardView | undefined> {
    const r = (await (await api(s, "/actions")).json()) as { actions: CardView[] };
    for (const c of r.actions) {
      if (c.tool !== "developer__shell" || c.home_session_id === root) continue;
      if ((await ancestry(c.home_session_id)).at(-1) === root) return c;
    }
    return undefined;
  }

  /** The session ids from `id` up to its root (parent_session_id chain). */
  async function ancestry(id: string): Promise<string[]> {
    const chain = [id];
    for (;;) {
      const [r] = await fx.pg`SELECT parent_session_id FROM sessions WHERE id = ${chain[chain.length - 1]!}`;
      if (!r?.parent_session_id) return chain;
      chain.push(r.parent_session_id as string);
    }
  }

  test("a subagent's card parked on A is answered through B; the call runs once on A; a second answer is 409; kill -9 of A: turn interrupted, card worker_lost, seen from B; B's own turn unaffected; B refuses the dead process's session until swept, then runs it", async () => {
    const dA = dataDir("a");
    const a = await serve(dA);
    // B's leases are long: a busy machine delaying B's heartbeat never loses B's own turn (A's are short: A is killed)
    const dB = dataDir("b", childScript(marker), 120);
    // one deployment: B shares A's tokens (the approver token is the user proof on every node)
    for (const f of ["api-token", "approver-token"]) copyFileSync(join(dA, f), join(dB, f));
    const b = await serve(dB);

    const created = await api(a, "/sessions", { method: "POST", body: JSON.stringify({ workspace: ws, title: "fleet" }) });
    expect(created.status).toBe(201);
    const root = ((await created.json()) as { id: string }).id;
    // B's SSE on the root session: the card of A's subagent arrives there through B's feed
    const sseB = await openSse(`${b.url}/sessions/${root}/events`, { headers: { authorization: `Bearer ${b.token}` } });
    expect(sseB.status).toBe(200);
    const sseA = await openSse(`${a.url}/sessions/${root}/reply`, {
      method: "POST",
      headers: { authorization: `Bearer ${a.token}`, "content-type": "application/json" },
      body: JSON.stringify({ message: "go" }),
    });
    expect(sseA.status).toBe(200);

    const card = await until("the child's card listed on B", () => pendingOn(b, root));
    expect(card.home_session_id).not.toBe(root);
    const onSse = await sseB.waitFor((e) => e.event === "action_required" && (e.data as { request_id?: string }).request_id === card.request_id, 60_000);
    expect(onSse.data).toMatchObject({ surfaced_in: root, tool: "developer__shell" });
    expect(existsSync(marker)).toBe(false);

    const first = await api(b, `/actions/${card.request_id}`, { method: "POST", body: JSON.stringify({ decision: "allow_once" }) });
    expect(first.status).toBe(200);
    expect(await first.json()).toMatchObject({ request_id: card.request_id, decision: "allow_once", decided_in: root });

    const done = await sseA.waitFor((e) => e.event === "turn_finished", 120_000);
    expect(done.data).toMatchObject({ status: "completed" });
    sseA.close();
    expect(readFileSync(marker, "utf8")).toBe("ran\n");

    const second = await api(b, `/actions/${card.request_id}`, { method: "POST", body: JSON.stringify({ decision: "allow_once" }) });
    expect(second.status).toBe(409);
    expect(await second.json()).toMatchObject({ error: "already_decided" });
    await sseB.waitFor((e) => e.event === "action_resolved" && (e.data as { request_id?: string }).request_id === card.request_id, 60_000);
    sseB.close();
    expect(readFileSync(marker, "utf8")).toBe("ran\n");

    // A second root session: its child's card waits, then A dies with SIGKILL
    const created2 = await api(a, "/sessions", { method: "POST", body: JSON.stringify({ workspace: ws, title: "fleet-kill" }) });
    const root2 = ((await created2.json()) as { id: string }).id;
    const sse2 = await openSse(`${a.url}/sessions/${root2}/reply`, {
      method: "POST",
      headers: { authorization: `Bearer ${a.token}`, "content-type": "application/json" },
      body: JSON.stringify({ message: "go" }),
    });
    expect(sse2.status).toBe(200);
    const card2 = await until("the second child's card listed on B", () => pendingOn(b, root2));
    const [turnRow] = await fx.pg`SELECT turn_id FROM cards WHERE id = ${card2.request_id}`;
    const childTurn = turnRow.turn_id as string;
    const [rootTurnRow] = await fx.pg`SELECT id FROM turns WHERE session_id = ${root2} AND status = 'running'`;
    const rootTurn = rootTurnRow.id as string;
    // fail closed on B while A holds the session: B does not run a turn there beside A's
    const busy = await openSse(`${b.url}/sessions/${root2}/reply`, {
      method: "POST",
      headers: { authorization: `Bearer ${b.token}`, "content-type": "application/json" },
      body: JSON.stringify({ message: "also here" }),
    });
    expect(busy.status).toBe(200);
    const refused = await busy.waitFor((e) => e.event === "turn_finished", 60_000);
    expect(refused.data).toMatchObject({ status: "failed", error: { code: "session_busy" } });
    busy.close();
    // B's own work: a third root session run by B, its child's card parked on B, waiting across A's death
    const created3 = await api(b, "/sessions", { method: "POST", body: JSON.stringify({ workspace: ws, title: "fleet-b" }) });
    const root3 = ((await created3.json()) as { id: string }).id;
    const sse3 = await openSse(`${b.url}/sessions/${root3}/reply`, {
      method: "POST",
      headers: { authorization: `Bearer ${b.token}`, "content-type": "application/json" },
      body: JSON.stringify({ message: "go" }),
    });
    expect(sse3.status).toBe(200);
    const card3 = await until("B's own child's card", () => pendingOn(b, root3));
    const [row3] = await fx.pg`SELECT worker_id, turn_id FROM cards WHERE id = ${card3.request_id}`;
    expect(String(row3.worker_id)).toContain(`:${b.proc.pid}:`);
    sse2.close();
    a.proc.kill("SIGKILL");
    await a.proc.exited;

    // B's sweeper: the lease (3 s) expires, the turn is interrupted and the card worker_lost
    const ended = await until("the card row worker_lost", async () => {
      const [r] = await fx.pg`SELECT status FROM cards WHERE id = ${card2.request_id}`;
      return r.status === "pending" ? undefined : (r.status as string);
    });
    expect(ended).toBe("worker_lost");
    const [t] = await fx.pg`SELECT status FROM turns WHERE id = ${childTurn}`;
    expect(t.status).toBe("interrupted");
    await until("B no longer lists the card", async () => ((await pendingOn(b, root2)) ? undefined : true));
    const late = await api(b, `/actions/${card2.request_id}`, { method: "POST", body: JSON.stringify({ decision: "allow_once" }) });
    expect(late.status).toBe(409);
    expect(readFileSync(marker, "utf8")).toBe("ran\n");
    // The root turn holds a lease of its own, renewed apart from its child's: it may lapse (and be swept) a
    // sweep later than the child's, so its end is awaited, not read at once.
    const rootEnded = await until("the root turn ended", async () => {
      const [rt] = await fx.pg`SELECT status FROM turns WHERE id = ${rootTurn}`;
      return rt.status === "running" ? undefined : (rt.status as string);
    });
    expect(rootEnded).toBe("interrupted");

    // B unaffected: its card was not swept, its lease is live; answered, its call runs (on B) and its turn completes
    const [still3] = await fx.pg`SELECT status FROM cards WHERE id = ${card3.request_id}`;
    expect(still3.status).toBe("pending");
    const [lease3] = await fx.pg`SELECT worker_id FROM inflight WHERE turn_id = ${row3.turn_id}`;
    expect(lease3).toMatchObject({ worker_id: row3.worker_id });
    const ok3 = await api(b, `/actions/${card3.request_id}`, { method: "POST", body: JSON.stringify({ decision: "allow_once" }) });
    expect(ok3.status).toBe(200);
    const done3 = await sse3.waitFor((e) => e.event === "turn_finished", 120_000);
    expect(done3.data).toMatchObject({ status: "completed" });
    sse3.close();
    expect(readFileSync(marker, "utf8")).toBe("ran\nran\n");

    // the dead process's session, once swept, is B's to run: a reply through B completes there
    const again = await openSse(`${b.url}/sessions/${root2}/reply`, {
      method: "POST",
      headers: { authorization: `Bearer ${b.token}`, "content-type": "application/json" },
      body: JSON.stringify({ message: "go on" }),
    });
    expect(again.status).toBe(200);
    const doneAgain = await again.waitFor((e) => e.event === "turn_finished", 120_000);
    expect(doneAgain.data).toMatchObject({ status: "completed" });
    again.close();
    expect(readFileSync(marker, "utf8")).toBe("ran\nran\n");

    b.proc.kill("SIGTERM");
    expect(await b.proc.exited).toBe(0);
  }, 300_000);

  test("a grandchild's card parked on A is listed on B (GET /actions and the root's SSE), answered through B after pg_terminate_backend killed the LISTEN connections, and its call runs once, on A; a second answer is 409", async () => {
    const file = join(ws, "grandchild-ran.txt");
    const dA = dataDir("ga", grandchildScript(file));
    const a = await serve(dA);
    const dB = dataDir("gb", grandchildScript(file));
    for (const f of ["api-token", "approver-token"]) copyFileSync(join(dA, f), join(dB, f));
    const b = await serve(dB);

    const created = await api(a, "/sessions", { method: "POST", body: JSON.stringify({ workspace: ws, title: "fleet-grandchild" }) });
    expect(created.status).toBe(201);
    const root = ((await created.json()) as { id: string }).id;
    const sseB = await openSse(`${b.url}/sessions/${root}/events`, { headers: { authorization: `Bearer ${b.token}` } });
    expect(sseB.status).toBe(200);
    const sseA = await openSse(`${a.url}/sessions/${root}/reply`, {
      method: "POST",
      headers: { authorization: `Bearer ${a.token}`, "content-type": "application/json" },
      body: JSON.stringify({ message: "go" }),
    });
    expect(sseA.status).toBe(200);

    const card = await until("the grandchild's card listed on B", () => pendingOn(b, root));
    // the card's home is two levels below the root: grandchild → child → root
    const chain = await ancestry(card.home_session_id);
    expect(chain).toHaveLength(3);
    expect(chain[2]).toBe(root);
    // parked by A's process (its worker id names its pid), under A's live lease on the grandchild's turn
    const [row] = await fx.pg`SELECT worker_id, turn_id, epoch FROM cards WHERE id = ${card.request_id}`;
    expect(String(row.worker_id)).toContain(`:${a.proc.pid}:`);
    const [lease] = await fx.pg`SELECT worker_id, epoch FROM inflight WHERE turn_id = ${row.turn_id}`;
    expect(lease).toMatchObject({ worker_id: row.worker_id });
    expect(Number(lease.epoch)).toBe(Number(row.epoch));
    const onSse = await sseB.waitFor((e) => e.event === "action_required" && (e.data as { request_id?: string }).request_id === card.request_id, 60_000);
    expect(onSse.data).toMatchObject({ surfaced_in: root, tool: "developer__shell", home_session_id: card.home_session_id });
    expect(existsSync(file)).toBe(false);

    // the LISTEN connections of both processes (one each, carrying the card channel with the turn and relay
    // channels: pg_stat_activity shows its last LISTEN) are killed by the server: the decision still wakes A
    const listening = () => fx.pg`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query ILIKE 'LISTEN%airlock%' AND pid <> pg_backend_pid()`;
    const before = await listening();
    expect(before.length).toBeGreaterThanOrEqual(2);
    const killed = await fx.pg`SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE datname = current_database() AND query ILIKE 'LISTEN%airlock%' AND pid <> pg_backend_pid()`;
    expect(killed.length).toBe(before.length);

    const first = await api(b, `/actions/${card.request_id}`, { method: "POST", body: JSON.stringify({ decision: "allow_once" }) });
    expect(first.status).toBe(200);
    expect(await first.json()).toMatchObject({ request_id: card.request_id, decision: "allow_once", decided_in: root });

    const done = await sseA.waitFor((e) => e.event === "turn_finished", 120_000);
    expect(done.data).toMatchObject({ status: "completed" });
    sseA.close();
    // the side effect happened exactly once
    expect(readFileSync(file, "utf8")).toBe("ran\n");
    // on A: the grandchild's tool result is in the database, and its turn (run by A) completed
    const [t] = await fx.pg`SELECT status FROM turns WHERE id = ${row.turn_id}`;
    expect(t.status).toBe("completed");
    const results = await fx.pg`SELECT is_error FROM messages WHERE session_id = ${card.home_session_id} AND role = 'tool'`;
    expect(results).toHaveLength(1);

    const second = await api(b, `/actions/${card.request_id}`, { method: "POST", body: JSON.stringify({ decision: "allow_once" }) });
    expect(second.status).toBe(409);
    expect(await second.json()).toMatchObject({ error: "already_decided" });
    const viaA = await api(a, `/actions/${card.request_id}`, { method: "POST", body: JSON.stringify({ decision: "deny" }) });
    expect(viaA.status).toBe(409);
    await sseB.waitFor((e) => e.event === "action_resolved" && (e.data as { request_id?: string }).request_id === card.request_id, 60_000);
    sseB.close();
    expect(readFileSync(file, "utf8")).toBe("ran\n");
    // both listeners came back (new backends)
    const after = await until("the LISTEN connections to come back", async () => {
      const now = await listening();
      return now.length >= before.length ? now : undefined;
    });
    const old = new Set(before.map((r: { pid: number }) => r.pid));
    expect(after.every((r: { pid: number }) => !old.has(r.pid))).toBe(true);

    for (const s of [a, b]) {
      s.proc.kill("SIGTERM");
      expect(await s.proc.exited).toBe(0);
    }
  }, 300_000);
});
