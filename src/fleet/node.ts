/**
 * @module fleet/node
 * One process's share of the fleet (SPEC §5.8), built from `fleet:` config: its leases, the card rows,
 * the waker for the cards it waits on, the feed of other workers' cards onto its bus, and the sweeper on
 * its timer. On PostgreSQL one `LISTEN` connection serves the waker and the feed; on SQLite the poll alone.
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
}

export class FleetNode {
  readonly workerId: string;
  readonly leases: Leases;
  readonly rows: CardRows;
  readonly waker: CardWaker;
  readonly feed: CardFeed;
  readonly sweeper: Sweeper;
  private readonly listener: Listener | undefined;
  private closed = false;

  private constructor(opts: FleetNodeOptions) {
    this.workerId = opts.workerId ?? `${hostname()}:${process.pid}:${randomBytes(4).toString("hex")}`;
    const pollMs = opts.config.poll_seconds * 1000;
    this.listener = opts.listenUrl ? pgListener(opts.listenUrl) : undefined;
    this.leases = new Leases(opts.sql, { workerId: this.workerId, ttlMs: opts.config.lease_ttl_seconds * 1000 });
    this.rows = new CardRows(opts.sql);
    this.waker = new CardWaker(this.rows, { pollMs, ...(this.listener ? { listener: this.listener } : {}) });
    this.feed = new CardFeed({ rows: this.rows, bus: opts.bus, pollMs, skipWorker: this.workerId, ...(this.listener ? { listener: this.listener } : {}) });
    this.sweeper = new Sweeper(opts.sql, opts.onSwept ? { onSwept: opts.onSwept } : {});
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
    } catch (e) {
      await node.close();
      throw e;
    }
    node.sweeper.start(opts.config.sweep_seconds * 1000);
    return node;
  }

  /** Stops the sweeper, the feed and the waker (its waiters are rejected) and closes the listener. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.sweeper.stop();
    await this.feed.close();
    await this.waker.close();
    await this.listener?.close();
  }
}
