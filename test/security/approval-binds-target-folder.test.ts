/**
 * @module test/security/approval-binds-target-folder
 * An approval binds to where a write lands (docs/security-model.md §4): a card for
 * `developer__write_file sub/notes.txt` recorded only `sub/notes.txt`'s own entry, so swapping the
 * folder `sub` for a symlink to a folder outside the workspace while the card waited left the binding
 * unchanged, and under `danger-full-access` the allow wrote outside the workspace — where the floor would
 * have asked for a person's proof. The binding now records the real folder when a link on the way leads
 * elsewhere: the swap makes the allow `approval_stale`, the call is judged again (the floor asks), and
 * nothing is written outside. Over real HTTP against the compiled binary's `serve`, as root and as nobody.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { testUsers, type TestUser } from "../as-user.ts";
import { openSse } from "../harness.ts";
import { spawnServe } from "../harness-serve.ts";
import { binaryBox, chownTree, killServes, serveProcs } from "./fixtures/binary-box.ts";

afterAll(killServes);
const procs = serveProcs;

describe.each(testUsers())("the compiled binary's serve, run as $name", (user: TestUser) => {
  test("write_file sub/notes.txt: sub swapped for a link to a folder outside while the card waits is approval_stale, the floor asks, nothing lands outside", async () => {
    const { dir, bin, dataDir, ws, home } = await binaryBox("airlock-bind-folder-");
    const outside = join(dir, "outside");
    for (const d of [outside, join(ws, "sub")]) mkdirSync(d);
    writeFileSync(join(dataDir, "airlock.yaml"), "provider: { name: scripted, script: turns.yaml }\nmode: smart\nsandbox: danger-full-access\n");
    const call = { name: "developer__write_file", arguments: { path: "sub/notes.txt", content: "written\n" } };
    writeFileSync(join(dataDir, "turns.yaml"), `turns:\n  - tool_calls: [${JSON.stringify(call)}]\n  - text: "done"\n`);
    const own = () => {
      if (user.uid !== (process.getuid?.() ?? -1)) chownTree(dir, user.uid);
    };
    own();
    const env = { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: home, LANG: "C.UTF-8" };
    const sp = await spawnServe([...user.prefix, bin, "serve", "--port", "0", "--data-dir", dataDir], { cwd: home, env });
    procs.push(sp.proc);
    const token = readFileSync(join(dataDir, "api-token"), "utf8").trim();
    const approver = readFileSync(join(dataDir, "approver-token"), "utf8").trim();
    const headers = { authorization: `Bearer ${token}`, "content-type": "application/json", "x-airlock-approver": approver };
    const post = async (path: string, body: unknown) => (await fetch(sp.url + path, { method: "POST", headers, body: JSON.stringify(body) })).json() as Promise<any>;
    const s = await post("/sessions", { workspace: ws });
    const reply = await openSse(`${sp.url}/sessions/${s.id}/reply`, { method: "POST", headers, body: JSON.stringify({ message: "go" }) });
    const card = (await reply.waitFor((e) => e.event === "action_required")).data;
    expect(card.inspector).toBe("mode"); // inside the workspace: only smart mode asks
    expect(card.files).toEqual([{ path: "sub/notes.txt", kind: "missing" }]);

    renameSync(join(ws, "sub"), join(ws, "sub-old"));
    symlinkSync(outside, join(ws, "sub"));
    own();
    expect(await post(`/sessions/${s.id}/actions/${card.request_id}`, { decision: "allow_once" })).toMatchObject({ decision: "allow_once" });
    const next = (await reply.waitFor((e) => e.event === "action_required" && e.data.replaces === card.request_id)).data;
    expect(next.reason).toContain("approval_stale");
    expect(next.inspector).toBe("sensitive_ops"); // judged again: now a write outside the workspace
    expect(next.files).toEqual([{ path: "sub/notes.txt", kind: "missing", parent: outside }]);
    expect(await post(`/sessions/${s.id}/actions/${next.request_id}`, { decision: "deny" })).toMatchObject({ decision: "deny" });
    await reply.waitFor((e) => e.event === "turn_finished");
    expect(existsSync(join(outside, "notes.txt"))).toBe(false);
    reply.close();
    sp.proc.kill("SIGTERM");
    await sp.proc.exited;
  }, 120_000);
});
