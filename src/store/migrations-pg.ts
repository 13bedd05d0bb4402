/**
 * @module store/migrations-pg
 * The numbered migrations for PostgreSQL (`storage: postgres://…`): the same versions and names as the
 * SQLite list (`MIGRATIONS` in store/db.ts), written in PostgreSQL's dialect. Append only; never edit a
 * released one; a new version goes into both lists (test/contract/migrations.test.ts checks they match).
 *
 * Dialect mapping: `INTEGER PRIMARY KEY AUTOINCREMENT` → `BIGSERIAL PRIMARY KEY`; everything else keeps its SQLite type (`TEXT` for ids, ISO-8601 times and JSON; `INTEGER`
 * 0/1 for booleans), so store modules bind and read the same values on both engines. Counters stay
 * `INTEGER` (int4) on purpose: PostgreSQL's `SUM(integer)` is a `bigint` (a JS number through
 * store/sql-pg.ts), whereas `SUM(bigint)` and `AVG(…)` are `numeric`, which comes back as a string.
 */
import type { Migration } from "./migrate.ts";
import { FLEET_MIGRATIONS_POSTGRES } from "./fleet-schema.ts";

export const PG_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "sessions, turns, messages, audit",
    sql: `
      CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        parent_session_id TEXT REFERENCES sessions(id),
        workspace TEXT NOT NULL,
        mode TEXT NOT NULL,
        sandbox TEXT NOT NULL,
        privacy TEXT NOT NULL DEFAULT 'public',
        headless INTEGER NOT NULL DEFAULT 0,
        provider TEXT NOT NULL,
        model TEXT,
        spawn_index INTEGER,
        spawn_count INTEGER NOT NULL DEFAULT 0,
        title TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE INDEX sessions_parent ON sessions(parent_session_id);
      CREATE TABLE turns (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions(id),
        status TEXT NOT NULL CHECK (status IN ('running','completed','failed','cancelled','interrupted')),
        answer TEXT,
        error TEXT,
        started_at TEXT NOT NULL,
        finished_at TEXT
      );
      CREATE INDEX turns_session ON turns(session_id);
      CREATE TABLE messages (
        seq BIGSERIAL PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        session_id TEXT NOT NULL REFERENCES sessions(id),
        turn_id TEXT REFERENCES turns(id),
        role TEXT NOT NULL CHECK (role IN ('system','user','assistant','tool')),
        content TEXT NOT NULL,
        tool_calls TEXT,
        tool_call_id TEXT,
        name TEXT,
        is_error INTEGER,
        created_at TEXT NOT NULL
      );
      CREATE INDEX messages_session ON messages(session_id, seq);
      CREATE TABLE audit (
        id BIGSERIAL PRIMARY KEY,
        at TEXT NOT NULL,
        kind TEXT NOT NULL,
        request_id TEXT,
        session_id TEXT,
        home_session_id TEXT,
        decision TEXT,
        outcome TEXT NOT NULL,
        code TEXT,
        actor TEXT,
        detail TEXT
      );
      CREATE INDEX audit_request ON audit(request_id);
    `,
  },
  {
    version: 2,
    name: "schedules and runs",
    sql: `
      CREATE TABLE schedules (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        cron TEXT NOT NULL,
        recipe_path TEXT NOT NULL,
        recipe_text TEXT NOT NULL,
        params TEXT NOT NULL DEFAULT '{}',
        enabled INTEGER NOT NULL DEFAULT 1,
        created_at TEXT NOT NULL,
        last_fire_at TEXT
      );
      CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        schedule_id TEXT REFERENCES schedules(id),
        session_id TEXT,
        status TEXT NOT NULL CHECK (status IN ('running','completed','failed','blocked','cancelled','skipped','interrupted')),
        trigger TEXT NOT NULL DEFAULT 'cron',
        started_at TEXT NOT NULL,
        finished_at TEXT,
        result TEXT,
        reason TEXT
      );
      CREATE INDEX runs_schedule ON runs(schedule_id, started_at);
    `,
  },
  {
    version: 3,
    name: "owner process of turns and runs; runs of removed schedules",
    sql: `
      ALTER TABLE turns ADD COLUMN owner_pid INTEGER;
      ALTER TABLE turns ADD COLUMN owner_start TEXT;
      ALTER TABLE runs ADD COLUMN owner_pid INTEGER;
      ALTER TABLE runs ADD COLUMN owner_start TEXT;
      ALTER TABLE runs ADD COLUMN removed_schedule_id TEXT;
      CREATE INDEX runs_removed_schedule ON runs(removed_schedule_id, started_at);
    `,
  },
  {
    version: 4,
    name: "decision log: audit rows by session",
    sql: `
      CREATE INDEX IF NOT EXISTS audit_session ON audit(session_id, id);
      CREATE INDEX IF NOT EXISTS audit_home_session ON audit(home_session_id, id);
    `,
  },
  {
    version: 5,
    name: "session rules: allow rules for a session tree (allow for this session)",
    sql: `
      CREATE TABLE IF NOT EXISTS session_rules (
        id TEXT PRIMARY KEY,
        root_session_id TEXT NOT NULL REFERENCES sessions(id),
        rule TEXT NOT NULL,
        request_id TEXT,
        added_in TEXT,
        actor TEXT,
        created_at TEXT NOT NULL
      );
      CREATE INDEX IF NOT EXISTS session_rules_root ON session_rules(root_session_id, created_at);
    `,
  },
  {
    version: 6,
    name: "trusted folders: where project hooks may run (airlock trust)",
    sql: `
      CREATE TABLE IF NOT EXISTS trusted_folders (
        path TEXT PRIMARY KEY,
        added_at TEXT NOT NULL
      );
    `,
  },
  {
    version: 7,
    name: "messages keep what their provider must be given back (thinking blocks, reasoning items)",
    sql: `ALTER TABLE messages ADD COLUMN provider_state TEXT;`,
  },
  {
    version: 8,
    name: "token usage per model call (store/usage.ts)",
    sql: `
      CREATE TABLE IF NOT EXISTS model_calls (
        id BIGSERIAL PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions(id),
        turn_id TEXT NOT NULL REFERENCES turns(id),
        at TEXT NOT NULL,
        provider TEXT NOT NULL,
        model TEXT,
        input_tokens INTEGER,
        output_tokens INTEGER,
        cached_input_tokens INTEGER,
        cache_write_input_tokens INTEGER,
        reasoning_tokens INTEGER
      );
      CREATE INDEX IF NOT EXISTS model_calls_session ON model_calls(session_id);
      CREATE INDEX IF NOT EXISTS model_calls_turn ON model_calls(turn_id);
    `,
  },
  // versions 9-10: the fleet tables and run leases (SPEC §5.8), defined in store/fleet-schema.ts
  ...FLEET_MIGRATIONS_POSTGRES,
  {
    version: 13,
    name: "decision log: the request index holds card decisions only",
    // The by-request lookups all ask for card_decision rows (the answer's proof in decision-log.ts, the
    // unanswered cards in card/recovery.ts). Indexing every row put each decision's entry next to its
    // card_parked entry, a cold leaf of a large index (issue 20; docs/performance.md, branch wip/audit).
    sql: `
      CREATE INDEX IF NOT EXISTS audit_decision_request ON audit(request_id) WHERE kind = 'card_decision';
      DROP INDEX IF EXISTS audit_request;
    `,
  },
  {
    version: 14,
    name: "decision log: audit ids without AUTOINCREMENT, the home index only where home and session differ",
    // SQLite only (its AUTOINCREMENT rewrote sqlite_sequence on every insert, and its WAL holds whole pages); a
    // BIGSERIAL writes no such page, and the full audit_home_session index answers the same filter. Kept in this list
    // so both lists have the same versions and names (test/contract/migrations.test.ts).
    sql: `SELECT 1`,
  },
];
