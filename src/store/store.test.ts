import { describe, expect, test } from "bun:test";
import { chmodSync, mkdtempSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ancestors, rootOf } from "../session/graph.ts";
import { migrate, openDatabase, schemaVersion, MIGRATIONS } from "./db.ts";
import { Store, type NewSession } from "./store.ts";

const base: NewSession = { workspace: "/tmp/ws", mode: "smart", sandbox: "workspace-write", privacy: "public", headless: false, provider: "scripted" };

describe("store.migrate", () => {
  test("migrations run twice are a no-op", () => {
    const dir = mkdtempSync(join(tmpdir(), "airlock-db-"));
    const path = join(dir, "airlock.db");
    const db = openDatabase(path);
    const versionAfterFirst = schemaVersion(db);
    const tablesBefore = db.query("SELECT name, sql FROM sqlite_master ORDER BY name").all();
    expect(migrate(db)).toEqual([]);
    db.close();
    const again = openDatabase(path);
    expect(migrate(again)).toEqual([]);
    expect(schemaVersion(again)).toBe(versionAfterFirst);
    expect(versionAfterFirst).toBe(MIGRATIONS[MIGRATIONS.length - 1]!.version);
    expect(again.query("SELECT name, sql FROM sqlite_master ORDER BY name").all()).toEqual(tablesBefore);
    expect(again.query<{ n: number }, []>("SELECT COUNT(*) AS n FROM schema_version").get()!.n).toBe(MIGRATIONS.length);
    expect(again.query<{ journal_mode: string }, []>("PRAGMA journal_mode").get()!.journal_mode).toBe("wal");
    again.close();
  });
});

describe("store.openDatabase file modes", () => {
  test("airlock.db and its -wal and -shm are 0600 whatever the umask; an existing 0644 database is tightened", () => {
    const dir = mkdtempSync(join(tmpdir(), "airlock-dbmode-"));
    const old = process.umask(0o022);
    try {
      const db = openDatabase(join(dir, "airlock.db"));
      db.exec("CREATE TABLE IF NOT EXISTS t (x); INSERT INTO t VALUES (1)");
      const modes = ["airlock.db", "airlock.db-wal", "airlock.db-shm"].map((f) => (statSync(join(dir, f)).mode & 0o777).toString(8));
      db.close();
      expect(modes).toEqual(["600", "600", "600"]);
      const loose = join(dir, "loose.db");
      writeFileSync(loose, "");
      chmodSync(loose, 0o644);
      openDatabase(loose).close();
      expect((statSync(loose).mode & 0o777).toString(8)).toBe("600");
    } finally {
      process.umask(old);
    }
  });
});

describe("session graph", () => {
  test("the ancestor chain of a 3-deep tree is right, and spawn indexes follow spawn order", async () => {
    const s = await Store.open(":memory:");
    const root = await s.createSession(base);
    const child = await s.createSession({ ...base, parent_session_id: root.id }, root.id);
    const sibling = await s.createSession({ ...base, parent_session_id: root.id }, root.id);
    const grand = await s.createSession({ ...base, parent_session_id: child.id }, root.id);
    expect(await ancestors(s, grand.id)).toEqual([child.id, root.id]);
    expect(await ancestors(s, child.id)).toEqual([root.id]);
    expect(await ancestors(s, root.id)).toEqual([]);
    expect(await rootOf(s, grand.id)).toBe(root.id);
    expect(await rootOf(s, root.id)).toBe(root.id);
    expect([child.spawn_index, sibling.spawn_index, grand.spawn_index]).toEqual([0, 1, 2]);
    expect((await s.getSession(root.id))!.spawn_count).toBe(3);
  });

  test("a cycle inserted by hand is refused, never looped", async () => {
    const s = await Store.open(":memory:");
    const a = await s.createSession(base);
    const b = await s.createSession({ ...base, parent_session_id: a.id });
    const c = await s.createSession({ ...base, parent_session_id: b.id });
    await s.sql.run("UPDATE sessions SET parent_session_id = ? WHERE id = ?", [c.id, a.id]);
    // a store that has not cached the links (parent links never change but in a corrupted table)
    const fresh = new Store(s.sql);
    await expect(ancestors(fresh, c.id)).rejects.toThrow(expect.objectContaining({ code: "session_graph_invalid" }));
    await expect(rootOf(fresh, a.id)).rejects.toThrow(expect.objectContaining({ code: "session_graph_invalid" }));
  });

  test("a chain deeper than 32 is refused", async () => {
    const s = await Store.open(":memory:");
    let id = (await s.createSession(base)).id;
    for (let i = 0; i < 33; i++) id = (await s.createSession({ ...base, parent_session_id: id })).id;
    await expect(ancestors(s, id)).rejects.toThrow(expect.objectContaining({ code: "session_graph_invalid" }));
  });

  test("an unknown session is session_not_found", async () => {
    const s = await Store.open(":memory:");
    await expect(ancestors(s, "ses_nope")).rejects.toThrow(expect.objectContaining({ code: "session_not_found" }));
  });
});

