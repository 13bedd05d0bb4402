/**
 * @module test/security/approval-binds-content
 * An approval binds to what runs (issue 12 item 10), over real HTTP with real shell calls under bubblewrap:
 * a card records the sha256 of the workspace files the call names (the script a shell runs, the file a
 * write targets); a file rewritten, deleted, created or swapped for a symlink while the card waits makes
 * the allow refused as `approval_stale`, and a NEW card for the new content appears; allowing that one
 * runs the new content exactly once. An unchanged file runs normally, with one card.
 */
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { BIND_MAX_BYTES } from "../../src/card/bound-files.ts";
import { chmodSync, closeSync, ftruncateSync, openSync, existsSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { testUsers, type TestUser } from "../as-user.ts";
import { spawnServe } from "../harness-serve.ts";
import { binaryBox, chownTree, killServes, serveProcs } from "./fixtures/binary-box.ts";
import { harnessSse, openSse, startHarness, waitForBus, type Harness, type SseStream } from "../harness.ts";
import { decide } from "../integration/gate-helpers.ts";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const sha = (s: string) => createHash("sha256").update(s).digest("hex");

function turns(call: { name: string; arguments: Record<string, unknown> }): string {
  return `
turns:
  - tool_calls: [${JSON.stringify(call)}]
  - text: "done"
`;
}

/** A smart-mode, workspace-write session whose first turn makes `call`; resolves once its card is parked. */
async function parkedCall(call: { name: string; arguments: Record<string, unknown> }, workspaceFiles: Record<string, string>) {
  h = await startHarness({
    config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "smart", sandbox: "workspace-write" },
    files: { "turns.yaml": turns(call) },
    workspaceFiles,
  });
  const s = await h.createSession({ mode: "smart", sandbox: "workspace-write" });
  const reply = await harnessSse(h, `/sessions/${s.id}/reply`, { method: "POST", json: { message: "go" } });
  const card = (await reply.waitFor((e) => e.event === "action_required")).data;
  return { id: s.id, reply, card };
}

/** The `action_required` cards seen on the stream so far. */
function cards(reply: SseStream): any[] {
  return reply.events.filter((e) => e.event === "action_required").map((e) => e.data);
}

/** Allows `card`, then waits for the card that replaces it (the allow went stale). */
async function allowExpectingStale(id: string, reply: SseStream, card: any): Promise<any> {
  expect(await decide(h!, id, card.request_id, "allow_once")).toMatchObject({ status: 200 });
  return (await reply.waitFor((e) => e.event === "action_required" && e.data.replaces === card.request_id)).data;
}

function toolResults(sessionId: string): any[] {
  return h!.rt.bus.since(sessionId, 0)!.filter((e) => e.type === "tool_result").map((e) => e.data);
}

