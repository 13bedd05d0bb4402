/**
 * @module store/fleet-schema
 * The fleet tables (SPEC §5.8), as migration entries for both dialects: `cards` (a pending card as a
 * row, the truth every process reads), `inflight` (one lease per running session, with a fencing
 * epoch) and the lease columns of `runs` (version 10); `turn_requests` and `fleet_relay` (turns queued by `api`
 * nodes, events relayed between nodes; version 11). Numbered after the store's migration 8; the store's migration lists (`MIGRATIONS` in store/db.ts
 * for SQLite, `PG_MIGRATIONS` in store/migrations-pg.ts) end with these entries. Kept in the store room
 * (below fleet/) so the store's lists can import them; fleet/schema.ts re-exports them.
 *
 * Times a lease or card compares against (`expires_at`) are integers in ms since the Unix epoch;
 * times only shown (`created_at`, `decided_at`) are ISO-8601 text like every other store table.
 * JSON columns are text. `epoch` is the lease's fencing token (Kleppmann, "How to do distributed
 * locking", 2016: a token that grows on every takeover, checked on every write).
 */
import type { SqlDialect } from "./sql.ts";

/** One numbered migration (the shape of store/db.ts's `MIGRATIONS` entries). */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** Card row states: `pending` until decided; `allowed`/`denied` by a person; `expired` by its TTL; `worker_lost` when its turn's lease expired (a deny). */
export type CardStatus = "pending" | "allowed" | "denied" | "expired" | "worker_lost" | "cancelled";

/** Every card status, for CHECK constraints and validation. */
export const CARD_STATUSES: readonly CardStatus[] = ["pending", "allowed", "denied", "expired", "worker_lost", "cancelled"];

const statusCheck = `CHECK (status IN (${CARD_STATUSES.map((s) => `'${s}'`).join(",")}))`;

/** The fleet tables in `dialect`: integer columns are `INTEGER` on SQLite, `BIGINT` on PostgreSQL (ms and epochs pass 2^31). */
function tables(dialect: SqlDialect): string {
  const big = dialect === "postgres" ? "BIGINT" : "INTEGER";
  return `
    CREATE TABLE cards (
      id TEXT PRIMARY KEY,
      session_id TEXT NOT NULL,
      root_session_id TEXT NOT NULL,
      turn_id TEXT NOT NULL,
      call_id TEXT NOT NULL,
      worker_id TEXT NOT NULL,
      epoch ${big} NOT NULL,
      status TEXT NOT NULL ${statusCheck},
      surfaces TEXT NOT NULL,
      requires_user_proof ${big} NOT NULL DEFAULT 0,
      card TEXT NOT NULL,
      decision TEXT,
      created_at TEXT NOT NULL,
      expires_at ${big} NOT NULL,
      decided_at TEXT
    );
    CREATE INDEX cards_root_status ON cards(root_session_id, status);
    CREATE INDEX cards_session_status ON cards(session_id, status);
    CREATE INDEX cards_turn_status ON cards(turn_id, status);
    CREATE INDEX cards_worker_status ON cards(worker_id, status);
    CREATE TABLE inflight (
      session_id TEXT PRIMARY KEY,
      turn_id TEXT NOT NULL UNIQUE,
      worker_id TEXT NOT NULL,
      epoch ${big} NOT NULL,
      expires_at ${big} NOT NULL
    );
    CREATE INDEX inflight_expires ON inflight(expires_at);
  `;
}

/**
 * Version 10: a run's lease (fleet/run-leases.ts). `worker_id` is the process holding the run,
 * `lease_expires_at` (ms since the Unix epoch) when its lease lapses unless renewed; both null while a
 * run waits in the queue (nobody holds it yet) and on SQLite (where the pid sweep serves).
 */
function runLeases(dialect: SqlDialect): string {
  const big = dialect === "postgres" ? "BIGINT" : "INTEGER";
  return `
    ALTER TABLE runs ADD COLUMN worker_id TEXT;
    ALTER TABLE runs ADD COLUMN lease_expires_at ${big};
    CREATE INDEX runs_status_lease ON runs(status, lease_expires_at);
  ${dialect === "postgres" ? CARD_NOTIFY_TRIGGER : ""}`;
}

