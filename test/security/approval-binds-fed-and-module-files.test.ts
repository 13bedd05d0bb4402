/**
 * @module test/security/approval-binds-fed-and-module-files
 * An approval binds to the code that runs (docs/security-model.md §4), also where the code is not a
 * plain script operand: a module run with `python3 -m` (its `.py` file, or the package's `__main__.py`
 * created meanwhile), a file fed to a shell (`bash -c "$(cat x.sh)"`, `eval "$(cat x.sh)"`,
 * `cat x.sh | sh`) and a script behind a wrapper the binder did not list (`flock l sh x.sh`). The file
 * rewritten (or created) while the card waits makes the allow `approval_stale`, and nothing runs.
 * Driven over real HTTP against the compiled binary's `serve`, run as root and as nobody.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { testUsers, type TestUser } from "../as-user.ts";
import { openSse } from "../harness.ts";
import { spawnServe } from "../harness-serve.ts";
import { binaryBox, chownTree, killServes, serveProcs } from "./fixtures/binary-box.ts";

afterAll(killServes);
const procs = serveProcs;

interface Case {
  command: string;
  /** Workspace files before the card. */
  files: Record<string, string>;
  /** What changes while the card waits (path → new content). */
  change: Record<string, string>;
}

const SH_OLD = "echo old >> ran.txt\n";
const SH_NEW = "echo new >> ran.txt\n";
const PY_OLD = "open('ran.txt','a').write('old\\n')\n";
const PY_NEW = "open('ran.txt','a').write('new\\n')\n";

const CASES: Case[] = [
  { command: "python3 -m tool", files: { "tool.py": PY_OLD }, change: { "tool.py": PY_NEW } },
  // a package of the same name wins over the module: creating it meanwhile is a change too
  { command: "python3 -m tool", files: { "tool.py": PY_OLD }, change: { "tool/__main__.py": PY_NEW } },
  { command: 'bash -c "$(cat x.sh)"', files: { "x.sh": SH_OLD }, change: { "x.sh": SH_NEW } },
  { command: 'eval "$(cat x.sh)"', files: { "x.sh": SH_OLD }, change: { "x.sh": SH_NEW } },
  { command: "cat x.sh | sh", files: { "x.sh": SH_OLD }, change: { "x.sh": SH_NEW } },
  { command: "flock l.lock sh x.sh", files: { "x.sh": SH_OLD }, change: { "x.sh": SH_NEW } },
];

async function staleAfterChange(user: TestUser, c: Case): Promise<void> {
  const { dir, bin, dataDir, ws, home } = await binaryBox("airlock-bind-fed-");
  writeFileSync(join(dataDir, "airlock.yaml"), "provider: { name: scripted, script: turns.yaml }\nmode: smart\nsandbox: workspace-write\n");
  const call = { name: "developer__shell", arguments: { command: c.command } };
  writeFileSync(join(dataDir, "turns.yaml"), `turns:\n  - tool_calls: [${JSON.stringify(call)}]\n  - text: "done"\n`);
  for (const [f, body] of Object.entries(c.files)) writeFileSync(join(ws, f), body);
  if (user.uid !== (process.getuid?.() ?? -1)) chownTree(dir, user.uid);
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
  // the card names what will run
  for (const f of Object.keys(c.change)) expect(card.files.map((b: any) => b.path)).toContain(f);

  for (const [f, body] of Object.entries(c.change)) {
    mkdirSync(join(ws, f, ".."), { recursive: true });
    writeFileSync(join(ws, f), body);
    if (user.uid !== (process.getuid?.() ?? -1)) chownTree(ws, user.uid);
  }
  expect(await post(`/sessions/${s.id}/actions/${card.request_id}`, { decision: "allow_once" })).toMatchObject({ decision: "allow_once" });
  const next = (await reply.waitFor((e) => e.event === "action_required" && e.data.replaces === card.request_id)).data;
  expect(next.reason).toContain("approval_stale");
  expect(existsSync(join(ws, "ran.txt"))).toBe(false);
  expect(await post(`/sessions/${s.id}/actions/${next.request_id}`, { decision: "deny" })).toMatchObject({ decision: "deny" });
  await reply.waitFor((e) => e.event === "turn_finished");
  expect(existsSync(join(ws, "ran.txt"))).toBe(false);
  reply.close();
  sp.proc.kill("SIGTERM");
  await sp.proc.exited;
}

describe.each(testUsers())("the compiled binary's serve, run as $name", (user: TestUser) => {
  test.each(CASES.map((c) => [`${c.command} (${Object.keys(c.change).join(", ")} changed)`, c] as const))(
    "%s while its card waits: the allow is approval_stale and nothing runs",
    async (_name, c) => {
      await staleAfterChange(user, c);
    },
    120_000,
  );
});
