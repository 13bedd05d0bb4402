/**
 * Fencing with real processes (SPEC §5.8): two `airlock serve` (from source) on one throwaway PostgreSQL
 * database. A's turn is about to run a tool call its policy allows when A is paused (SIGSTOP) past its lease;
 * B's sweeper interrupts the turn; A is resumed (SIGCONT) with its model answer and its heartbeat both due.
 * The stale A must not run the call nor write anything more into the session; B's SSE shows the sweep's
 * `turn_finished` first. Skipped, with the reason, only when PostgreSQL is not installed.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { openSse } from "../harness.ts";
import { spawnServe, type ServeProcess } from "../harness-serve.ts";
import { useFleetE2e } from "../fixtures/fleet-e2e.ts";
import { pgAvailable } from "../pg-cluster.ts";

const MAIN = join(import.meta.dir, "..", "..", "src", "main.ts");
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

describe.skipIf(why !== null)(`a serve paused past its lease (SIGSTOP/SIGCONT)${why ? ` — skipped: ${why}` : ""}`, () => {
  const fx = useFleetE2e("airlock_sigstop_e2e", "airlock-sigstop-e2e-");
  const { dir, ws, procs } = fx;
  const marker = join(ws, "stale-ran.txt");

  function dataDir(name: string): string {
    const d = join(dir, name);
    mkdirSync(d, { recursive: true });
    writeFileSync(
      join(d, "turns.yaml"),
      stringify({ turns: [{ text: "thinking", delay_ms: 4000, tool_calls: [{ name: "developer__shell", arguments: { command: `echo ran >> ${marker}` } }] }, { text: "done" }] }),
    );
    writeFileSync(
      join(d, "airlock.yaml"),
      stringify({
        provider: { name: "scripted", script: "turns.yaml" },
        mode: "smart",
        tools: { developer__shell: { permission: "allow" } },
        fleet: { lease_ttl_seconds: 2, sweep_seconds: 0.5, poll_seconds: 0.5 },
        storage: fx.url,
      }),
    );
    return d;
  }

  async function serve(d: string): Promise<ServeProcess & { token: string }> {
    const sp = await spawnServe([process.execPath, MAIN, "serve", "--port", "0", "--data-dir", d], { cwd: ws });
    procs.push(sp.proc);
    return { ...sp, token: readFileSync(join(d, "api-token"), "utf8").trim() };
  }

  test("the resumed worker neither runs the allowed call nor writes into the session; the sweep's end comes first on the other node", async () => {
    const a = await serve(dataDir("a"));
    const b = await serve(dataDir("b"));
    const auth = (s: { token: string }) => ({ authorization: `Bearer ${s.token}`, "content-type": "application/json" });
    const created = await fetch(`${a.url}/sessions`, { method: "POST", headers: auth(a), body: JSON.stringify({ workspace: ws }) });
    expect(created.status).toBe(201);
    const sid = ((await created.json()) as { id: string }).id;
    const watch = await openSse(`${b.url}/sessions/${sid}/events`, { headers: auth(b) });
    const replyA = await openSse(`${a.url}/sessions/${sid}/reply`, { method: "POST", headers: auth(a), body: JSON.stringify({ message: "go" }) });
    const turnId = await until("A's lease", async () => {
      const r = await fx.pg`SELECT turn_id FROM inflight WHERE session_id = ${sid}`;
      return r.length ? String(r[0].turn_id) : undefined;
    });
    let atSweep = -1;
    a.proc.kill("SIGSTOP");
    try {
      try {
        await until("B's sweep", async () => ((await fx.pg`SELECT status FROM turns WHERE id = ${turnId}`)[0].status === "interrupted" ? true : undefined));
      } catch (e) {
        // Name what the sweep was up against: the turn, its lease, and every session on the database
        // (a paused A holding an open transaction's locks would show as "idle in transaction").
        const turn = await fx.pg`SELECT status FROM turns WHERE id = ${turnId}`;
        const lease = await fx.pg`SELECT worker_id, epoch, expires_at FROM inflight WHERE session_id = ${sid}`;
        const sessions = await fx.pg`SELECT pid, state, wait_event_type, wait_event, left(query, 120) AS query FROM pg_stat_activity WHERE datname = current_database()`;
        throw new Error(`${(e as Error).message}; now ${Date.now()}: turn ${JSON.stringify(turn)}, lease ${JSON.stringify(lease)}, sessions ${JSON.stringify(sessions)}`);
      }
      // past the model's delay too: on resume, its answer and the heartbeat are both due
      await Bun.sleep(4500);
      atSweep = (await fx.pg`SELECT id FROM messages WHERE session_id = ${sid}`).length;
    } finally {
      a.proc.kill("SIGCONT");
    }
    // B relays the sweep's end, then A's own (it stops when it finds its lease gone)
    await until("two turn_finished of the turn on B", async () => (watch.events.filter((e) => e.event === "turn_finished").length >= 2 ? true : undefined));
    const ends = watch.events.filter((e) => e.event === "turn_finished").map((e) => e.data as { turn_id: string; status: string; error?: { code: string } });
    expect(ends[0]).toMatchObject({ turn_id: turnId, status: "failed", error: { code: "interrupted" } });
    expect(ends[1]!.turn_id).toBe(turnId);
    expect(ends[1]!.status).not.toBe("completed");
    expect(existsSync(marker)).toBe(false);
    expect((await fx.pg`SELECT id FROM messages WHERE session_id = ${sid}`).length).toBe(atSweep);
    expect((await fx.pg`SELECT status FROM turns WHERE id = ${turnId}`)[0].status).toBe("interrupted");
    watch.close();
    replyA.close();
  }, 180_000);
});
