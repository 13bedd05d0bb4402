/**
 * @module scripts/bench/wal-pages
 * What one park and its answer write to the WAL, page by page: the `floors.ts` park loop (a child's card, denied
 * from the root) run N times in a runtime whose WAL stays under the checkpoint thread's start (1 MB), then the
 * `-wal` file read frame by frame (SQLite's WAL format: a 32-byte header, then per frame a 24-byte header — page
 * number, database size after a commit frame or 0 — and the page) and each page named by the B-tree holding it
 * (`dbstat`). Prints the last commits' pages and the WAL bytes per park + answer. Load does not change these counts.
 * Usage: `bun scripts/bench/wal-pages.ts [N=12]` (N ≤ ~20: more takes the WAL past 1 MB and the thread starts it over).
 */
import { Database } from "bun:sqlite";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Config } from "../../src/config/schema.ts";
import { newId } from "../../src/ids.ts";
import { createRuntime } from "../../src/runtime.ts";

const N = Number(process.argv[2] ?? 12);
const dataDir = mkdtempSync(join(tmpdir(), "airlock-wal-pages-"));
const rt = await createRuntime({ config: Config.parse({ limits: { script_workers: 1 } }), configDir: dataDir, dataDir, env: {} });
try {
  const root = await rt.store.createSession({ workspace: dataDir, mode: "smart", sandbox: "workspace-write", privacy: "public", headless: false, provider: "scripted" });
  const child = await rt.store.createSession({ parent_session_id: root.id, workspace: dataDir, mode: "smart", sandbox: "workspace-write", privacy: "public", headless: false, provider: "scripted" });
  const turnId = newId("turn");
  rt.inflight.register(child.id, turnId);
  let parked: ((id: string) => void) | undefined;
  rt.bus.subscribe(root.id, (ev) => {
    if (ev.type === "action_required") parked?.((ev.data as { request_id: string }).request_id);
  });
  for (let i = 0; i < N; i++) {
    const id = new Promise<string>((r) => (parked = r));
    const outcome = rt.cards.park({ homeSessionId: child.id, turnId, callId: newId("call"), tool: "developer__shell", arguments: { command: `touch f${i}` }, inspector: "mode", reason: "bench", requiresUserProof: false, ttlSeconds: 3600 });
    await rt.cards.resolve(await id, "deny", { sessionId: root.id });
    await outcome;
  }
  await Bun.sleep(50); // the decision log's buffered rows (none in this loop) and any timer
  const wal = readFileSync(join(dataDir, "airlock.db-wal"));
  const pageSize = wal.readUInt32BE(8);
  const db = new Database(join(dataDir, "airlock.db"), { readonly: true });
  const names = new Map<number, string>();
  for (const row of db.query<{ name: string; pageno: number }, []>("SELECT name, pageno FROM dbstat").all()) names.set(row.pageno, row.name);
  db.close();
  const commits: number[][] = [];
  let cur: number[] = [];
  for (let off = 32; off + 24 + pageSize <= wal.length; off += 24 + pageSize) {
    cur.push(wal.readUInt32BE(off));
    if (wal.readUInt32BE(off + 4) !== 0) {
      commits.push(cur);
      cur = [];
    }
  }
  const last = commits.slice(-8);
  for (const c of last) console.log(`${c.length} pages: ${c.map((p) => names.get(p) ?? `page ${p}`).join(", ")}`);
  const pagesPerPair = last.reduce((a, c) => a + c.length, 0) / (last.length / 2);
  console.log(JSON.stringify({ page_size: pageSize, pages_per_park_and_answer: pagesPerPair, wal_bytes_per_park_and_answer: pagesPerPair * (pageSize + 24) }));
} finally {
  await rt.close();
  rmSync(dataDir, { recursive: true, force: true });
}
