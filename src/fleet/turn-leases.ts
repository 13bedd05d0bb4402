/**
 * @module fleet/turn-leases
 * The leases of the turns this process runs (SPEC §5.8), keyed by turn id: a turn takes its session's
 * lease when it starts (fleet/leases.ts `acquire`; another process's live lease refuses it `session_busy`),
 * renews it every third of `fleet.lease_ttl_seconds` while it runs, and releases it when it ends. When a
 * renewal finds the lease lost, `onLost` runs once (the runtime cancels the turn): fail closed.
 */
import type { AirlockError } from "../errors.ts";
import type { Lease, Leases } from "./leases.ts";

interface Held {
  sessionId: string;
  beat: { stop(): void; current(): Lease };
}

export class TurnLeases {
  private held = new Map<string, Held>();

  constructor(
    readonly leases: Leases,
    private readonly onLost: (sessionId: string, turnId: string, e: AirlockError) => void,
    /** Called once the lease is taken over from an expired one whose turn (`lostTurnId`, of another process or paused) was interrupted in the same transaction. */
    private readonly onTakeover: (sessionId: string, lostTurnId: string) => void = () => {},
  ) {}

  /**
   * Takes the lease of `sessionId` for `turnId` and starts its heartbeat.
   * @throws AirlockError `session_busy` when another live lease holds the session; storage errors as thrown.
   */
  async acquire(sessionId: string, turnId: string): Promise<Lease> {
    const lease = await this.leases.acquire(sessionId, turnId);
    if (lease.tookOverTurnId) this.onTakeover(sessionId, lease.tookOverTurnId);
    const beat = this.leases.heartbeat(lease, (e) => {
      this.held.delete(turnId);
      this.onLost(sessionId, turnId, e);
    });
    this.held.set(turnId, { sessionId, beat });
    return lease;
  }

  /** The current (last renewed) lease of `turnId`, or undefined when this process holds none for it. */
  lease(turnId: string): Lease | undefined {
    return this.held.get(turnId)?.beat.current();
  }

  /** True when `turnId`'s lease is held here and still live in the database (its epoch current, not expired). */
  async live(turnId: string): Promise<boolean> {
    const l = this.lease(turnId);
    return l !== undefined && (await this.leases.check(turnId, l.epoch));
  }

  /** Stops the heartbeat and releases the lease of `turnId` (no-op when none is held). Never throws: a failed release expires by its TTL. */
  async release(turnId: string): Promise<void> {
    const h = this.held.get(turnId);
    if (!h) return;
    this.held.delete(turnId);
    h.beat.stop();
    await this.leases.release(h.beat.current()).catch((e: unknown) => console.error(`airlock: releasing the lease of turn ${turnId} failed (it expires by its TTL):`, e));
  }

  /** Stops every heartbeat and releases every lease (process shutdown). */
  async close(): Promise<void> {
    await Promise.all([...this.held.keys()].map((t) => this.release(t)));
  }
}
