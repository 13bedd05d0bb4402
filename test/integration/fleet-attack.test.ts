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
  }, 120_000);
});
