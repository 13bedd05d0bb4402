/**
 * @module scripts/bench/wal
 * The floor of park's tail (issue 20): one `card_parked`-shaped audit row per commit through
 * `Store.audit` on a database file (a temp data dir), a macrotask between commits so timers run as in
 * the server. Prints JSON: each commit's time (p50, p99, p99.9, max, ms), how many commits grew
 * `airlock.db` (a checkpoint ran inside them, or beside them on the checkpoint thread), the largest
 * `-wal` file seen (bytes) and the load average before and after.
 * Usage: `bun scripts/bench/wal.ts [--rows 20000]`
 */
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { newId } from "../../src/ids.ts";
import { Store } from "../../src/store/store.ts";

const i = process.argv.indexOf("--rows");
const ROWS = i >= 0 ? Number(process.argv[i + 1]) : 20_000;
const size = (p: string) => (existsSync(p) ? statSync(p).size : 0);
const load = () => loadavg().map((x) => Math.round(x * 100) / 100);

const dir = mkdtempSync(join(tmpdir(), "airlock-bench-wal-"));
const path = join(dir, "airlock.db");
const loadBefore = load();
const store = await Store.open(path);
try {
  const session = newId("ses");
  const ms: number[] = [];
  let grew = 0;
  let walMax = 0;
  for (let k = 0; k < ROWS; k++) {
    const dbBefore = size(path);
    const t0 = performance.now();
    await store.audit({
      kind: "card_parked",
      outcome: "recorded",
      request_id: newId("act"),
      session_id: session,
      home_session_id: session,
      detail: { tool: "developer__shell", arguments: { command: `touch f${k}` }, inspector: "mode", reason: "bench", surfaced_in: [session] },
    });
    ms.push(performance.now() - t0);
    if (size(path) > dbBefore) grew++;
    if (k % 64 === 0) walMax = Math.max(walMax, size(`${path}-wal`));
    await new Promise((r) => setImmediate(r));
  }
  ms.sort((a, b) => a - b);
  const q = (p: number) => Math.round(ms[Math.min(ms.length - 1, Math.floor(p * ms.length))]! * 1000) / 1000;
  console.log(JSON.stringify({ bench: "wal", rows: ROWS, commit_ms: { p50: q(0.5), p99: q(0.99), p999: q(0.999), max: q(1) }, commits_that_grew_db: grew, wal_max_bytes: walMax, load_before: loadBefore, load_after: load() }));
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
