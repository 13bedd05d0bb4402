/**
 * @module store/checkpoint-worker
 * The WAL checkpointer's thread (store/checkpoint.ts): its own connection to the database file, on which
 * it runs a PASSIVE checkpoint per request, so the checkpoint's copy and fsyncs never run on the serving
 * thread nor inside a commit. Asked to (the serving connection's writes have paused), it also starts a fully
 * copied WAL over itself, with one small commit, so the fsync SQLite makes of a new WAL's header happens here
 * rather than in the serving connection's next commit. Runs only on the serving connection's own file (the path may
 * name another by the time the thread opens it: a data dir replaced, a link moved): otherwise it fails. Loads nothing
 * but bun:sqlite and the checkpointer's constants.
 */
import { Database } from "bun:sqlite";
import { assertNever } from "../errors.ts";
import { fileId, GATE_STATE, GATE_WRITES, type CheckpointReply, type CheckpointRequest } from "./checkpoint.ts";

declare const self: Worker;

let db: Database | null = null;
/** Shared with the serving thread (store/checkpoint.ts `GATE_STATE`). */
let gate: Int32Array | null = null;

function reply(m: CheckpointReply): void {
  self.postMessage(m);
}

/** This connection's `PRAGMA data_version`: changes when another connection (any process) has committed since the last read. */
function dataVersion(d: Database): number {
  return d.query<{ data_version: number }, []>("PRAGMA data_version").get()!.data_version;
}

/**
 * Starts a fully copied WAL over from this connection: one write transaction that rewrites `application_id` with
 * its own value (page 1 written again, nothing changed). Its first frame restarts the WAL, and SQLite syncs the new
 * header then (it must: ticket ff5be73dee), here instead of in the serving connection's next commit; the `-wal` file
 * is cut back to `journal_size_limit`. Never waits for the write lock: a writer holding it (SQLITE_BUSY) starts the
 * WAL over itself. Returns whether the transaction committed. @throws what SQLite throws other than SQLITE_BUSY.
 */
function startOver(d: Database): boolean {
  d.exec("PRAGMA busy_timeout = 0");
  try {
    try {
      d.exec("BEGIN IMMEDIATE");
    } catch (e) {
      if ((e as { code?: unknown }).code === "SQLITE_BUSY") return false;
      throw e;
    }
    try {
      const id = d.query<{ application_id: number }, []>("PRAGMA application_id").get()!.application_id;
      d.exec(`PRAGMA application_id = ${Math.trunc(id)}`);
      d.exec("COMMIT");
      return true;
    } catch (e) {
      if (d.inTransaction) d.exec("ROLLBACK");
      throw e;
    }
  } finally {
    d.exec("PRAGMA busy_timeout = 5000");
  }
}

self.onmessage = (ev: MessageEvent<CheckpointRequest>) => {
  const m = ev.data;
  try {
    switch (m.kind) {
      case "open":
        // never creates the file: the serving connection made and migrated it
        if (fileId(m.path) !== m.file) throw new Error(`${m.path} is no longer the serving connection's database file`);
        db = new Database(m.path, { readwrite: true, create: false });
        // the file opened is the one looked at before (and so the serving connection's), else nothing runs on it
        if (fileId(m.path) !== m.file) {
          db.close();
          db = null;
          throw new Error(`${m.path} is no longer the serving connection's database file`);
        }
        // synchronous = NORMAL as the serving connection (store/db.ts): the checkpoint still syncs the WAL before it
        // copies and the database file after, and a new WAL's header is still synced; only the start-over commit
        // itself (which changes nothing) is not (FULL, SQLite's default, would add an fsync to it)
        db.exec(`PRAGMA busy_timeout = 5000; PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = 0; PRAGMA journal_size_limit = ${Math.trunc(m.journalSizeLimit)};`);
        gate = new Int32Array(m.gate);
        reply({ kind: "opened" });
        return;
      case "checkpoint": {
        if (!db || !gate) throw new Error("checkpoint before open");
        const writes = Atomics.load(gate, GATE_WRITES);
        const before = m.startOver ? dataVersion(db) : 0;
        // PASSIVE: copies what no reader still needs and waits for no one; a writer meanwhile appends to the WAL
        const r = db.query<{ busy: number; log: number; checkpointed: number }, []>("PRAGMA wal_checkpoint(PASSIVE)").get()!;
        // start over only a WAL copied whole with no commit meanwhile (the writers are still pausing): no other
        // connection committed (data_version), and no write of the serving connection began (the gate's count)
        let restarted = false;
        if (m.startOver && r.busy === 0 && r.log > 0 && r.checkpointed === r.log && dataVersion(db) === before) {
          Atomics.store(gate, GATE_STATE, 1);
          try {
            if (Atomics.load(gate, GATE_WRITES) === writes) restarted = startOver(db);
          } finally {
            Atomics.store(gate, GATE_STATE, 0);
            Atomics.notify(gate, GATE_STATE);
          }
        }
        reply({ kind: "checkpointed", busy: r.busy, log: r.log, checkpointed: r.checkpointed, restarted });
        return;
      }
      case "close":
        db?.close();
        db = null;
        reply({ kind: "closed" });
        return;
      default:
        assertNever(m, "checkpoint request");
    }
  } catch (e) {
    reply({ kind: "failed", message: e instanceof Error ? e.message : String(e) });
  }
};
