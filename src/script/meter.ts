/**
 * @module script/meter
 * The slots of the per-script shared meter. Kept apart from script/protocol.ts so that a sandbox worker
 * thread loads no zod (about 3 MB of memory and 100 ms of start-up per thread, and each script in flight
 * has a thread of its own).
 */

/**
 * Slots of the per-script shared meter (a `Float64Array` over a SharedArrayBuffer) the worker
 * writes and the host watchdog reads without any message: it works even when the worker's
 * event loop is stuck inside a long native call.
 */
export const METER = {
  /** CPU ms the guest has used so far, not counting the slice in progress. */
  cpuUsed: 0,
  /** `Date.now()` when the current guest slice began; 0 when the guest is not running. */
  enteredAt: 1,
  /** `threadId` of the worker running the script (0 until it starts). */
  threadId: 2,
  size: 3,
} as const;
