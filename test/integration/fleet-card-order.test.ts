/**
 * On a fleet with roles (SPEC §5.8), a card parked on a worker reaches the api node's bus after the events
 * that led to it: the turn's start, the assistant message and the call's `tool_request` — as on the node
 * that parked it. The parking node relays its pending events before it parks the row (card/pending.ts), and
 * a node publishing another node's new card first reads the relay up to it (fleet/feed.ts). Three cards in
 * one turn, each answered through the api runtime. Skipped only without PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import type { AnyEvent } from "../../src/bus/bus.ts";
import { Config } from "../../src/config/schema.ts";
import { createRuntime, type Runtime } from "../../src/runtime.ts";
import type { ServeRole } from "../../src/fleet/role.ts";
import { type PgCluster, pgAvailable, startPgCluster } from "../pg-cluster.ts";

const why = pgAvailable();
const CARDS = 3;

async function until(what: string, cond: () => boolean, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(10);
  }
}

describe.skipIf(why !== null)(`a worker's card reaches the api node after what led to it${why ? ` — skipped: ${why}` : ""}`, () => {
  let cluster: PgCluster;
  let url: string;
  const dir = mkdtempSync(join(tmpdir(), "airlock-card-order-"));
  const runtimes: Runtime[] = [];

  beforeAll(async () => {
    cluster = await startPgCluster();
    url = await cluster.createDatabase("airlock_card_order");
  }, 120_000);
  afterAll(async () => {
    for (const rt of runtimes.reverse()) await rt.close();
    cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  async function runtime(name: string, role: ServeRole): Promise<Runtime> {
    const d = join(dir, name);
    mkdirSync(join(d, "ws"), { recursive: true });
    // each call writes a file and reads it back: smart mode asks a person for each (no single rule covers it)
    const calls = Array.from({ length: CARDS }, (_, i) => ({
      tool_calls: [{ name: "developer__shell", arguments: { command: `echo ${i} > out${i}.txt && cat out${i}.txt` } }],
    }));
    writeFileSync(join(d, "turns.yaml"), stringify({ turns: [...calls, { text: "done" }] }));
    const config = Config.parse({
      provider: { name: "scripted", script: "turns.yaml" },
      mode: "smart",
      storage: url,
      fleet: { lease_ttl_seconds: 8, sweep_seconds: 0.5, poll_seconds: 0.3, queue_timeout_seconds: 60 },
    });
    const rt = await createRuntime({ config, configDir: d, dataDir: d, workspace: join(d, "ws"), env: {}, role });
    runtimes.push(rt);
    return rt;
  }

  test("every card comes after its turn's start and its call's tool_request on the api bus", async () => {
    const api = await runtime("api", "api");
    await runtime("worker", "worker");
    const session = await api.createSession({ workspace: join(dir, "api", "ws") });
    const seen: AnyEvent[] = [];
    api.bus.subscribe(session.id, (ev) => seen.push(ev));
    await api.requestTurn(session.id, "go");
    for (let i = 0; i < CARDS; i++) {
      await until(`card ${i + 1} on the api bus`, () => seen.filter((e) => e.type === "action_required").length > i);
      const card = seen.filter((e) => e.type === "action_required")[i]!;
      const at = seen.indexOf(card);
      const before = seen.slice(0, at).map((e) => e.type);
      expect(before).toContain("turn_started");
      // the card's own call was announced before it (one call per card, in order)
      expect(before.filter((t) => t === "tool_request").length).toBe(i + 1);
      const r = await api.cards.resolveAtSurface((card.data as { request_id: string }).request_id, "deny", { approverToken: null, actor: "http" });
      expect(r.ok).toBe(true);
    }
    await until("turn_finished on the api bus", () => seen.some((e) => e.type === "turn_finished"));
    expect(seen.at(-1)!.type).toBe("turn_finished");
  }, 180_000);
});
