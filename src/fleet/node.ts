/**
 * @module fleet/node
 * One process's share of the fleet (SPEC §5.8), built from `fleet:` config: its leases, the card rows,
 * the waker for the cards it waits on, the feed of other workers' cards onto its bus, and the sweeper on
 * its timer; the queue of turns `api` nodes ask for (claimed here on `worker` and `all` nodes) and the relay
 * of bus events between nodes. On PostgreSQL one `LISTEN` connection serves them all; on SQLite the poll alone.
 */
import type { Bus } from "../bus/bus.ts";
import type { FleetConfig } from "../config/schema.ts";
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { Sql } from "../store/sql.ts";
import { CardRows } from "./card-rows.ts";
import { CardFeed } from "./feed.ts";
import { Leases } from "./leases.ts";
import { pgListener, type Listener } from "./notify.ts";
import { Sweeper, type SweepResult } from "./sweeper.ts";
import { CardWaker } from "./waker.ts";
import { TurnDispatcher, TurnQueue, type TurnRequest } from "./dispatch.ts";
import { EventRelay } from "./relay.ts";

/** How long ended turn requests are kept before they are pruned, ms (one hour). */
const REQUEST_KEEP_MS = 3_600_000;

export interface FleetNodeOptions {
  sql: Sql;
  /** The `postgres://` URL of `sql`'s database, for the `LISTEN` connection; absent on SQLite. */
  listenUrl?: string;
  /** This process's bus: the feed publishes other workers' cards on it. */
  bus: Bus;
  /** `fleet:` config (seconds). */
  config: FleetConfig;
  /** This process's worker id; default `<hostname>:<pid>:<8 hex>` (readable in the `inflight` and `cards` rows). */
  workerId?: string;
  /** Called after a sweep that ended turns or cards. */
  onSwept?: (r: SweepResult) => void;
  /** Runs a cancel request another node relayed (the runtime cancels the session's turn and its descendants' here). Default: ignored. */
  onCancel?: (sessionId: string, reason: string) => void;
}

export class FleetNode {
  readonly workerId: string;
  readonly leases: Leases;
  readonly rows: CardRows;
  readonly waker: CardWaker;
  readonly feed: CardFeed;
  readonly sweeper: Sweeper;
  /** Turns queued by `api` nodes (fleet/dispatch.ts). */
  readonly queue: TurnQueue;
  /** This bus's events to the other nodes and theirs here, and cancel requests (fleet/relay.ts). */
  readonly relay: EventRelay;
  /** Claims queued turns; started by {@link startDispatch} on `worker` and `all` nodes only. */
  private dispatcher: TurnDispatcher | null = null;
  private readonly pollMs: number;
  private readonly workerTurns: number;
  private pruneTimer: ReturnType<typeof setInterval> | null = null;
  private readonly listener: Listener | undefined;
  private closed = false;

  private constructor(opts: FleetNodeOptions) {
    this.workerId = opts.workerId ?? `${hostname()}:${process.pid}:${randomBytes(4).toString("hex")}`;
    const pollMs = opts.config.poll_seconds * 1000;
    this.listener = opts.listenUrl ? pgListener(opts.listenUrl) : undefined;
    this.leases = new Leases(opts.sql, { workerId: this.workerId, ttlMs: opts.config.lease_ttl_seconds * 1000 });
    this.rows = new CardRows(opts.sql);
    this.waker = new CardWaker(this.rows, { pollMs, ...(this.listener ? { listener: this.listener } : {}) });
    this.feed = new CardFeed({
      rows: this.rows,
      bus: opts.bus,
      pollMs,
      skipWorker: this.workerId,
      // the relayed events that led to a card are published before it (the relay is built below; called later)
      beforeNewCard: () => this.relay.pull(),
      ...(this.listener ? { listener: this.listener } : {}),
    });
    this.pollMs = pollMs;
    this.workerTurns = opts.config.worker_turns;
    this.queue = new TurnQueue(opts.sql, { workerId: this.workerId, leaseTtlMs: opts.config.lease_ttl_seconds * 1000 });
    this.sweeper = new Sweeper(opts.sql, { requests: this.queue, ...(opts.onSwept ? { onSwept: opts.onSwept } : {}) });
    this.relay = new EventRelay({
      sql: opts.sql,
      bus: opts.bus,
      workerId: this.workerId,
      pollMs,
      onCancel: opts.onCancel ?? (() => {}),
      ...(this.listener ? { listener: this.listener } : {}),
    });
  }

  /**
   * Starts claiming queued turn requests (a `worker` or `all` node); `run` runs one to its end and must not
   * reject. Resolves once the subscription is live. Idempotent.
   * @throws the listener's error (PostgreSQL unreachable).
   */
  async startDispatch(run: (req: TurnRequest) => Promise<void>): Promise<void> {
    if (this.closed || this.dispatcher) return;
    this.dispatcher = new TurnDispatcher({ queue: this.queue, pollMs: this.pollMs, run, maxRunning: this.workerTurns, ...(this.listener ? { listener: this.listener } : {}) });
    await this.dispatcher.start();
  }

  /**
   * Starts a node: subscribes (PostgreSQL), publishes the cards already pending, starts the poll and the
   * sweeper (every `fleet.sweep_seconds`). Resolves once the subscriptions are live.
   * @throws the listener's connection error (PostgreSQL unreachable); nothing is left running then.
   */
  static async start(opts: FleetNodeOptions): Promise<FleetNode> {
    const node = new FleetNode(opts);
    try {
      await node.waker.start();
      await node.feed.start();
      await node.relay.start();
    } catch (e) {
      await node.close();
      throw e;
    }
    node.sweeper.start(opts.config.sweep_seconds * 1000);
    // ended turn requests are kept an hour (to look at), then deleted; the relay prunes its own rows
    node.pruneTimer = setInterval(() => {
      node.queue.prune(Date.now() - REQUEST_KEEP_MS).catch((e: unknown) => console.error("airlock: pruning ended turn requests failed; the next tick retries:", e));
    }, 60_000);
    node.pruneTimer.unref?.();
    return node;
  }

  /** Stops the sweeper, the feed and the waker (its waiters are rejected) and closes the listener. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.pruneTimer) clearInterval(this.pruneTimer);
    await this.sweeper.stop();
    await this.dispatcher?.close();
    await this.relay.close();
    await this.feed.close();
    await this.waker.close();
    await this.listener?.close();
  }
}
