/**
 * @module store/checkpoint-worker
 * The WAL checkpointer's thread (store/checkpoint.ts): its own connection to the database file, on which
 * it runs a PASSIVE checkpoint per request, so the checkpoint's copy and fsyncs never run on the serving
 * thread nor inside a commit. Loads nothing but bun:sqlite.
 */
import { Database } from "bun:sqlite";
import { assertNever } from "../errors.ts";
import type { CheckpointReply, CheckpointRequest } from "./checkpoint.ts";

declare const self: Worker;

let db: Database | null = null;

function reply(m: CheckpointReply): void {
  self.postMessage(m);
}

self.onmessage = (ev: MessageEvent<CheckpointRequest>) => {
  const m = ev.data;
  try {
    switch (m.kind) {
      case "open":
        // never creates the file: the serving connection made and migrated it
        db = new Database(m.path, { readwrite: true, create: false });
        db.exec("PRAGMA busy_timeout = 5000; PRAGMA wal_autocheckpoint = 0;");
        reply({ kind: "opened" });
        return;
      case "checkpoint": {
        if (!db) throw new Error("checkpoint before open");
        // PASSIVE: copies what no reader still needs and waits for no one; a writer meanwhile appends to the WAL
        const r = db.query<{ busy: number; log: number; checkpointed: number }, []>("PRAGMA wal_checkpoint(PASSIVE)").get()!;
        reply({ kind: "checkpointed", busy: r.busy, log: r.log, checkpointed: r.checkpointed });
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