describe("an approval binds to the content of the files the call names", () => {
  test("sh script.sh: the script rewritten while the card waits is refused approval_stale, a new card shows the new hash, its allow runs the new content once", async () => {
    const { id, reply, card } = await parkedCall({ name: "developer__shell", arguments: { command: "sh script.sh" } }, { "script.sh": "echo old >> ran.txt\n" });
    const ws = h!.workspace;
    expect(card.files).toEqual([{ path: "script.sh", kind: "file", size: 20, sha256: sha("echo old >> ran.txt\n") }]);
    // the card object over the API and in the snapshot carries the hashes too
    const listed = ((await (await h!.api(`/sessions/${id}/actions`)).json()) as any).actions;
    expect(listed.map((c: any) => c.files)).toEqual([card.files]);
    const all = ((await (await h!.api(`/actions`)).json()) as any).actions;
    expect(all.map((c: any) => c.files)).toEqual([card.files]);
    const obs = await harnessSse(h!, `/sessions/${id}/events`);
    expect((await obs.waitFor((e) => e.event === "snapshot")).data.pending_actions.map((c: any) => c.files)).toEqual([card.files]);
    obs.close();

    writeFileSync(join(ws, "script.sh"), "echo new >> ran.txt\n");
    const next = await allowExpectingStale(id, reply, card);
    expect(existsSync(join(ws, "ran.txt"))).toBe(false);
    expect(next).toMatchObject({ tool: "developer__shell", arguments: { command: "sh script.sh" }, replaces: card.request_id });
    expect(next.request_id).not.toBe(card.request_id);
    expect(next.files).toEqual([{ path: "script.sh", kind: "file", size: 20, sha256: sha("echo new >> ran.txt\n") }]);
    expect(next.reason).toContain("approval_stale");
    // the refused allow is in the audit log with both hashes; the new card's parked row has the new hash
    const stale = (await h!.rt.store.listAudit({ request_id: card.request_id })).filter((a) => a.kind === "card_stale");
    expect(stale.map((a) => [a.code, a.outcome])).toEqual([["approval_stale", "refused"]]);
    expect((stale[0]!.detail as any).approved).toEqual(card.files);
    expect((stale[0]!.detail as any).now).toEqual(next.files);
    const parkedRow = (await h!.rt.store.listAudit({ request_id: next.request_id })).find((a) => a.kind === "card_parked")!;
    expect((parkedRow.detail as any).files).toEqual(next.files);

    expect(await decide(h!, id, next.request_id, "allow_once")).toMatchObject({ status: 200 });
    const fin = await reply.waitFor((e) => e.event === "turn_finished");
    expect(fin.data).toMatchObject({ status: "completed", answer: "done" });
    expect(readFileSync(join(ws, "ran.txt"), "utf8")).toBe("new\n");
    expect(toolResults(id).map((r) => r.ok)).toEqual([true]);
    expect(cards(reply).length).toBe(2);
    reply.close();
  });

  test("a shell call made from a QuickJS script is bound the same way", async () => {
    const code = "return await tools.developer__shell({ command: 'sh script.sh' })";
    const { id, reply, card } = await parkedCall({ name: "code_execution__execute", arguments: { code } }, { "script.sh": "echo old >> ran.txt\n" });
    expect(card).toMatchObject({ tool: "developer__shell", files: [{ path: "script.sh", sha256: sha("echo old >> ran.txt\n") }] });
    writeFileSync(join(h!.workspace, "script.sh"), "echo new >> ran.txt\n");
    const next = await allowExpectingStale(id, reply, card);
    expect(next.files[0].sha256).toBe(sha("echo new >> ran.txt\n"));
    expect(await decide(h!, id, next.request_id, "allow_once")).toMatchObject({ status: 200 });
    await reply.waitFor((e) => e.event === "turn_finished");
    expect(readFileSync(join(h!.workspace, "ran.txt"), "utf8")).toBe("new\n");
    reply.close();
  });

  test("a script deleted, or swapped for a symlink, while the card waits is stale too", async () => {
    const { id, reply, card } = await parkedCall({ name: "developer__shell", arguments: { command: "bash ./a.sh; . ./b.sh" } }, { "a.sh": "echo a >> ran.txt\n", "b.sh": "echo b >> ran.txt\n", "evil.sh": "echo evil >> ran.txt\n" });
    const ws = h!.workspace;
    expect(card.files.map((f: any) => [f.path, f.kind])).toEqual([["a.sh", "file"], ["b.sh", "file"]]);
    rmSync(join(ws, "a.sh"));
    const second = await allowExpectingStale(id, reply, card);
    expect(second.files.map((f: any) => [f.path, f.kind])).toEqual([["a.sh", "missing"], ["b.sh", "file"]]);
    rmSync(join(ws, "b.sh"));
    symlinkSync("evil.sh", join(ws, "b.sh"));
    const third = await allowExpectingStale(id, reply, second);
    expect(third.files[1]).toEqual({ path: "b.sh", kind: "symlink", link: "evil.sh", size: 21, sha256: sha("echo evil >> ran.txt\n") });
    expect(existsSync(join(ws, "ran.txt"))).toBe(false);
    expect(await decide(h!, id, third.request_id, "deny")).toMatchObject({ status: 200 });
    await reply.waitFor((e) => e.event === "turn_finished");
    expect(existsSync(join(ws, "ran.txt"))).toBe(false);
    expect(toolResults(id).map((r) => r.error?.code)).toEqual(["denied"]);
    reply.close();
  });

  test("./run.sh rewritten meanwhile is stale; python3 x.py is bound as well", async () => {
    const { id, reply, card } = await parkedCall({ name: "developer__shell", arguments: { command: "./run.sh && python3 -u x.py" } }, { "run.sh": "#!/bin/sh\necho old >> ran.txt\n", "x.py": "open('py.txt','a').write('py\\n')\n" });
    const ws = h!.workspace;
    chmodSync(join(ws, "run.sh"), 0o755);
    expect(card.files.map((f: any) => f.path)).toEqual(["run.sh", "x.py"]);
    writeFileSync(join(ws, "run.sh"), "#!/bin/sh\necho new >> ran.txt\n");
    const next = await allowExpectingStale(id, reply, card);
    expect(next.files[0].sha256).toBe(sha("#!/bin/sh\necho new >> ran.txt\n"));
    expect(next.files[1]).toEqual(card.files[1]);
    expect(await decide(h!, id, next.request_id, "allow_once")).toMatchObject({ status: 200 });
    await reply.waitFor((e) => e.event === "turn_finished");
    expect(readFileSync(join(ws, "ran.txt"), "utf8")).toBe("new\n");
    expect(readFileSync(join(ws, "py.txt"), "utf8")).toBe("py\n");
    reply.close();
  });

  test("write_file: a target changed while the card waits is stale; the new card's allow writes once", async () => {
    const { id, reply, card } = await parkedCall({ name: "developer__write_file", arguments: { path: "notes.txt", content: "from the model\n" } }, { "notes.txt": "v1\n" });
    const ws = h!.workspace;
    expect(card.files).toEqual([{ path: "notes.txt", kind: "file", size: 3, sha256: sha("v1\n") }]);
    writeFileSync(join(ws, "notes.txt"), "v2, written by a person meanwhile\n");
    const next = await allowExpectingStale(id, reply, card);
    expect(readFileSync(join(ws, "notes.txt"), "utf8")).toBe("v2, written by a person meanwhile\n");
    expect(next.files).toEqual([{ path: "notes.txt", kind: "file", size: 34, sha256: sha("v2, written by a person meanwhile\n") }]);
    expect(await decide(h!, id, next.request_id, "allow_once")).toMatchObject({ status: 200 });
    await reply.waitFor((e) => e.event === "turn_finished");
    expect(readFileSync(join(ws, "notes.txt"), "utf8")).toBe("from the model\n");
    expect(toolResults(id).map((r) => r.ok)).toEqual([true]);
    reply.close();
  });

  test("write_file: a target created, or replaced by a symlink, while the card waits is stale", async () => {
    const { id, reply, card } = await parkedCall({ name: "developer__edit_file", arguments: { path: "a.txt", old_string: "x", new_string: "y" } }, { "a.txt": "x\n", "other.txt": "x other\n" });
    const ws = h!.workspace;
    expect(card.files).toEqual([{ path: "a.txt", kind: "file", size: 2, sha256: sha("x\n") }]);
    rmSync(join(ws, "a.txt"));
    symlinkSync("other.txt", join(ws, "a.txt"));
    const next = await allowExpectingStale(id, reply, card);
    expect(next.files).toEqual([{ path: "a.txt", kind: "symlink", link: "other.txt", size: 8, sha256: sha("x other\n") }]);
    expect(await decide(h!, id, next.request_id, "deny")).toMatchObject({ status: 200 });
    await reply.waitFor((e) => e.event === "turn_finished");
    expect(readFileSync(join(ws, "other.txt"), "utf8")).toBe("x other\n");
    reply.close();
  });

  test("write_file: a missing target created meanwhile is stale", async () => {
    const { id, reply, card } = await parkedCall({ name: "developer__write_file", arguments: { path: "new.txt", content: "model\n" } }, {});
    const ws = h!.workspace;
    expect(card.files).toEqual([{ path: "new.txt", kind: "missing" }]);
    writeFileSync(join(ws, "new.txt"), "a person's file\n");
    const next = await allowExpectingStale(id, reply, card);
    expect(next.files).toEqual([{ path: "new.txt", kind: "file", size: 16, sha256: sha("a person's file\n") }]);
    expect(await decide(h!, id, next.request_id, "deny")).toMatchObject({ status: 200 });
    await reply.waitFor((e) => e.event === "turn_finished");
    expect(readFileSync(join(ws, "new.txt"), "utf8")).toBe("a person's file\n");
    reply.close();
  });

  test("an unchanged script runs on the first allow, with one card", async () => {
    const { id, reply, card } = await parkedCall({ name: "developer__shell", arguments: { command: "sh script.sh" } }, { "script.sh": "echo same >> ran.txt\n" });
    expect(card.files).toEqual([{ path: "script.sh", kind: "file", size: 21, sha256: sha("echo same >> ran.txt\n") }]);
    expect(await decide(h!, id, card.request_id, "allow_once")).toMatchObject({ status: 200 });
    const fin = await reply.waitFor((e) => e.event === "turn_finished");
    expect(fin.data.status).toBe("completed");
    expect(readFileSync(join(h!.workspace, "ran.txt"), "utf8")).toBe("same\n");
    expect(cards(reply).length).toBe(1);
    expect(toolResults(id).map((r) => r.ok)).toEqual([true]);
    expect((await h!.rt.store.listAudit({})).filter((a) => a.kind === "card_stale")).toEqual([]);
    reply.close();
  });

  test("a named file over the hashing limit is refused payload_too_large with a reason, and no card is raised", async () => {
    h = await startHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "smart", sandbox: "workspace-write" },
      files: { "turns.yaml": turns({ name: "developer__shell", arguments: { command: "sh big.sh" } }) },
    });
    const fd = openSync(join(h.workspace, "big.sh"), "w");
    ftruncateSync(fd, BIND_MAX_BYTES + 1); // sparse
    closeSync(fd);
    const s = await h.createSession({ mode: "smart", sandbox: "workspace-write" });
    const reply = await harnessSse(h, `/sessions/${s.id}/reply`, { method: "POST", json: { message: "go" } });
    await reply.waitFor((e) => e.event === "turn_finished");
    expect(cards(reply)).toEqual([]);
    const [r] = toolResults(s.id);
    expect(r.error.code).toBe("payload_too_large");
    expect(r.error.message).toContain(`big.sh is ${BIND_MAX_BYTES + 1} bytes`);
    reply.close();
  });

  test("a file that keeps changing under every allow is refused approval_stale after five cards", async () => {
    const { id, reply, card } = await parkedCall({ name: "developer__shell", arguments: { command: "sh script.sh" } }, { "script.sh": "echo 0 >> ran.txt\n" });
    let c = card;
    for (let n = 1; n < 5; n++) {
      writeFileSync(join(h!.workspace, "script.sh"), `echo ${n} >> ran.txt\n`);
      c = await allowExpectingStale(id, reply, c);
    }
    writeFileSync(join(h!.workspace, "script.sh"), "echo 5 >> ran.txt\n");
    expect(await decide(h!, id, c.request_id, "allow_once")).toMatchObject({ status: 200 });
    await reply.waitFor((e) => e.event === "turn_finished");
    expect(cards(reply).length).toBe(5);
    expect(toolResults(id).map((r) => r.error?.code)).toEqual(["approval_stale"]);
    expect(existsSync(join(h!.workspace, "ran.txt"))).toBe(false);
    await waitForBus(h!.rt, () => h!.rt.permits.inUse === 0);
    reply.close();
  });
});

