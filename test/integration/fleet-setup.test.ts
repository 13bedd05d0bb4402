/**
 * A deployment's nodes must agree, and where they cannot (SPEC §5.8, docs/scale-out.md "Every node, one
 * config"), they fail closed: on one throwaway PostgreSQL database, runtimes in this process play the nodes.
 * - `serve --role worker --headless` is refused (usage, exit 2) instead of silently ignored; a session
 *   created by a headless `api` node is headless, and the worker that runs its turn refuses its ask at once
 *   (`no_human_surface`, no card parked).
 * - A session created by an api node configured for `openai` at a loopback URL, run by a worker whose config
 *   is `scripted`, fails `provider_unavailable` naming both; nothing is sent anywhere (the worker never builds
 *   an openai provider, so never reaches api.openai.com). On one node whose config changed between sessions,
 *   the same, and for a session created asking for another provider (`POST /sessions {provider}`).
 * - The "no model configured" warning is not printed on an api node; a worker stopped mid-turn (what
 *   SIGTERM does: `rt.close()`) ends the turn `cancelled` on the api node's bus, its card not left
 *   pending, and the turn is not re-queued.
 * Skipped only without PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import type { AnyEvent } from "../../src/bus/bus.ts";
import { Config } from "../../src/config/schema.ts";
import type { ServeRole } from "../../src/fleet/role.ts";
import { createRuntime, type Runtime } from "../../src/runtime.ts";
import { type PgCluster, pgAvailable, startPgCluster } from "../pg-cluster.ts";

const MAIN = join(import.meta.dir, "..", "..", "src", "main.ts");
const why = pgAvailable();

async function until(what: string, cond: () => boolean | Promise<boolean>, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(20);
  }
}

test("serve --role worker --headless is refused at start: usage, exit 2, pointing at the api nodes", async () => {
  const d = mkdtempSync(join(tmpdir(), "airlock-worker-headless-"));
  try {
    const p = Bun.spawn([process.execPath, MAIN, "serve", "--role", "worker", "--headless", "--data-dir", d], { env: { ...process.env, AIRLOCK_DATABASE_URL: "postgres://u@127.0.0.1:1/x" }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    const [code, err] = await Promise.all([p.exited, new Response(p.stderr).text()]);
    expect(code).toBe(2);
    expect(err).toContain("usage");
    expect(err).toContain("pass --headless to the api nodes");
  } finally {
    rmSync(d, { recursive: true, force: true });
  }
}, 60_000);

describe.skipIf(why !== null)(`nodes of one deployment on PostgreSQL${why ? ` — skipped: ${why}` : ""}`, () => {
  let cluster: PgCluster;
  let url: string;
  let pg: InstanceType<typeof Bun.SQL>;
  const dir = mkdtempSync(join(tmpdir(), "airlock-fleet-setup-"));
  const runtimes: Runtime[] = [];

  beforeAll(async () => {
    cluster = await startPgCluster();
    url = await cluster.createDatabase("airlock_fleet_setup");
    pg = new Bun.SQL(url, { max: 1 });
  }, 120_000);
  afterAll(async () => {
    for (const rt of runtimes.reverse()) await rt.close().catch(() => {});
    await pg?.close();
    cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  async function runtime(name: string, o: { role?: ServeRole; headless?: boolean; provider?: Record<string, unknown>; log?: (l: string) => void }): Promise<Runtime> {
    const d = join(dir, name);
    mkdirSync(join(d, "ws"), { recursive: true });
    writeFileSync(join(d, "turns.yaml"), stringify({ turns: [{ tool_calls: [{ name: "developer__write_file", arguments: { path: "out.txt", content: "x" } }] }, { text: "worker done" }] }));
    const config = Config.parse({
      provider: o.provider ?? { name: "scripted", script: "turns.yaml" },
      mode: "smart",
      storage: url,
      fleet: { lease_ttl_seconds: 8, sweep_seconds: 0.5, poll_seconds: 0.3, queue_timeout_seconds: 60 },
    });
    const rt = await createRuntime({ config, configDir: d, dataDir: d, workspace: join(d, "ws"), env: {}, ...(o.role ? { role: o.role } : {}), ...(o.headless ? { headless: true } : {}), ...(o.log ? { log: o.log } : {}) });
    runtimes.push(rt);
    return rt;
  }

  async function finished(api: Runtime, sessionId: string, message: string): Promise<Record<string, unknown>> {
    const seen: AnyEvent[] = [];
    const off = api.bus.subscribe(sessionId, (ev) => seen.push(ev));
    try {
      const { turnId } = await api.requestTurn(sessionId, message);
      await until("turn_finished on the api bus", () => seen.some((e) => e.type === "turn_finished" && (e.data as { turn_id: string }).turn_id === turnId));
      return seen.find((e) => e.type === "turn_finished")!.data as Record<string, unknown>;
    } finally {
      if (typeof off === "function") off();
    }
  }

  test("a session created by a headless api node is headless; the worker running it refuses the ask at once, parks no card", async () => {
    const api = await runtime("api-headless", { role: "api", headless: true });
    const worker = await runtime("worker-a", { role: "worker" });
    const session = await api.createSession({ workspace: join(dir, "api-headless", "ws") });
    expect(session.headless).toBe(true);
    const fin = await finished(api, session.id, "write it");
    expect(fin).toMatchObject({ status: "completed", answer: "worker done" });
    const tool = (await api.store.listMessages(session.id)).find((m) => m.role === "tool")!;
    expect(JSON.stringify(tool.content)).toContain("no_human_surface");
    expect((await pg`SELECT COUNT(*)::int AS n FROM cards WHERE session_id = ${session.id}`)[0].n).toBe(0);
    await worker.close();
    await api.close();
  }, 180_000);

  test("a session naming openai (api node) run by a scripted worker: provider_unavailable naming both, nothing sent", async () => {
    const api = await runtime("api-openai", { role: "api", provider: { name: "openai", base_url: "http://127.0.0.1:9/v1", model: "m" } });
    const worker = await runtime("worker-b", { role: "worker" });
    const session = await api.createSession({ workspace: join(dir, "api-openai", "ws") });
    expect(session.provider).toBe("openai");
    const fin = await finished(api, session.id, "hi");
    expect(fin.status).toBe("failed");
    const error = fin.error as { code: string; message: string };
    expect(error.code).toBe("provider_unavailable");
    expect(error.message).toContain("names provider openai");
    expect(error.message).toContain("configures provider scripted");
    expect(error.message).toContain("same provider: settings");
    // no model call was made: only the user's message is stored
    expect((await api.store.listMessages(session.id)).map((m) => m.role)).toEqual(["user"]);
    await worker.close();
    await api.close();
  }, 180_000);

  test("one node whose config changed since the session was made, or a session asking for another provider: its turns are provider_unavailable", async () => {
    const before = await runtime("single-before", { provider: { name: "openai", base_url: "http://127.0.0.1:9/v1", model: "m" } });
    const session = await before.createSession({ workspace: join(dir, "single-before", "ws") });
    await before.close();
    const after = await runtime("single-after", { provider: { name: "anthropic", base_url: "http://127.0.0.1:9" } });
    const r = await after.runTurn(session.id, "hi");
    expect(r.status).toBe("failed");
    expect(r.error?.code).toBe("provider_unavailable");
    // a session asking for a provider this config does not configure (POST /sessions {provider}): its turn is refused
    const other = await after.createSession({ workspace: join(dir, "single-after", "ws"), provider: "openai" });
    const r2 = await after.runTurn(other.id, "hi");
    expect(r2.error?.code).toBe("provider_unavailable");
    expect(r2.error?.message).toContain("configures provider anthropic at http://127.0.0.1:9");
    // scripted sends nothing anywhere: still allowed beside another configured provider
    expect((await after.createSession({ workspace: join(dir, "single-after", "ws"), provider: "scripted" })).provider).toBe("scripted");
    await after.close();
  }, 180_000);

  test("the no-model warning is not printed on an api node (it never calls a model), still on a worker", async () => {
    const apiLog: string[] = [];
    const workerLog: string[] = [];
    const api = await runtime("api-nomodel", { role: "api", provider: { name: "scripted" }, log: (l) => apiLog.push(l) });
    const worker = await runtime("worker-nomodel", { role: "worker", provider: { name: "scripted" }, log: (l) => workerLog.push(l) });
    expect(workerLog.some((l) => l.includes("no model configured"))).toBe(true);
    expect(apiLog.some((l) => l.includes("no model configured"))).toBe(false);
    await worker.close();
    await api.close();
  }, 120_000);

  test("a worker stopped mid-turn (SIGTERM's path: close) cancels the turn, every node sees it end, it is not re-queued", async () => {
    const api = await runtime("api-stop", { role: "api" });
    const worker = await runtime("worker-stop", { role: "worker" });
    const session = await api.createSession({ workspace: join(dir, "api-stop", "ws") });
    const seen: AnyEvent[] = [];
    api.bus.subscribe(session.id, (ev) => seen.push(ev));
    const { turnId } = await api.requestTurn(session.id, "write it");
    // the turn waits on a card (write_file asks in smart mode): it is running on the worker
    await until("a pending card", async () => (await pg`SELECT COUNT(*)::int AS n FROM cards WHERE session_id = ${session.id}`)[0].n === 1);
    await worker.close();
    await until("turn_finished on the api bus", () => seen.some((e) => e.type === "turn_finished"));
    expect(seen.find((e) => e.type === "turn_finished")!.data).toMatchObject({ turn_id: turnId, status: "cancelled" });
    const [req] = await pg`SELECT state FROM turn_requests WHERE id = ${turnId}`;
    expect(req.state).not.toBe("queued");
    const [card] = await pg`SELECT status FROM cards WHERE session_id = ${session.id}`;
    expect(card.status).not.toBe("pending");
    // a worker starting now runs nothing of it
    const late = await runtime("worker-late", { role: "worker" });
    await Bun.sleep(1000);
    expect((await pg`SELECT COUNT(*)::int AS n FROM turns WHERE session_id = ${session.id}`)[0].n).toBe(1);
    await late.close();
    await api.close();
  }, 180_000);
});
