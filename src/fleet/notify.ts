/**
 * @module fleet/notify
 * Wake-ups between processes. A change to a card row (parked, decided, expired, lost) sends the card's
 * id on one PostgreSQL channel, from a trigger on the `cards` table (store/fleet-schema.ts, version 10),
 * inside the statement that made the change, so it is delivered on commit and dropped on rollback
 * (PostgreSQL docs, `NOTIFY`) and costs no statement of its own. The payload carries the id only: the row is
 * the truth and a receiver re-reads it. A notification sent while nobody listens is lost, so listeners
 * catch up on (re)connect and poll slowly (fleet/waker.ts). SQLite has no channel: one process owns the
 * file and the poll alone serves.
 */

/** The channel carrying the ids of changed card rows (named in the trigger of store/fleet-schema.ts too). */
export const CARD_CHANNEL = "airlock_cards";

/** One subscription made by {@link Listener.listen}. */
export interface Subscription {
  /** Removes the subscription. Idempotent. */
  unlisten(): Promise<void>;
}

/**
 * A notification source. `onListen` runs once the subscription is live, initially and after every
 * reconnect (the place to catch up on what was sent while it was down).
 */
export interface Listener {
  listen(channel: string, onPayload: (payload: string) => void, onListen: () => void): Promise<Subscription>;
  /** Closes the listener's connection. Idempotent. */
  close(): Promise<void>;
}

/**
 * A {@link Listener} over PostgreSQL `LISTEN` through `Bun.SQL` (`sql.listen`, Bun ≥ 1.4.0): one dedicated
 * connection for all channels, reconnected with backoff (250 ms doubling to 32 s, per Bun's docs) and
 * re-subscribed after a drop, `onListen` running again each time.
 * @param url a `postgres://` URL (the same database the rows live in).
 */
export function pgListener(url: string): Listener {
  const sql = new Bun.SQL(url, { max: 1 });
  let closed = false;
  return {
    async listen(channel, onPayload, onListen) {
      const sub = await sql.listen(channel, onPayload, onListen);
      return { unlisten: () => sub.unlisten() };
    },
    async close() {
      if (closed) return;
      closed = true;
      await sql.close();
    },
  };
}
