/**
 * @module ids
 * Prefixed, time-sortable, unguessable ids: `ses_`, `turn_`, `call_`, `act_`, `run_`, `sch_`, `msg_`.
 * Layout: prefix + 12 hex chars of milliseconds + 20 hex chars (80 bits) of crypto randomness.
 */

export type IdPrefix = "ses" | "turn" | "call" | "act" | "run" | "sch" | "msg" | "evt" | "rul";

let lastTime = 0;
let lastRand = 0n;
const RAND_MAX = (1n << 80n) - 1n;

/**
 * A new id such as `act_0193a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5`; the random part makes it unguessable (80 bits).
 * Strictly increasing within a process (as text, per prefix): within one millisecond, or when the clock steps
 * back, the time part stays and the random part is the previous one plus a fresh random step (the monotonic
 * ULID rule, github.com/ulid/spec), so store queries can order rows by id.
 */
export function newId(prefix: IdPrefix): string {
  const rand = new Uint8Array(10);
  crypto.getRandomValues(rand);
  let r = 0n;
  for (const b of rand) r = (r << 8n) | BigInt(b);
  let t = Date.now();
  if (t <= lastTime) {
    t = lastTime;
    // a random step of 1 .. 2^32 keeps the next id unguessable from this one
    const step = (r & 0xffffffffn) + 1n;
    r = lastRand + step;
    if (r > RAND_MAX) {
      t = lastTime + 1;
      r &= RAND_MAX >> 1n;
    }
  }
  lastTime = t;
  lastRand = r;
  return `${prefix}_${t.toString(16).padStart(12, "0")}${r.toString(16).padStart(20, "0")}`;
}