/**
 * PostgreSQL only (version 10): every inserted or updated card row sends its id on the `airlock_cards`
 * channel (fleet/notify.ts) from a trigger, inside the statement that changed it, so the wake-up is
 * delivered on commit (dropped on rollback) without a statement of its own. SQLite has no channel.
 */
const CARD_NOTIFY_TRIGGER = `
    CREATE OR REPLACE FUNCTION airlock_card_changed() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      PERFORM pg_notify('airlock_cards', NEW.id);
      RETURN NULL;
    END
    $fn$;
    CREATE TRIGGER cards_notify AFTER INSERT OR UPDATE ON cards FOR EACH ROW EXECUTE FUNCTION airlock_card_changed();
`;


/** Turn request states: `queued` by an `api` node; `running` once a worker claimed it; `done` when its turn ended (or could not start); `cancelled` (withdrawn before a claim); `expired` (unclaimed past `expires_at`: `no_worker`). */
export type TurnRequestState = "queued" | "running" | "done" | "cancelled" | "expired";

/** Every turn request state, for the CHECK constraint. */
export const TURN_REQUEST_STATES: readonly TurnRequestState[] = ["queued", "running", "done", "cancelled", "expired"];

/**
 * Version 11: turn dispatch and the event relay (SPEC §5.8, `serve --role`). `turn_requests`: a turn an
 * `api` node asked for, keyed by its pre-assigned turn id; at most one `queued` per session (a partial unique
 * index). `fleet_relay`: append-only batches of bus events (and cancel requests) one node sends to the others,
 * `items` a JSON array; pruned by age. Both dialects accept partial indexes.
 */
function dispatchTables(dialect: SqlDialect): string {
  const big = dialect === "postgres" ? "BIGINT" : "INTEGER";
  const serial = dialect === "postgres" ? "BIGSERIAL PRIMARY KEY" : "INTEGER PRIMARY KEY AUTOINCREMENT";
  return `
    CREATE TABLE turn_requests (
      id TEXT PRIMARY KEY,
      session_id TEXT NOT NULL,
      message TEXT NOT NULL,
      state TEXT NOT NULL CHECK (state IN (${TURN_REQUEST_STATES.map((s) => `'${s}'`).join(",")})),
      worker_id TEXT,
      created_at ${big} NOT NULL,
      expires_at ${big} NOT NULL,
      claimed_at ${big}
    );
    CREATE UNIQUE INDEX turn_requests_one_queued ON turn_requests(session_id) WHERE state = 'queued';
    CREATE INDEX turn_requests_state ON turn_requests(state, created_at);
    CREATE TABLE fleet_relay (
      id ${serial},
      worker_id TEXT NOT NULL,
      items TEXT NOT NULL,
      created_at ${big} NOT NULL
    );
    CREATE INDEX fleet_relay_created ON fleet_relay(created_at);
  `;
}

/**
 * Version 12: `turn_requests.started_at` (ms), set by the claimer once its turn holds the session's lease. A
 * `running` request without it whose `claimed_at` (renewed by a live claimer while the turn starts) is older
 * than a lease TTL lost its claimer before the turn started: the sweeper ends it (SPEC §5.8).
 */
function requestStarted(dialect: SqlDialect): string {
  return `ALTER TABLE turn_requests ADD COLUMN started_at ${dialect === "postgres" ? "BIGINT" : "INTEGER"};`;
}

/** The fleet migrations for `dialect`, to append after the store's version 8. */
export function fleetMigrations(dialect: SqlDialect): readonly Migration[] {
  return [
    { version: 9, name: "fleet: cards as rows, in-flight leases with a fencing epoch", sql: tables(dialect) },
    { version: 10, name: "fleet: runs held under a lease (worker, expiry); card changes notified by a trigger", sql: runLeases(dialect) },
    { version: 11, name: "fleet: queued turn requests, relayed events", sql: dispatchTables(dialect) },
    { version: 12, name: "fleet: a claimed turn request records when its turn started", sql: requestStarted(dialect) },
  ];
}

/** The SQLite entries. */
export const FLEET_MIGRATIONS_SQLITE: readonly Migration[] = fleetMigrations("sqlite");
/** The PostgreSQL entries. */
export const FLEET_MIGRATIONS_POSTGRES: readonly Migration[] = fleetMigrations("postgres");