describe("store transactions", () => {
  test("an assistant message keeps what its provider must be given back, unchanged, across a reopen", async () => {
    const file = join(mkdtempSync(join(tmpdir(), "airlock-store-state-")), "airlock.db");
    const s = await Store.open(file);
    const ses = await s.createSession(base);
    const state = { provider: "anthropic", data: [{ type: "thinking", thinking: "hm \u2028 \"q\"", signature: "sig==" }, { type: "redacted_thinking", data: "opaque" }] };
    const m = await s.appendMessage({ session_id: ses.id, turn_id: null, role: "assistant", content: "x", provider_state: state });
    expect(m.provider_state).toEqual(state);
    s.close();
    const again = await Store.open(file);
    expect((await again.listMessages(ses.id))[0]!.provider_state).toEqual(state);
    again.close();
  });
  test("a failure in the middle of appendMessages leaves no half state", async () => {
    const s = await Store.open(":memory:");
    const ses = await s.createSession(base);
    expect(async () =>
      await s.appendMessages([
        { session_id: ses.id, turn_id: null, role: "user", content: "one" },
        // violates the role CHECK constraint: the whole batch must roll back
        { session_id: ses.id, turn_id: null, role: "nobody" as never, content: "two" },
      ]),
    ).toThrow();
    expect(await s.listMessages(ses.id)).toEqual([]);
  });

  test("turns left running by a gone process are marked interrupted on recovery", async () => {
    const s = await Store.open(":memory:");
    const ses = await s.createSession(base);
    const t = await s.startTurn(ses.id);
    expect(await s.markInterruptedTurns(() => true)).toBe(1);
    expect((await s.getTurn(t.id))!.status).toBe("interrupted");
  });

  test("recovery leaves a turn of a live process alone, and takes one whose pid was reused", async () => {
    const s = await Store.open(":memory:");
    const ses = await s.createSession(base);
    const mine = await s.startTurn(ses.id);
    const other = await s.createSession(base);
    const reused = await s.startTurn(other.id, { pid: process.pid, start: "another-boot:1" });
    expect(await s.markInterruptedTurns()).toBe(1);
    expect((await s.getTurn(mine.id))!.status).toBe("running");
    expect((await s.getTurn(reused.id))!.status).toBe("interrupted");
  });

  test("recovery answers each unanswered tool call of an interrupted turn with an interrupted error", async () => {
    const s = await Store.open(":memory:");
    const ses = await s.createSession(base);
    const t = await s.startTurn(ses.id, { pid: process.pid, start: "gone:1" });
    await s.appendMessages([
      { session_id: ses.id, turn_id: t.id, role: "user", content: "go" },
      { session_id: ses.id, turn_id: t.id, role: "assistant", content: "", tool_calls: [{ id: "c1", name: "a", arguments: {} }, { id: "c2", name: "b", arguments: {} }] },
      { session_id: ses.id, turn_id: t.id, role: "tool", content: "done", tool_call_id: "c1", name: "a", is_error: false },
    ]);
    expect(await s.markInterruptedTurns()).toBe(1);
    const tail = (await s.listMessages(ses.id)).slice(3).map((m) => ({ role: m.role, id: m.tool_call_id, err: m.is_error, code: JSON.parse(m.content).error.code }));
    expect(tail).toEqual([{ role: "tool", id: "c2", err: true, code: "interrupted" }]);
  });

  test("messages round-trip with tool calls and results", async () => {
    const s = await Store.open(":memory:");
    const ses = await s.createSession(base);
    await s.appendMessages([
      { session_id: ses.id, turn_id: null, role: "assistant", content: "", tool_calls: [{ id: "c1", name: "developer__shell", arguments: { command: "ls" } }] },
      { session_id: ses.id, turn_id: null, role: "tool", content: '{"ok":true}', tool_call_id: "c1", name: "developer__shell", is_error: false },
    ]);
    const got = (await s.listMessages(ses.id)).map(({ id, created_at, ...rest }) => rest);
    expect(got).toEqual([
      { session_id: ses.id, turn_id: null, role: "assistant", content: "", tool_calls: [{ id: "c1", name: "developer__shell", arguments: { command: "ls" } }] },
      { session_id: ses.id, turn_id: null, role: "tool", content: '{"ok":true}', tool_call_id: "c1", name: "developer__shell", is_error: false },
    ]);
  });
});
