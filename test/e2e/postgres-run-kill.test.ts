/**
 * @module test/e2e/postgres-run-kill
 * A scheduled run on PostgreSQL whose process is killed with SIGKILL is not left `running` forever
 * (SPEC §5.8, docs/scale-out.md): two `airlock serve` processes (from source) share one throwaway
 * database and one every-2-seconds schedule whose run sleeps for a minute. While A's run goes on, later
 * occurrences are `skipped` (overlap policy) and a run-now through B is 409. A (named by the run's
 * `worker_id`) is killed with `kill -9`; within the (short) lease TTL the other process's sweeper
 * ends the run `interrupted`, and the next occurrence runs, on the survivor. Skipped, with the reason,
 * only when PostgreSQL is not installed.
 */
import { describe, expect, test } from "bun:test";
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { RUN_LOST_REASON } from "../../src/fleet/run-leases.ts";
import { spawnServe, type ServeProcess } from "../harness-serve.ts";
import { useFleetE2e } from "../fixtures/fleet-e2e.ts";
import { pgAvailable } from "../pg-cluster.ts";

const MAIN = join(import.meta.dir, "..", "..", "src", "main.ts");
const why = pgAvailable();

interface RunRow {
  id: string;
  status: string;
  worker_id: string | null;
  started_at: string;
  finished_at: string | null;
  reason: string | null;
}

async function until<T>(what: string, f: () => Promise<T | undefined>, ms = 120_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(200);
  }
}

describe.skipIf(why !== null)(`a scheduled run whose process is killed, on PostgreSQL${why ? ` — skipped: ${why}` : ""}`, () => {
  const fx = useFleetE2e("airlock_run_kill_e2e", "airlock-pg-run-kill-");
  const { dir, ws, procs } = fx;

  function dataDir(name: string, leaseTtlSeconds: number): string {
    const d = join(dir, name);
    mkdirSync(d, { recursive: true });
    writeFileSync(join(d, "turns.yaml"), stringify({ turns: [] }));
    writeFileSync(
      join(d, "airlock.yaml"),
      stringify({ provider: { name: "scripted", script: "turns.yaml" }, storage: fx.url, fleet: { lease_ttl_seconds: leaseTtlSeconds, sweep_seconds: 0.5, poll_seconds: 0.5 } }),
    );
    return d;
  }

  async function serve(d: string): Promise<ServeProcess & { token: string }> {
    const sp = await spawnServe([process.execPath, MAIN, "serve", "--port", "0", "--data-dir", d], { cwd: ws });
    procs.push(sp.proc);
    return { ...sp, token: readFileSync(join(d, "api-token"), "utf8").trim() };
  }

  const api = (s: { url: string; token: string }, path: string, init: RequestInit = {}) =>
    fetch(s.url + path, { ...init, headers: { authorization: `Bearer ${s.token}`, "content-type": "application/json", ...(init.headers ?? {}) } });

  const runs = async (scheduleId: string): Promise<RunRow[]> =>
    (await fx.pg`SELECT id, status, worker_id, started_at, finished_at, reason FROM runs WHERE schedule_id = ${scheduleId} ORDER BY started_at, id`) as RunRow[];

  test("kill -9 of the process running a scheduled run: the run ends interrupted, and the next occurrence runs on the other process", async () => {
    const recipeDir = join(dir, "recipes");
    mkdirSync(recipeDir);
    writeFileSync(join(recipeDir, "turns.yaml"), stringify({ turns: [{ tool_calls: [{ name: "developer__shell", arguments: { command: "sleep 60" } }] }, { text: "slept" }] }));
    const recipe = join(recipeDir, "slow.yaml");
    writeFileSync(recipe, stringify({ name: "slow", instructions: "sleep", provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous", sandbox: "workspace-write" }));

    // A alone first, with short leases: the first run is A's (A is the one killed)
    const dA = dataDir("a", 5);
    const a = await serve(dA);
    const add = await api(a, "/schedules", { method: "POST", body: JSON.stringify({ cron: "*/2 * * * * *", recipe_path: recipe, name: "slow" }) });
    expect(add.status).toBe(201);
    const schedule = (await add.json()) as { id: string };
    const held = await until("a running run held by A", async () => (await runs(schedule.id)).find((r) => r.status === "running" && r.worker_id !== null));
    expect(held.worker_id).toContain(`:${a.proc.pid}:`);
    // B, with long leases (a busy machine delaying B's heartbeat never loses B's run)
    const dB = dataDir("b", 120);
    copyFileSync(join(dA, "api-token"), join(dB, "api-token"));
    const b = await serve(dB);
    const holder = a;
    const survivor = b;
    // overlap policy while it runs: a later occurrence is skipped, and run-now through the other process is 409
    await until("a later occurrence skipped", async () => ((await runs(schedule.id)).some((r) => r.status === "skipped" && r.started_at > held.started_at) ? true : undefined));
    expect((await api(survivor, `/schedules/${schedule.id}/run`, { method: "POST" })).status).toBe(409);

    holder.proc.kill("SIGKILL");
    await holder.proc.exited;

    // the survivor's sweeper ends the run once its lease lapsed (5 s), never earlier than the kill
    const ended = await until("the killed process's run ended", async () => {
      const r = (await runs(schedule.id)).find((x) => x.id === held.id)!;
      return r.status === "running" ? undefined : r;
    });
    expect(ended).toMatchObject({ status: "interrupted", reason: RUN_LOST_REASON });
    expect(ended.finished_at).not.toBeNull();
    // and the next occurrence runs (not skipped), on the survivor
    const next = await until("the next occurrence running on the survivor", async () =>
      (await runs(schedule.id)).find((r) => r.started_at > ended.finished_at! && r.status !== "skipped"),
    );
    expect(next.worker_id).toContain(`:${survivor.proc.pid}:`);
    expect(["running", "completed"]).toContain(next.status);
    // the API shows the interrupted run as such
    const view = (await (await api(survivor, `/runs/${held.id}`)).json()) as { status: string };
    expect(view.status).toBe("interrupted");

    expect((await api(survivor, `/schedules/${schedule.id}`, { method: "DELETE" })).status).toBe(200);
    survivor.proc.kill("SIGTERM");
    expect(await survivor.proc.exited).toBe(0);
  }, 300_000);
});
