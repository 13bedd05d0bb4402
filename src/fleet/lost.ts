/**
 * @module fleet/lost
 * What happens to a turn whose worker stopped renewing its lease (research: scale-out §4): the turn
 * becomes `interrupted` and its pending cards end `worker_lost` (a deny: fail closed). Tool calls that
 * already ran are not replayed.
 */
import type { Sql } from "../store/sql.ts";
import { loseTurnCards } from "./card-rows.ts";

/** Why a lost turn stopped, as stored in `turns.error`. */
export const WORKER_LOST_ERROR = "worker_lost: the process running this turn stopped renewing its lease";

/**
 * Marks `turnId` `interrupted` (if still `running`) and ends its pending cards `worker_lost`, through `tx`.
 * Returns the ids of the cards it ended.
 */
export async function loseTurn(tx: Sql, turnId: string, now: number): Promise<{ interrupted: boolean; cards: string[] }> {
  const upd = await tx.run("UPDATE turns SET status = 'interrupted', finished_at = ?, error = ? WHERE id = ? AND status = 'running'", [
    new Date(now).toISOString(),
    WORKER_LOST_ERROR,
    turnId,
  ]);
  const cards = await loseTurnCards(tx, turnId, now);
  return { interrupted: upd.changes === 1, cards };
}
