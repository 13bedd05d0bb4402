import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Store } from "./store.ts";
import { Transcripts, transcriptLines, transcriptPath } from "./transcript.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function setup() {
  const dataDir = mkdtempSync(path.join(tmpdir(), "airlock-transcript-unit-"));
  dirs.push(dataDir);
  const store = await Store.open(path.join(dataDir, "airlock.db"));
  const logs: string[] = [];
  const t = new Transcripts({ dataDir, store, log: (l) => logs.push(l), toolUse: (name, args) => ({ name: name === "developer__shell" ? "Bash" : name, input: args }) });
  t.ensureDir();
  store.onMessagesAppended((m) => t.appended(m));
  const s = await store.createSession({ workspace: "/w", mode: "smart", sandbox: "read-only", privacy: "public", headless: false, provider: "scripted" });
  return { dataDir, store, t, s, logs };
}

describe("transcript", () => {
  test("transcriptPath refuses anything but a plain id as a file name", () => {
    expect(transcriptPath("/d", "ses_01ab")).toBe("/d/transcripts/ses_01ab.jsonl");
    for (const bad of ["../x", "a/b", "", ".", "ses x"]) expect(() => transcriptPath("/d", bad)).toThrow(/not a session id/);
  });

  test("system messages are left out and the chain skips them; an unparsed tool call shows an empty input", () => {
    const at = "2026-01-01T00:00:00.000Z";
    const lines = transcriptLines({ id: "ses_a", workspace: "/w", parent_session_id: null }, [
      { id: "m1", session_id: "ses_a", turn_id: null, role: "system", content: "sys", created_at: at },
      { id: "m2", session_id: "ses_a", turn_id: null, role: "assistant", content: "", tool_calls: [{ id: "c1", name: "x__y", arguments: undefined, invalid: "{nope" }], created_at: at },
    ], null);
    expect(lines.map((l) => [l.uuid, l.parentUuid])).toEqual([["m2", null]]);
    expect(lines[0]!.message.content).toEqual([{ type: "tool_use", id: "c1", name: "x__y", input: {} }]);
  });

  test("a symlink planted at a transcript's path is replaced, never written through", async () => {
    const { dataDir, store, t, s } = await setup();
    const victim = path.join(dataDir, "victim.txt");
    writeFileSync(victim, "untouched\n");
    symlinkSync(victim, transcriptPath(dataDir, s.id));
    await store.appendMessage({ session_id: s.id, turn_id: null, role: "user", content: "hello" });
    await t.settled();
    expect(readFileSync(victim, "utf8")).toBe("untouched\n");
    const file = await t.path(s.id);
    expect(statSync(file).isFile()).toBe(true);
    expect(JSON.parse(readFileSync(file, "utf8")).message.content[0].text).toBe("hello");
  });

  test("a transcripts folder swapped for another while airlock runs is never written to; the failure is logged and path() throws", async () => {
    const { dataDir, store, t, s, logs } = await setup();
    await store.appendMessage({ session_id: s.id, turn_id: null, role: "user", content: "one" });
    await t.settled();
    renameSync(t.dir, path.join(dataDir, "moved"));
    mkdirSync(t.dir);
    await store.appendMessage({ session_id: s.id, turn_id: null, role: "user", content: "two" });
    await t.settled();
    expect(logs.join("\n")).toContain("was replaced");
    await expect(t.path(s.id)).rejects.toThrow(/was replaced/);
    expect(readFileSync(path.join(dataDir, "moved", `${s.id}.jsonl`), "utf8")).toContain("one");
  });

  test("path() of a session with no message yet is an empty 0600 file", async () => {
    const { t, s } = await setup();
    const file = await t.path(s.id);
    expect(readFileSync(file, "utf8")).toBe("");
    expect(statSync(file).mode & 0o777).toBe(0o600);
    await expect(t.path("ses_nope")).rejects.toThrow(/no session/);
  });
});