afterAll(killServes);
const procs = serveProcs;

describe.each(testUsers())("the compiled binary's serve, run as $name", (user: TestUser) => {
  test("a script rewritten while its card waits is refused approval_stale; actions list shows the new hash; the new card's allow runs the new content once", async () => {
    const { dir, bin, dataDir, ws, home } = await binaryBox("airlock-stale-");
    writeFileSync(join(dataDir, "airlock.yaml"), "provider: { name: scripted, script: turns.yaml }\nmode: smart\nsandbox: workspace-write\n");
    writeFileSync(join(dataDir, "turns.yaml"), turns({ name: "developer__shell", arguments: { command: "sh script.sh" } }));
    writeFileSync(join(ws, "script.sh"), "echo old >> ran.txt\n");
    if (user.uid !== (process.getuid?.() ?? -1)) chownTree(dir, user.uid);
    const env = { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: home, LANG: "C.UTF-8" };
    const sp = await spawnServe([...user.prefix, bin, "serve", "--port", "0", "--data-dir", dataDir], { cwd: home, env });
    procs.push(sp.proc);
    const token = readFileSync(join(dataDir, "api-token"), "utf8").trim();
    const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
    const post = async (path: string, body: unknown) => (await fetch(sp.url + path, { method: "POST", headers, body: JSON.stringify(body) })).json() as Promise<any>;
    const s = await post("/sessions", { workspace: ws });
    const reply = await openSse(`${sp.url}/sessions/${s.id}/reply`, { method: "POST", headers, body: JSON.stringify({ message: "go" }) });
    const card = (await reply.waitFor((e) => e.event === "action_required")).data;
    expect(card.files).toEqual([{ path: "script.sh", kind: "file", size: 20, sha256: sha("echo old >> ran.txt\n") }]);

    writeFileSync(join(ws, "script.sh"), "echo new >> ran.txt\n");
    expect(await post(`/sessions/${s.id}/actions/${card.request_id}`, { decision: "allow_once" })).toMatchObject({ decision: "allow_once" });
    const next = (await reply.waitFor((e) => e.event === "action_required" && e.data.replaces === card.request_id)).data;
    expect(next.files).toEqual([{ path: "script.sh", kind: "file", size: 20, sha256: sha("echo new >> ran.txt\n") }]);
    expect(existsSync(join(ws, "ran.txt"))).toBe(false);

    // `airlock actions list` (the binary, as the same user) shows the new card with the new content's full hash
    const list = Bun.spawn([...user.prefix, bin, "actions", "list", "--data-dir", dataDir, "--url", sp.url], { cwd: home, env, stdout: "pipe", stderr: "pipe" });
    const [out, err, code] = await Promise.all([new Response(list.stdout).text(), new Response(list.stderr).text(), list.exited]);
    expect({ code, err }).toEqual({ code: 0, err: "" });
    expect(out).toContain(next.request_id);
    expect(out).toContain(`replaces ${card.request_id}`);
    expect(out).toContain(`file script.sh: sha256 ${sha("echo new >> ran.txt\n")} (20 bytes)`);
    expect(out).not.toContain(card.request_id + "  ");

    expect(await post(`/sessions/${s.id}/actions/${next.request_id}`, { decision: "allow_once" })).toMatchObject({ decision: "allow_once" });
    const fin = await reply.waitFor((e) => e.event === "turn_finished");
    expect(fin.data.status).toBe("completed");
    expect(readFileSync(join(ws, "ran.txt"), "utf8")).toBe("new\n");
    const results = reply.events.filter((e) => e.event === "tool_result").map((e) => e.data.ok);
    expect(results).toEqual([true]);
    reply.close();
    sp.proc.kill("SIGTERM");
    await sp.proc.exited;
  });
});
