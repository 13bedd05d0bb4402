/**
 * @module gate/permits
 * The bounded pool of concurrently executing tool calls (`limits.max_concurrent_calls`).
 * FIFO waiters; a waiter whose signal aborts leaves the queue. A call parked on a card holds no
 * permit (the gate acquires only after the decision), and tools that mostly wait (scripts,
 * subagents) never take one, so a parent waiting on a child cannot starve it.
 */
import { AirlockError } from "../errors.ts";

/** Releases a permit; idempotent (a second call does nothing). */
export type Release = () => void;

interface Waiter {
  grant: (r: Release) => void;
  fail: (e: unknown) => void;
}

export class Permits {
  private used = 0;
  private queue: Waiter[] = [];

  /** `max`: permits in the pool (≥ 1). */
  constructor(readonly max: number) {
    if (!Number.isInteger(max) || max < 1) throw new AirlockError("config_invalid", `limits.max_concurrent_calls must be an integer ≥ 1, got ${max}`);
  }

  /** Permits held right now. */
  get inUse(): number {
    return this.used;
  }

  /** Callers waiting for a permit. */
  get waiting(): number {
    return this.queue.length;
  }

  /**
   * Takes a permit, waiting FIFO when none is free. Rejects with the signal's reason (or
   * `cancelled`) if `signal` aborts first; the waiter then leaves the queue and holds nothing.
   */
  acquire(signal?: AbortSignal): Promise<Release> {
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    if (this.used < this.max && this.queue.length === 0) {
      this.used++;
      return Promise.resolve(this.releaser());
    }
    return new Promise<Release>((resolve, reject) => {
      const w: Waiter = {
        grant: (r) => {
          signal?.removeEventListener("abort", onAbort);
          resolve(r);
        },
        fail: reject,
      };
      const onAbort = () => {
        const i = this.queue.indexOf(w);
        if (i >= 0) this.queue.splice(i, 1);
        reject(abortReason(signal!));
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.queue.push(w);
    });
  }

  private releaser(): Release {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const next = this.queue.shift();
      if (next) next.grant(this.releaser()); // hand the slot over: `used` stays the same
      else this.used--;
    };
  }
}

function abortReason(signal: AbortSignal): unknown {
  const r = signal.reason;
  return r instanceof AirlockError ? r : new AirlockError("cancelled", "the turn was cancelled while the call waited for a permit");
}
