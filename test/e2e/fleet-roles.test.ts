/**
 * @module test/e2e/fleet-roles
 * `airlock serve --role api` and `airlock serve --role worker` (from source) on one throwaway PostgreSQL
 * database (SPEC §5.8): a message posted to the api node is queued and run on the worker (the scripted
 * provider), and the api node's SSE shows the turn's whole event sequence, ending in `turn_finished`; the
 * card the worker raises is answered through the api node and the call runs once (in the worker process); a
 * schedule fired through the api node (which only enqueues) runs on the worker; a second message while
 * it runs is 409; cancel through the api node stops a turn running on the worker; kill -9 of the worker
 * mid-turn: the api node's SSE shows the turn interrupted and the card ended, its row `worker_lost`; with no
 * worker left, a message fails `no_worker` after `fleet.queue_timeout_seconds`. Skipped, with the reason,
 * only when PostgreSQL is not installed.
 */
import { describe, expect, test } from "bun:test";
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { openSse, type SseStream } from "../harness.ts";
import { spawnServe, type ServeProcess } from "../harness-serve.ts";
import { useFleetE2e } from "../fixtures/fleet-e2e.ts";
import { pgAvailable } from "../pg-cluster.ts";

const MAIN = join(import.meta.dir, "..", "..", "src", "main.ts");
const HOOKS = join(import.meta.dir, "..", "fixtures", "hooks");
const why = pgAvailable();

async function until<T>(what: string, f: () => Promise<T | undefined>, ms = 90_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(100);
  }
}

