/**
 * @module card/recovery
 * Start-up recovery of cards (SPEC §5, §6): cards live in memory, so a process that dies (kill -9,
 * crash, power loss) leaves cards it parked and never closed. Each one whose turn no longer runs is
 * closed in the audit log as `interrupted`, never silently gone. Runs after the turns of dead
 * processes were marked `interrupted` (Store.markInterruptedTurns), so a card of a live process — its
 * turn still `running` — is left alone.
 */
import type { Store } from "../store/store.ts";

/** Why an interrupted card closed, as written in its audit row's `detail.why`. */
export const INTERRUPTED_CARD_WHY = "the process that parked this card stopped before it was answered; the call was not run";

/**
 * Closes in the audit log every card that was parked (`card_parked`), never closed (no accepted or
 * recorded `card_decision`), and whose turn is not `running` any more (its `detail.turn_id`; for rows
 * without one, when its home session has no running turn): one `card_decision` row each with
 * `decision: "interrupted"`, `outcome: "recorded"`, `code: "interrupted"`. One transaction.
 * @returns the request ids closed, oldest first.
 * @throws the database's error when the store cannot be written (the caller fails start-up).
 */
export async function interruptOrphanCards(store: Store): Promise<string[]> {
  await store.flushAudit();
  return store.sql.transaction(async (tx) => {
    const open = await tx.all<{ request_id: string; home_session_id: string | null; detail: string | null }>(
      `SELECT p.request_id, p.home_session_id, p.detail FROM audit p
         WHERE p.kind = 'card_parked' AND p.request_id IS NOT NULL AND NOT EXISTS (
           SELECT 1 FROM audit d WHERE d.request_id = p.request_id AND d.kind = 'card_decision' AND d.outcome IN ('accepted', 'recorded'))
         ORDER BY p.id`,
    );
    const closed: string[] = [];
    for (const card of open) {
      let turnId: unknown;
      try {
        turnId = card.detail ? (JSON.parse(card.detail) as { turn_id?: unknown }).turn_id : undefined;
      } catch {
        turnId = undefined;
      }
      const live =
        typeof turnId === "string"
          ? (await tx.get<{ n: number }>("SELECT COUNT(*) AS n FROM turns WHERE id = ? AND status = 'running'", [turnId]))!.n > 0
          : card.home_session_id !== null &&
            (await tx.get<{ n: number }>("SELECT COUNT(*) AS n FROM turns WHERE session_id = ? AND status = 'running'", [card.home_session_id]))!.n > 0;
      if (live) continue;
      await store.audit(
        {
          kind: "card_decision",
          outcome: "recorded",
          request_id: card.request_id,
          home_session_id: card.home_session_id,
          decision: "interrupted",
          code: "interrupted",
          detail: { why: INTERRUPTED_CARD_WHY, ...(typeof turnId === "string" ? { turn_id: turnId } : {}) },
        },
        tx,
      );
      closed.push(card.request_id);
    }
    return closed;
  });
}
