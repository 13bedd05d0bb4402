/**
 * @module session/inflight
 * The in-flight registry (SPEC §1): the sessions whose agent loop is running a turn right now.
 * A session is registered when its turn starts and removed in a `finally`, whatever happens.
 * The gate refuses calls from sessions not in it (`gate_no_session`); the cards layer
 * listens for removals to withdraw cards of a turn that ended.
 */
import { AirlockError } from "../errors.ts";

export interface InflightTurn {
  sessionId: string;
  turnId: string;
  /** Aborted to cancel the turn (provider stream and running tools). */
  controller: AbortController;
  startedAt: number;
}

export type InflightListener = (t: InflightTurn) => void;

export class Inflight {
  private turns = new Map<string, InflightTurn>();
  private removedListeners = new Set<InflightListener>();

  /** Registers a turn; throws `session_busy` if the session already runs one. */
  register(sessionId: string, turnId: string, controller = new AbortController()): InflightTurn {
    if (this.turns.has(sessionId)) {
      throw new AirlockError("session_busy", `session ${sessionId} is already running a turn; wait for turn_finished or POST /sessions/${sessionId}/cancel`);
    }
    const t: InflightTurn = { sessionId, turnId, controller, startedAt: Date.now() };
    this.turns.set(sessionId, t);
    return t;
  }

  /** Removes the turn (only if it is still the registered one) and notifies listeners. */
  unregister(sessionId: string, turnId: string): void {
    const t = this.turns.get(sessionId);
    if (!t || t.turnId !== turnId) return;
    this.turns.delete(sessionId);
    for (const l of [...this.removedListeners]) {
      try {
        l(t);
      } catch (e) {
        console.error("airlock: inflight listener failed:", e);
      }
    }
  }

  get(sessionId: string): InflightTurn | undefined {
    return this.turns.get(sessionId);
  }

  /** True when `sessionId` is running exactly the turn `turnId`. */
  isRunning(sessionId: string, turnId: string): boolean {
    return this.turns.get(sessionId)?.turnId === turnId;
  }

  has(sessionId: string): boolean {
    return this.turns.has(sessionId);
  }

  /** Cancels the session's turn; returns false when none is running. */
  cancel(sessionId: string, reason = "cancelled"): boolean {
    const t = this.turns.get(sessionId);
    if (!t) return false;
    t.controller.abort(new AirlockError("cancelled", reason));
    return true;
  }

  onRemoved(l: InflightListener): () => void {
    this.removedListeners.add(l);
    return () => this.removedListeners.delete(l);
  }

  size(): number {
    return this.turns.size;
  }

  sessions(): string[] {
    return [...this.turns.keys()];
  }
}
