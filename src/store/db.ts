/**
 * @module store/db
 * Opens the SQLite database (bun:sqlite, WAL) and applies the numbered migrations at start.
 * Migrations are idempotent: each runs once, in its own transaction, recorded in `schema_version`.
 */
import { Database } from "bun:sqlite";
import { chmodSync, closeSync, constants, fstatSync, lstatSync, openSync, statfsSync } from "node:fs";
import { dirname } from "node:path";
import { foreignOwner } from "../config/paths.ts";
import { AirlockError } from "../errors.ts";
import { FLEET_MIGRATIONS_SQLITE } from "./fleet-schema.ts";
import type { Migration } from "./migrate.ts";

/** True when the file system holding `path` has no block left for this user (an I/O error there means "full"). */
function noSpaceLeft(path: string): boolean {
  try {
    return statfsSync(dirname(path)).bavail === 0;
  } catch {
    return false;
  }
}

/** Numbered migrations. Append only; never edit a released one. */
export const MIGRATIONS: readonly Migration[] = [
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
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
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
        id INTEGER PRIMARY KEY AUTOINCREMENT,
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
        id INTEGER PRIMARY KEY AUTOINCREMENT,
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
  ...FLEET_MIGRATIONS_SQLITE,
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
    // the copy holds the write lock ~12-25 s per million rows on 2 busy cores: said on stderr from 100,000 rows on
    // (ids are never deleted, so the largest is the count, read without a scan)
    notice: {
      rows: "SELECT MAX(id) AS n FROM audit",
      min: 100_000,
      text: "upgrading the database to schema version 14: copying the decision log ({n} rows) once; this takes about 20 s per million rows, and other airlock processes on this data dir wait for it",
    },
    // Fewer WAL pages per audit row (issue 20; docs/performance.md, branch wip/park3). AUTOINCREMENT made every
    // audit insert rewrite sqlite_sequence's page too: one 4 KB page of the WAL in four for a card_parked row, one
    // in five for a card_decision row. Rows are never deleted from the audit log, so a plain INTEGER PRIMARY KEY
    // (the largest id + 1) numbers new rows as AUTOINCREMENT did. The table is copied with its ids (one
    // transaction: all or nothing at a crash). audit_home_session serves only the session tree's filter,
    // "session_id IN tree OR home_session_id IN tree" (store/audit-log.ts), whose first half already finds a row
    // whose home is its session (card_parked, call_judged): those rows leave it out, one page less per such row.
    sql: `
      CREATE TABLE audit_v14 (
        id INTEGER PRIMARY KEY,
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
      INSERT INTO audit_v14 (id, at, kind, request_id, session_id, home_session_id, decision, outcome, code, actor, detail)
        SELECT id, at, kind, request_id, session_id, home_session_id, decision, outcome, code, actor, detail FROM audit ORDER BY id;
      DROP TABLE audit;
      ALTER TABLE audit_v14 RENAME TO audit;
      CREATE INDEX audit_session ON audit(session_id, id);
      CREATE INDEX audit_home_session ON audit(home_session_id, id) WHERE home_session_id IS DISTINCT FROM session_id;
      CREATE INDEX audit_decision_request ON audit(request_id) WHERE kind = 'card_decision';
    `,
  },
];

/**
 * Opens (creating if needed) the database at `path` (`:memory:` allowed), in WAL mode with a 5 s busy
 * timeout (several processes may share one file: `airlock run` beside `airlock serve`), and migrates it
 * (unless `opts.migrate` is false: store/open.ts runs `migrateSql` on the async executor instead).
 * @throws AirlockError `data_dir_unusable` when the file or its directory is read-only, the disk is full,
 *   or the file cannot be opened (the message names the path and the fix).
 */
export function openDatabase(path: string, opts: { migrate?: boolean } = {}): Database {
  let db: Database | undefined;
  try {
    if (path !== ":memory:") ownerOnly(path);
    db = new Database(path, { create: true, strict: true });
    // the busy timeout first: switching to WAL and migrating take locks another process may hold
    db.exec("PRAGMA busy_timeout = 5000");
    if (path !== ":memory:") db.query("PRAGMA journal_mode = WAL").get();
    db.exec("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;");
    if (opts.migrate !== false) migrate(db);
    return db;
  } catch (e) {
    db?.close();
    throw storageError(e, path) ?? e;
  }
}

/**
 * Creates `path` empty with mode 0600 if it is missing, and takes group and other bits off an existing
 * one (when this user owns it), so the conversations in it are the owner's alone whatever the umask.
 * SQLite gives the `-wal` and `-shm` files the mode of the database file (its unix VFS), so they follow.
 */
