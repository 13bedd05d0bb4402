/**
 * A worker process killed mid-turn (`kill -9`) on PostgreSQL: within the lease TTL plus a sweep its turn is
 * `interrupted` and its card `worker_lost`, while another worker's lease on another session is unaffected.
 * Real processes (test/fixtures/fleet-worker.ts) and a throwaway cluster; waits are conditions with
 * generous bounds.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { pgAvailable, startPgCluster, type PgCluster } from "../../test/pg-cluster.ts";
import { migrateSql } from "../store/migrate.ts";
import { PG_MIGRATIONS } from "../store/migrations-pg.ts";
import { pgSql } from "../store/sql-pg.ts";
import type { Sql } from "../store/sql.ts";
import { CardRows } from "./card-rows.ts";
import { Leases } from "./leases.ts";
import { Sweeper } from "./sweeper.ts";

const WORKER = join(import.meta.dir, "..", "..", "test", "fixtures", "fleet-worker.ts");
/** The killed worker's lease: short, so the test waits little for the sweep. */
const TTL_MS = 3000;
/** The surviving worker's lease: long, so a busy machine delaying its heartbeat never loses it. */
const TTL_B_MS = 120_000;

describe.skipIf(pgAvailable() !== null)("a killed fleet worker (PostgreSQL, real processes)", () => {
  let cluster: PgCluster;
  let url: string;
  let sql: Sql;
  beforeAll(async () => {
    cluster = await startPgCluster();
    url = await cluster.createDatabase();
    sql = pgSql(url, { max: 4 });
    await migrateSql(sql, PG_MIGRATIONS);
  }, 180_000);
  afterAll(async () => {
    await sql?.close();
    cluster?.stop();
  }, 60_000);

  async function readLine(reader: ReadableStreamDefaultReader<Uint8Array>, prefix: string, buf: { s: string }): Promise<string> {
    const dec = new TextDecoder();
    for (;;) {
      const line = buf.s.split("\n").find((l) => l.startsWith(prefix));
      if (line) return line;
      const { value, done } = await reader.read();
      if (done) throw new Error(`the worker ended before printing "${prefix}": ${buf.s}`);
      buf.s += dec.decode(value, { stream: true });
    }
  }

  test("kill -9 of the worker: its turn becomes interrupted and its card worker_lost; another worker's lease is unaffected", async () => {
    const now = new Date().toISOString();
    await sql.run("INSERT INTO sessions (id, workspace, mode, sandbox, provider, created_at, updated_at) VALUES ('ses_a', '/w', 'smart', 'workspace-write', 'scripted', ?, ?), ('ses_b', '/w', 'smart', 'workspace-write', 'scripted', ?, ?)", [now, now, now, now]);
    await sql.run("INSERT INTO turns (id, session_id, status, started_at) VALUES ('turn_a', 'ses_a', 'running', ?), ('turn_b', 'ses_b', 'running', ?)", [now, now]);
    const worker = Bun.spawn([process.execPath, WORKER, url, "ses_a", "turn_a", String(TTL_MS)], { stdout: "pipe", stderr: "inherit" });
    // B: this process, holding its own lease on another session with a heartbeat
    const b = new Leases(sql, { workerId: "B", ttlMs: TTL_B_MS });
    const leaseB = await b.acquire("ses_b", "turn_b");
    let bLost = false;
    const hb = b.heartbeat(leaseB, () => (bLost = true));
    try {
      const buf = { s: "" };
      const line = await readLine(worker.stdout.getReader(), "parked ", buf);
      const [, cardId] = line.split(" ");
      const rows = new CardRows(sql);
      expect((await rows.get(cardId!))!.status).toBe("pending");
      const sweeper = new Sweeper(sql);
      worker.kill("SIGKILL");
      await worker.exited;
      const end = Date.now() + 60_000;
      const swept: string[] = [];
      while (!swept.includes("turn_a")) {
        if (Date.now() > end) throw new Error("the killed worker's lease was never swept");
        swept.push(...(await sweeper.sweep()).turns);
        await Bun.sleep(100);
      }
      expect((await sql.get<{ status: string }>("SELECT status FROM turns WHERE id = 'turn_a'"))!.status).toBe("interrupted");
      expect((await rows.get(cardId!))!.status).toBe("worker_lost");
      const late = await rows.decide(cardId!, { status: "allowed", outcome: { decision: "allow_once" }, audit: { sessionId: "ses_a", decision: "allow_once", proof: false } });
      expect(late.ok ? "" : late.error.code).toBe("already_decided");
      // B was never swept and still holds a live lease
      expect(swept).not.toContain("turn_b");
      expect(bLost).toBe(false);
      expect(await b.check("turn_b", leaseB.epoch)).toBe(true);
      expect((await sql.get<{ status: string }>("SELECT status FROM turns WHERE id = 'turn_b'"))!.status).toBe("running");
    } finally {
      hb.stop();
      worker.kill("SIGKILL");
    }
  }, 180_000);
});