describe.skipIf(why !== null)(`airlock serve --role api + --role worker on one PostgreSQL database${why ? ` — skipped: ${why}` : ""}`, () => {
  const fx = useFleetE2e("airlock_roles_e2e", "airlock-roles-e2e-");
  const { dir, ws, procs } = fx;
  const marker = join(ws, "ran.txt");

  /** A data dir: each root session's turn asks for a shell call a hook sends to a person, then answers; a short lease. */
  function dataDir(name: string): string {
    const d = join(dir, name);
    mkdirSync(d, { recursive: true });
    writeFileSync(
      join(d, "turns.yaml"),
      stringify({ turns: [{ tool_calls: [{ name: "developer__shell", arguments: { command: `echo ran >> ${marker}` } }] }, { text: "root done" }] }),
    );
    writeFileSync(
      join(d, "airlock.yaml"),
      stringify({
        provider: { name: "scripted", script: "turns.yaml" },
        hooks: { PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: join(HOOKS, "ask.sh"), timeout: 30 }] }] },
        // a lease long enough that a busy machine's stall never loses a live worker's turn; the sweep finds a dead one within it
        fleet: { lease_ttl_seconds: 8, sweep_seconds: 0.5, poll_seconds: 0.5, queue_timeout_seconds: 20 },
        storage: fx.url,
      }),
    );
    return d;
  }

  const tokens = (d: string) => ({ token: readFileSync(join(d, "api-token"), "utf8").trim(), approver: readFileSync(join(d, "approver-token"), "utf8").trim() });

  async function apiNode(d: string): Promise<ServeProcess & { token: string; approver: string }> {
    const sp = await spawnServe([process.execPath, MAIN, "serve", "--role", "api", "--port", "0", "--data-dir", d], { cwd: ws });
    procs.push(sp.proc);
    return { ...sp, ...tokens(d) };
  }

  /** Spawns a worker and resolves once it says what it does (it binds no port). */
  async function workerNode(d: string): Promise<{ proc: Bun.Subprocess; stderr(): string }> {
    const proc = Bun.spawn([process.execPath, MAIN, "serve", "--role", "worker", "--data-dir", d], { cwd: ws, stdin: "ignore", stdout: "ignore", stderr: "pipe" });
    procs.push(proc);
    const reader = proc.stderr.pipeThrough(new TextDecoderStream()).getReader();
    let seen = "";
    while (!seen.includes("airlock: worker:")) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the worker exited before starting:\n${seen}`);
      seen += value;
    }
    void (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        seen += value;
      }
    })();
    return { proc, stderr: () => seen };
  }

  const call = (s: { url: string; token: string; approver: string }, path: string, init: RequestInit = {}) =>
    fetch(s.url + path, {
      ...init,
      headers: { authorization: `Bearer ${s.token}`, "x-airlock-approver": s.approver, "content-type": "application/json", ...(init.headers ?? {}) },
    });

  async function newSession(s: { url: string; token: string; approver: string }, title: string): Promise<string> {
    const r = await call(s, "/sessions", { method: "POST", body: JSON.stringify({ workspace: ws, title }) });
    expect(r.status).toBe(201);
    return ((await r.json()) as { id: string }).id;
  }

  function reply(s: { url: string; token: string }, id: string, message: string): Promise<SseStream> {
    return openSse(`${s.url}/sessions/${id}/reply`, {
      method: "POST",
      headers: { authorization: `Bearer ${s.token}`, "content-type": "application/json" },
      body: JSON.stringify({ message }),
    });
  }

  async function cardOf(s: { url: string; token: string; approver: string }, root: string): Promise<string | undefined> {
    const r = (await (await call(s, "/actions")).json()) as { actions: { request_id: string; home_session_id: string; tool: string }[] };
    return r.actions.find((c) => c.tool === "developer__shell" && c.home_session_id === root)?.request_id;
  }

  test("a turn posted to the api node runs on the worker; the api node's SSE shows it all; card answered through the api node; cancel; kill -9 of the worker; no_worker", async () => {
    const dApi = dataDir("api");
    const api = await apiNode(dApi);
    expect(api.stderr()).toContain("role api: turns asked for here are queued for a worker");
    const dWorker = dataDir("worker");
    // one deployment: the worker shares the api node's tokens
    for (const f of ["api-token", "approver-token"]) copyFileSync(join(dApi, f), join(dWorker, f));
    const worker = await workerNode(dWorker);
    expect(worker.stderr()).not.toContain("listening on");
    const [{ id: workerPid }] = [{ id: worker.proc.pid }];

    // 1. the whole turn, seen on the api node; its card answered there; the call runs once, on the worker
    const s1 = await newSession(api, "roles");
    const observer = await openSse(`${api.url}/sessions/${s1}/events`, { headers: { authorization: `Bearer ${api.token}` } });
    expect(observer.status).toBe(200);
    const sse = await reply(api, s1, "go");
    expect(sse.status).toBe(200);
    const started = await sse.waitFor((e) => e.event === "turn_started", 60_000);
    const turnId = (started.data as { turn_id: string }).turn_id;
    const card = await until("the worker's card listed on the api node", () => cardOf(api, s1));
    await sse.waitFor((e) => e.event === "action_required" && (e.data as { request_id: string }).request_id === card, 60_000);
    // the session is busy fleet-wide: a second message is refused 409 on the api node
    const busy = await call(api, `/sessions/${s1}/reply`, { method: "POST", body: JSON.stringify({ message: "again" }) });
    expect(busy.status).toBe(409);
    expect(await busy.json()).toMatchObject({ error: "session_busy" });
    expect(existsSync(marker)).toBe(false);
    // the api node says the session is in flight (its turn runs on the worker)
    expect(await (await call(api, `/sessions/${s1}`)).json()).toMatchObject({ in_flight: true });
    const answer = await call(api, `/actions/${card}`, { method: "POST", body: JSON.stringify({ decision: "allow_once" }) });
    expect(answer.status).toBe(200);
    const done = await sse.waitFor((e) => e.event === "turn_finished", 120_000);
    expect(done.data).toMatchObject({ session_id: s1, turn_id: turnId, status: "completed", answer: "root done" });
    sse.close();
    const types = sse.events.map((e) => e.event);
    expect(types[0]).toBe("turn_started");
    expect(types.at(-1)).toBe("turn_finished");
    for (const t of ["message", "delta", "tool_request", "action_required", "action_resolved", "tool_result"]) expect(types).toContain(t);
    const contents = sse.events.filter((e) => e.event === "message").map((e) => (e.data as { role: string }).role);
    expect(contents).toEqual(["user", "assistant", "tool", "assistant"]);
    await observer.waitFor((e) => e.event === "turn_finished", 60_000);
    observer.close();
    expect(readFileSync(marker, "utf8")).toBe("ran\n");
    // the worker claimed it (once), and no turn ran in the api process
    const [req] = await fx.pg`SELECT state, worker_id FROM turn_requests WHERE id = ${turnId}`;
    expect(req.state).toBe("done");
    expect(String(req.worker_id)).toContain(`:${workerPid}:`);
    const [turn] = await fx.pg`SELECT status FROM turns WHERE id = ${turnId}`;
    expect(turn.status).toBe("completed");
    expect(await (await call(api, `/sessions/${s1}`)).json()).toMatchObject({ in_flight: false });

    // the turn ran in the worker process, not in the api node's
    const [owner] = await fx.pg`SELECT owner_pid FROM turns WHERE id = ${turnId}`;
    expect(Number(owner.owner_pid)).toBe(workerPid);

    // 1b. a schedule fired through the api node (which only enqueues) runs on the worker
    const recipeDir = join(dir, "recipes");
    mkdirSync(recipeDir);
    writeFileSync(join(recipeDir, "turns.yaml"), stringify({ turns: [{ text: "tick done" }] }));
    const recipe = join(recipeDir, "tick.yaml");
    writeFileSync(recipe, stringify({ name: "tick", instructions: "tick", provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous" }));
    const add = await call(api, "/schedules", { method: "POST", body: JSON.stringify({ cron: "0 0 1 1 *", recipe_path: recipe, name: "yearly" }) });
    expect(add.status).toBe(201);
    const schedule = (await add.json()) as { id: string };
    const fire = await call(api, `/schedules/${schedule.id}/run`, { method: "POST" });
    expect(fire.status).toBe(202);
    const fired = (await fire.json()) as { run_id?: string; run?: { run_id: string } };
    const runId = fired.run_id ?? fired.run?.run_id;
    const run = await until("the manual run to finish on the worker", async () => {
      const r = (await (await call(api, `/runs/${runId}`)).json()) as { status: string; session_id: string | null };
      return r.status !== "running" ? r : undefined;
    });
    expect(run.status).toBe("completed");
    const runTurns = await fx.pg`SELECT owner_pid FROM turns WHERE session_id = ${run.session_id}`;
    expect(runTurns.length).toBeGreaterThan(0);
    for (const t of runTurns) expect(Number(t.owner_pid)).toBe(workerPid);

    // 2. cancel through the api node stops the turn on the worker
    const s2 = await newSession(api, "roles-cancel");
    const sse2 = await reply(api, s2, "go");
    const card2 = await until("the second card on the api node", () => cardOf(api, s2));
    const cancel = await call(api, `/sessions/${s2}/cancel`, { method: "POST", body: "{}" });
    expect(cancel.status).toBe(200);
    expect(await cancel.json()).toMatchObject({ session_id: s2, cancelled: true });
    const cancelled = await sse2.waitFor((e) => e.event === "turn_finished", 60_000);
    expect(cancelled.data).toMatchObject({ status: "cancelled", error: { code: "cancelled" } });
    sse2.close();
    // the card is withdrawn as the turn ends (its row written right after turn_finished may be sent)
    const c2 = await until("the cancelled turn's card row to end", async () => {
      const [r] = await fx.pg`SELECT status FROM cards WHERE id = ${card2}`;
      return r.status === "pending" ? undefined : (r.status as string);
    });
    expect(c2).toBe("cancelled");
    const [t2] = await fx.pg`SELECT status FROM turns WHERE id = ${(cancelled.data as { turn_id: string }).turn_id}`;
    expect(t2.status).toBe("cancelled");
    expect(readFileSync(marker, "utf8")).toBe("ran\n");

    // 3. kill -9 of the worker while a card waits: the api node's SSE shows the turn interrupted, the card ended
    const s3 = await newSession(api, "roles-kill");
    // the reply stream ends at turn_finished; the card's end (from its row, through the feed) may come after it
    const observer3 = await openSse(`${api.url}/sessions/${s3}/events`, { headers: { authorization: `Bearer ${api.token}` } });
    const sse3 = await reply(api, s3, "go");
    const card3 = await until("the third card on the api node", () => cardOf(api, s3));
    await sse3.waitFor((e) => e.event === "action_required", 60_000);
    worker.proc.kill("SIGKILL");
    await worker.proc.exited;
    const lost = await sse3.waitFor((e) => e.event === "turn_finished", 90_000);
    // the whole stream on failure: what ended the turn, and in what order
    const seen3 = sse3.events.map((e) => ({ event: e.event, data: e.event === "message" ? undefined : e.data }));
    expect({ lost: lost.data, seen3 }).toMatchObject({ lost: { session_id: s3, status: "failed", error: { code: "interrupted" } } });
    expect(seen3.filter((e) => e.event === "error")).toMatchObject([{ data: { code: "interrupted" } }]);
    await observer3.waitFor((e) => e.event === "action_resolved" && (e.data as { request_id: string }).request_id === card3, 60_000);
    await observer3.waitFor((e) => e.event === "turn_finished", 60_000);
    observer3.close();
    sse3.close();
    const [c3] = await fx.pg`SELECT status FROM cards WHERE id = ${card3}`;
    expect(c3.status).toBe("worker_lost");
    const [t3] = await fx.pg`SELECT status FROM turns WHERE id = ${(lost.data as { turn_id: string }).turn_id}`;
    expect(t3.status).toBe("interrupted");

    // 4. no worker alive: the message stays queued, then fails no_worker (the turn never started)
    const s4 = await newSession(api, "roles-no-worker");
    const sse4 = await reply(api, s4, "go");
    expect(sse4.status).toBe(200);
    const none = await sse4.waitFor((e) => e.event === "turn_finished", 120_000);
    expect(none.data).toMatchObject({ session_id: s4, status: "failed", error: { code: "no_worker" } });
    sse4.close();
    const [r4] = await fx.pg`SELECT state FROM turn_requests WHERE id = ${(none.data as { turn_id: string }).turn_id}`;
    expect(r4.state).toBe("expired");
    expect((await fx.pg`SELECT id FROM turns WHERE session_id = ${s4}`).length).toBe(0);
    expect(readFileSync(marker, "utf8")).toBe("ran\n");

    api.proc.kill("SIGTERM");
    expect(await api.proc.exited).toBe(0);
  }, 400_000);
});