function ownerOnly(path: string): void {
  // never a blocking open: a FIFO at the database's place (anyone who can write the data dir) would hang every
  // command in open(2); without a reader that is ENXIO, with one fstat finds it is no regular file
  let fd: number;
  try {
    fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_APPEND | constants.O_NONBLOCK | constants.O_NOCTTY, 0o600);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ENXIO") throw e;
    throw new AirlockError("data_dir_unusable", `the database ${path} is not a regular file (a FIFO or a device); remove it`);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new AirlockError("data_dir_unusable", `the database ${path} is not a regular file; remove it`);
    foreignDatabaseFile(path, st.uid);
  } finally {
    closeSync(fd);
  }
  // SQLite opens the -wal, -shm and -journal files it finds beside the database: one another user put there is as
  // much theirs to rewrite as the database
  for (const suffix of ["-wal", "-shm", "-journal"]) {
    let uid: number;
    try {
      uid = lstatSync(`${path}${suffix}`).uid;
    } catch {
      continue;
    }
    foreignDatabaseFile(`${path}${suffix}`, uid);
  }
  try {
    chmodSync(path, 0o600);
  } catch {
    // not ours to change (another user's file): left as it is
  }
}

/**
 * Refuses a database file (or its -wal, -shm, -journal) owned by another user than the one airlock runs as or root:
 * one put in the data dir while that user could write it (refused since: config/paths.ts dataDirOwnershipProblem)
 * stays theirs after `chmod go-w`, and they could go on rewriting it — the trusted folders, the session rules — or
 * reading every conversation (airlock cannot take its mode bits off a file it does not own).
 * @throws AirlockError `data_dir_unusable` naming the file, its owner and the fix.
 */
function foreignDatabaseFile(path: string, uid: number): void {
  if (!foreignOwner(uid)) return;
  throw new AirlockError("data_dir_unusable", `the database file ${path} belongs to uid ${uid}, not to the user airlock runs as (uid ${process.geteuid?.()}): its owner could rewrite it (trusted folders, rules) or read your conversations; remove it (a new database is made) or use a data dir of your own with --data-dir`);
}

/**
 * Maps a storage failure (SQLite `SQLITE_CANTOPEN`, `SQLITE_READONLY*`, `SQLITE_FULL`, `SQLITE_IOERR*`, or
 * errno `EACCES`/`EROFS`/`ENOSPC`/`EDQUOT`) to `data_dir_unusable` with a message naming `path`; null for other errors.
 */
export function storageError(e: unknown, path: string): AirlockError | null {
  if (e instanceof AirlockError) return null;
  const code = String((e as { code?: unknown } | undefined)?.code ?? "");
  const msg = e instanceof Error ? e.message : String(e);
  const where = `the data dir (${path})`;
  const full = () => new AirlockError("data_dir_unusable", `${where} is full (${msg}); free some space or pass another --data-dir`, { path });
  if (/^SQLITE_FULL/.test(code) || code === "ENOSPC" || code === "EDQUOT") return full();
  if (/^SQLITE_(READONLY|CANTOPEN|PERM|AUTH)/.test(code) || code === "EACCES" || code === "EROFS" || code === "EPERM") {
    return new AirlockError("data_dir_unusable", `${where} cannot be written (${msg}); make it writable by this user or pass another --data-dir`, { path });
  }
  if (/^SQLITE_IOERR/.test(code) && noSpaceLeft(path)) return full();
  if (/^SQLITE_(IOERR|CORRUPT|NOTADB)/.test(code)) {
    return new AirlockError("data_dir_unusable", `${where} could not be read or written (${msg}); check the disk, or pass another --data-dir`, { path });
  }
  return null;
}

/** Applies every migration not yet recorded. Returns the versions applied now (empty when up to date). */
export function migrate(db: Database): number[] {
  db.exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)");
  const done = new Set(db.query<{ version: number }, []>("SELECT version FROM schema_version").all().map((r) => r.version));
  const applied: number[] = [];
  for (const m of MIGRATIONS) {
    if (done.has(m.version)) continue;
    // IMMEDIATE takes the write lock first, and the check is repeated under it: two processes opening a
    // fresh data dir at once apply each migration exactly once (the other waits on busy_timeout, then skips it).
    const ran = db.transaction(() => {
      if (db.query("SELECT 1 FROM schema_version WHERE version = ?").get(m.version)) return false;
      db.exec(m.sql);
      db.query("INSERT INTO schema_version (version, name, applied_at) VALUES (?, ?, ?)").run(m.version, m.name, new Date().toISOString());
      return true;
    }).immediate();
    if (ran) applied.push(m.version);
  }
  return applied;
}

/** The highest applied migration version. */
export function schemaVersion(db: Database): number {
  return db.query<{ v: number | null }, []>("SELECT MAX(version) AS v FROM schema_version").get()?.v ?? 0;
}
