/**
 * @module fleet/park
 * A worker's whole wait on one card (SPEC §5.8): park the row under the turn's lease, wait until it
 * leaves `pending` (fleet/waker.ts), and say whether the call may run. Fail closed: the call runs only
 * when the row says `allowed` **and** the lease is still the live one when the answer arrives — a worker
 * that was paused past its lease (and swept or taken over meanwhile) never acts on an allow.
 */
import { AirlockError, assertNever } from "../errors.ts";
import type { CardRow, CardRowInput, CardRows } from "./card-rows.ts";
import type { Lease, Leases } from "./leases.ts";
import type { CardWaker } from "./waker.ts";

/** The answer to a parked card: run the call, or the error that refuses it (with the row as last read). */
export type CardVerdict = { run: true; row: CardRow } | { run: false; row: CardRow; error: AirlockError };

/**
 * Parks `input` under `lease` and waits for its answer. Aborting `signal` withdraws the card
 * (`cancelled`). Refusals: `denied`, `expired`, `worker_lost`, `cancelled` from the row's end state, and
 * `lease_lost` for an allow that arrived after this worker lost its lease.
 * @throws AirlockError `lease_lost` when the lease is not live at parking (nothing was parked).
 */
export async function parkAndAwait(
  deps: { rows: CardRows; waker: CardWaker; leases: Leases },
  lease: Lease,
  input: CardRowInput,
  signal?: AbortSignal,
): Promise<CardVerdict> {
  await deps.rows.park(lease, input);
  const onAbort = () => void deps.rows.cancel(input.id, "turn cancelled").catch((e: unknown) => console.error("airlock: withdrawing a card failed:", e));
  signal?.addEventListener("abort", onAbort, { once: true });
  if (signal?.aborted) onAbort();
  let row: CardRow;
  try {
    row = await deps.waker.wait(input.id);
  } finally {
    signal?.removeEventListener("abort", onAbort);
  }
  return await verdictOf(deps.leases, lease, row);
}

/**
 * Whether the call of a card that left `pending` may run under `lease` (see the module). The lease's
 * liveness is the one read with the row (`row.leaseLive`, the waker's re-read) when that row was parked
 * under this very lease (turn and epoch), else read now.
 */
export async function verdictOf(leases: Leases, lease: Lease, row: CardRow): Promise<CardVerdict> {
  const s = row.status;
  switch (s) {
    case "allowed":
      if (row.leaseLive !== undefined && row.turnId === lease.turnId && row.epoch === lease.epoch ? row.leaseLive : await leases.check(lease.turnId, lease.epoch)) {
        return { run: true, row };
      }
      return {
        run: false,
        row,
        error: new AirlockError("lease_lost", `card ${row.id} was allowed, but turn ${lease.turnId} lost its lease (epoch ${lease.epoch}) meanwhile: the call did not run`, {
          request_id: row.id,
        }),
      };
    case "denied":
      return { run: false, row, error: new AirlockError("denied", `card ${row.id} was denied${reason(row)}`, { request_id: row.id }) };
    case "expired":
      return { run: false, row, error: new AirlockError("expired", `card ${row.id} expired before it was answered; the call was refused`, { request_id: row.id }) };
    case "worker_lost":
      return {
        run: false,
        row,
        error: new AirlockError("worker_lost", `card ${row.id} was refused: the turn's lease expired (its process stopped renewing it)`, { request_id: row.id }),
      };
    case "cancelled":
      return { run: false, row, error: new AirlockError("cancelled", `card ${row.id} was withdrawn: its turn ended`, { request_id: row.id }) };
    case "pending":
      return { run: false, row, error: new AirlockError("internal", `card ${row.id} is still pending`, { request_id: row.id }) };
    default:
      return assertNever(s);
  }
}

function reason(row: CardRow): string {
  const r = row.decision?.reason;
  return typeof r === "string" && r ? `: ${r}` : "";
}
