/**
 * @module ids
 * Prefixed, time-sortable, unguessable ids: `ses_`, `turn_`, `call_`, `act_`, `run_`, `sch_`, `msg_`.
 * Layout: prefix + 12 hex chars of milliseconds + 20 hex chars (80 bits) of crypto randomness.
 */

export type IdPrefix = "ses" | "turn" | "call" | "act" | "run" | "sch" | "msg" | "evt" | "rul";

/** A new id such as `act_0193a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5`; the random part makes it unguessable (80 bits). */
export function newId(prefix: IdPrefix): string {
  const time = Date.now().toString(16).padStart(12, "0");
  const rand = new Uint8Array(10);
  crypto.getRandomValues(rand);
  let hex = "";
  for (const b of rand) hex += b.toString(16).padStart(2, "0");
  return `${prefix}_${time}${hex}`;
}
