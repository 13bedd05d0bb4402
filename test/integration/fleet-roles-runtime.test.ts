/**
 * Roles at the runtime level (SPEC §5.8), three runtimes in this process on one throwaway PostgreSQL database:
 * an `api` runtime queues a turn and refuses to run one itself; a runtime created without a role (what
 * `airlock run` and `acp` build) never claims it; a `worker` runtime claims it and runs it, and the api
 * runtime's bus gets the whole turn through the relay, with `in_flight` seen from the api side meanwhile.
 * A queued turn cancelled before any claim ends `cancelled` and is never run. Skipped only without PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import type { AnyEvent } from "../../src/bus/bus.ts";
import { Config } from "../../src/config/schema.ts";
import { AirlockError } from "../../src/errors.ts";
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

describe.skipIf(why !== null)(`serve roles in one process on PostgreSQL${why ? ` — skipped: ${why}` : ""}`, () => {
  let cluster: PgCluster;
  let url: string;
  let pg: InstanceType<typeof Bun.SQL>;
  const dir = mkdtempSync(join(tmpdir(), "airlock-roles-rt-"));
  const runtimes: Runtime[] = [];

  beforeAll(async () => {
    cluster = await startPgCluster();
    url = await cluster.createDatabase("airlock_roles_rt");
    pg = new Bun.SQL(url, { max: 1 });
  }, 120_000);
  afterAll(async () => {
    for (const rt of runtimes.reverse()) await rt.close();
    await pg?.close();
    cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  async function runtime(name: string, role?: ServeRole): Promise<Runtime> {
    const d = join(dir, name);
    mkdirSync(join(d, "ws"), { recursive: true });
    writeFileSync(join(d, "turns.yaml"), stringify({ turns: [{ text: "hello from the worker" }] }));
    const config = Config.parse({
      provider: { name: "scripted", script: "turns.yaml" },
      storage: url,
      fleet: { lease_ttl_seconds: 8, sweep_seconds: 0.5, poll_seconds: 0.3, queue_timeout_seconds: 60 },
    });
    const rt = await createRuntime({ config, configDir: d, dataDir: d, workspace: join(d, "ws"), env: {}, ...(role ? { role } : {}) });
    runtimes.push(rt);
    return rt;
  }

  test("api queues, a role-less runtime never claims, a worker claims and runs it; the api bus sees it all", async () => {
    const api = await runtime("api", "api");
    const plain = await runtime("plain");
    const session = await api.createSession({ workspace: join(dir, "api", "ws") });

    // an api node never runs a turn itself
    const refused = await api.startTurn(session.id, "no").catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(AirlockError);
    expect((refused as AirlockError).message).toContain("--role api");

    const seen: AnyEvent[] = [];
    api.bus.subscribe(session.id, (ev) => seen.push(ev));
    const { turnId } = await api.requestTurn(session.id, "hi");
    // a second request while it is queued: session_busy, nothing stored
    const busy = await api.requestTurn(session.id, "again").catch((e: unknown) => e);
    expect((busy as AirlockError).code).toBe("session_busy");
    expect((await pg`SELECT COUNT(*)::int AS n FROM turn_requests WHERE session_id = ${session.id}`)[0].n).toBe(1);

    // several polls of the role-less runtime go by: the request is still queued (it would be claimed within ms)
    await Bun.sleep(1500);
    const [queued] = await pg`SELECT state FROM turn_requests WHERE id = ${turnId}`;
    expect(queued.state).toBe("queued");
    expect(plain.role).toBe("all");

    const worker = await runtime("worker", "worker");
    await until("turn_finished on the api bus", () => seen.some((e) => e.type === "turn_finished"));
    const types = seen.map((e) => e.type);
    expect(types[0]).toBe("turn_started");
    expect(types.at(-1)).toBe("turn_finished");
    expect(seen.find((e) => e.type === "turn_finished")!.data).toMatchObject({ turn_id: turnId, status: "completed", answer: "hello from the worker" });
    expect(seen.filter((e) => e.type === "message").map((e) => (e.data as { role: string }).role)).toEqual(["user", "assistant"]);
    const [req] = await pg`SELECT state, worker_id FROM turn_requests WHERE id = ${turnId}`;
    expect(req.state).toBe("done");
    expect(String(req.worker_id)).toContain(`:${process.pid}:`);
    expect(await worker.remoteInFlight(session.id)).toEqual([]);
  }, 180_000);

  test("a queued turn cancelled before any claim ends cancelled on the bus and never runs", async () => {
    const api = runtimes.find((r) => r.role === "api")!;
    const worker = runtimes.find((r) => r.role === "worker")!;
    // no worker alive: the request stays queued
    await worker.close();
    const session = await api.createSession({ workspace: join(dir, "api", "ws") });
    const seen: AnyEvent[] = [];
    api.bus.subscribe(session.id, (ev) => seen.push(ev));
    const { turnId } = await api.requestTurn(session.id, "hi");
    expect(await api.cancelEverywhere(session.id, "changed my mind")).toBe(true);
    const fin = seen.find((e) => e.type === "turn_finished");
    expect(fin?.data).toMatchObject({ turn_id: turnId, status: "cancelled", error: { code: "cancelled", message: "changed my mind" } });
    const [req] = await pg`SELECT state FROM turn_requests WHERE id = ${turnId}`;
    expect(req.state).toBe("cancelled");
    // a worker starting now finds nothing to run
    const late = await runtime("worker2", "worker");
    await Bun.sleep(1000);
    expect((await pg`SELECT id FROM turns WHERE session_id = ${session.id}`).length).toBe(0);
    expect(await late.cancelEverywhere(session.id)).toBe(false);
  }, 180_000);
});
