/**
 * @module test/turn-statuses
 * What a data dir's store says of its turns, read by a fresh store connection after the process under test ended.
 */
import { join } from "node:path";

/** Every stored turn's status, session by session in the store's order (`running`, `completed`, `cancelled` …). */
export async function turnStatuses(dir: string): Promise<string[]> {
  const { Store } = await import("../src/store/store.ts");
  const store = await Store.open(join(dir, "airlock.db"));
  try {
    const out: string[] = [];
    for (const s of await store.listSessions()) for (const t of await store.listTurns(s.id)) out.push(t.status);
    return out;
  } finally {
    store.close();
  }
}
