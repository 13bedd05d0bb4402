/**
 * @module fleet/audit
 * Audit rows written by the fleet inside its own transactions (the `audit` table of store/db.ts, the
 * same columns `Store.audit` writes), so a decision and its audit row commit or roll back together.
 */
import type { Sql } from "../store/sql.ts";
import { insertAuditRow } from "../store/store.ts";

/** One audit row. `detail` is stored as JSON text. */
export interface FleetAudit {
  kind: "card_parked" | "card_decision" | "lease_lost";
  outcome: "accepted" | "refused" | "recorded";
  request_id?: string | null;
  session_id?: string | null;
  home_session_id?: string | null;
  decision?: string | null;
  code?: string | null;
  actor?: string | null;
  detail?: unknown;
}

/** Inserts `e` through `tx` (time: now, ISO-8601), with the store's one audit INSERT. */
export async function insertAudit(tx: Sql, e: FleetAudit): Promise<void> {
  await insertAuditRow(tx, new Date().toISOString(), e);
}
