/**
 * @module test/security/approval-binds-every-named-file
 * An approval binds the content of at most 16 named workspace files. A call naming more
 * (`sh a1.sh; …; sh a16.sh; sh evil.sh`) got a card that bound the first 16 only: the 17th could be
 * rewritten after the allow and run unbound. Such a call is now refused `payload_too_large` with no card
 * (as a file over the size limit is). Over real HTTP against the compiled binary's `serve`, as root and nobody.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { testUsers, type TestUser } from "../as-user.ts";
import { openSse } from "../harness.ts";
import { spawnServe } from "../harness-serve.ts";
import { binaryBox, chownTree, killServes, serveProcs } from "./fixtures/binary-box.ts";

afterAll(killServes);
const procs = serveProcs;

describe.each(testUsers())("the compiled binary's serve, run as $name", (user: TestUser) => {
  test("a shell call naming 17 scripts is refused payload_too_large, with no card, and runs none", async () => {
    const { dir, bin, dataDir, ws, home } = await binaryBox("airlock-bind-many-");
    const names = [...Array.from({ length: 16 }, (_, i) => `a${i + 1}.sh`), "evil.sh"];
    for (const n of names) writeFileSync(join(ws, n), `echo ${n} >> ran.txt\n`);
    const command = names.map((n) => `sh ${n}`).join("; ");
    writeFileSync(join(dataDir, "airlock.yaml"), "provider: { name: scripted, script: turns.yaml }\nmode: smart\nsandbox: workspace-write\n");
    writeFileSync(join(dataDir, "turns.yaml"), `turns:\n  - tool_calls: [${JSON.stringify({ name: "developer__shell", arguments: { command } })}]\n  - text: "done"\n`);
    if (user.uid !== (process.getuid?.() ?? -1)) chownTree(dir, user.uid);
    const env = { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: home, LANG: "C.UTF-8" };
    const sp = await spawnServe([...user.prefix, bin, "serve", "--port", "0", "--data-dir", dataDir], { cwd: home, env });
    procs.push(sp.proc);
    const token = readFileSync(join(dataDir, "api-token"), "utf8").trim();
    const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
    const s = await (await fetch(`${sp.url}/sessions`, { method: "POST", headers, body: JSON.stringify({ workspace: ws }) })).json() as any;
    const reply = await openSse(`${sp.url}/sessions/${s.id}/reply`, { method: "POST", headers, body: JSON.stringify({ message: "go" }) });
    const first = await reply.waitFor((e) => e.event === "action_required" || e.event === "tool_result");
    expect(first.event).toBe("tool_result");
    expect(first.data.error?.code).toBe("payload_too_large");
    await reply.waitFor((e) => e.event === "turn_finished");
    expect(reply.events.filter((e) => e.event === "action_required")).toEqual([]);
    expect(existsSync(join(ws, "ran.txt"))).toBe(false);
    reply.close();
    sp.proc.kill("SIGTERM");
    await sp.proc.exited;
  }, 120_000);
});
