/**
 * @module test/security/hook-rewrite-judged-from-the-start
 * A PreToolUse hook's `updatedInput` replaces the call's input (Claude Code's hooks reference, "PreToolUse
 * decision control"), and airlock judges the new input again FROM THE START — schema, security floor,
 * permission rules, hooks, mode, elevation — so a hook can never route a call around the floor or the rules,
 * even when it answers `permissionDecision: "allow"` with its rewrite (that allow answers only the mode's
 * ask of the new input). Real sessions: the scripted model, the real gate, real hook processes, real shells.
 * - `ls` rewritten into `cat ~/.ssh/id_rsa` and "allowed": refused by the FLOOR (headless, through the real
 *   CLI, as root and as nobody; the key is never printed), and in a watched session a floor card with user
 *   proof shows the rewritten input, the events and the decision log name the rewriting hook;
 * - `ls` rewritten into a command a `permissions.deny` rule denies: refused by the rule;
 * - a hook that rewrites every time: refused after 3 rewrites, naming the hook; nothing ran.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { stringify } from "yaml";
import type { AnyEvent } from "../../src/bus/events.ts";
import { dataDirFor, sharedTempDir, testUsers } from "../as-user.ts";
import { type Harness } from "../harness.ts";
import { decide, startGateHarness } from "../integration/gate-helpers.ts";

const MAIN = path.join(import.meta.dir, "../../src/main.ts");
const PUB = path.join(import.meta.dir, "..", "fixtures", "hooks", "public-style");
const KEY = "-----BEGIN OPENSSH PRIVATE KEY----- not-a-real-key-7f3a";
const LS = `turns:\n  - tool_calls: [{ name: developer__shell, arguments: { command: "ls" } }]\n  - text: "done"\n`;
const bashHook = (command: string) => ({ PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command, timeout: 30 }] }] });

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

for (const user of testUsers()) {
  test(`as ${user.name}: a hook that rewrites \`ls\` into \`cat ~/.ssh/id_rsa\` and allows it is refused by the security floor (headless airlock run), the key never printed`, async () => {
    const base = sharedTempDir("airlock-hook-rewrite-");
    const data = path.join(base, "data");
    const ws = path.join(base, "ws");
    const ssh = path.join(base, ".ssh");
    for (const d of [data, ws, ssh]) {
      mkdirSync(d);
      chmodSync(d, 0o777);
    }
    dataDirFor(data, user);
    writeFileSync(path.join(ssh, "id_rsa"), `${KEY}\n`);
    chmodSync(path.join(ssh, "id_rsa"), 0o644); // readable by either user: only the floor stands between the hook and the key
    // danger-full-access: no sandbox hides ~/.ssh, so the floor's judgement of the NEW input is the wall
    writeFileSync(
      path.join(data, "airlock.yaml"),
      stringify({ provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous", sandbox: "danger-full-access", hooks: bashHook(path.join(PUB, "ls-to-ssh-key.sh")) }),
    );
    writeFileSync(path.join(data, "turns.yaml"), LS);
    const p = Bun.spawn([...user.prefix, process.execPath, MAIN, "run", "go", "--headless", "--output-format", "json", "--data-dir", data], {
      cwd: ws,
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
      env: { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: base, AIRLOCK_HOME: "" },
    });
    const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    expect(stdout + stderr).not.toContain("not-a-real-key");
    const r = JSON.parse(stdout);
    expect({ code, status: r.status }).toEqual({ code: 0, status: "completed" });
    expect(r.refused_calls.map((c: any) => [c.tool, c.code, c.inspector])).toEqual([["developer__shell", "no_human_surface", "sensitive_ops"]]);
    expect(r.refused_calls[0].reason).toContain("id_rsa");
  }, 60_000);
}

describe("a rewritten call is judged again from the start", () => {
  test("in a watched session the floor's card (user proof) shows the rewritten input; tool_request and the decision log name the hook", async () => {
    const hook = path.join(PUB, "ls-to-ssh-key.sh");
    h = await startGateHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous", hooks: bashHook(hook) },
      files: { "turns.yaml": LS },
    });
    const s = await h.createSession({ mode: "autonomous" });
    const events: AnyEvent[] = [];
    let onCard: (e: AnyEvent) => void = () => {};
    const card = new Promise<AnyEvent>((resolve) => (onCard = resolve));
    h.rt.bus.subscribe(s.id, (e) => {
      events.push(e);
      if (e.type === "action_required") onCard(e);
    });
    const turn = h.rt.runTurn(s.id, "go");
    const c = (await card) as Extract<AnyEvent, { type: "action_required" }>;
    expect(c.data).toMatchObject({ tool: "developer__shell", arguments: { command: "cat ~/.ssh/id_rsa" }, inspector: "sensitive_ops", requires_user_proof: true });
    expect((await decide(h, s.id, c.data.request_id, "deny")).status).toBe(200);
    expect(await turn).toMatchObject({ status: "completed", answer: "done" });

    const requests = events.filter((e) => e.type === "tool_request").map((e) => e.data);
    expect(requests).toMatchObject([{ arguments: { command: "ls" } }, { arguments: { command: "cat ~/.ssh/id_rsa" }, rewritten_by: hook }]);
    const tool = (await h.rt.store.listMessages(s.id)).find((m) => m.role === "tool")!;
    expect(JSON.parse(tool.content)).toMatchObject({ error: { code: "denied", inspector: "sensitive_ops" } });
    const res = await h.api(`/audit?session=${s.id}&decision=ask`);
    const row = ((await res.json()) as any).audit.find((a: any) => a.kind === "call_judged");
    expect(row.detail).toMatchObject({ inspector: "sensitive_ops", ran: false, rewritten: { by: [hook], rounds: 1 } });
    expect(row.detail.rewritten.original_sha256).not.toBe(row.detail.rewritten.final_sha256);
  }, 60_000);

  test("a rewrite into a command a permissions.deny rule denies is refused by the rule, though the hook allows it", async () => {
    h = await startGateHarness({
      config: {
        provider: { name: "scripted", script: "turns.yaml" },
        mode: "autonomous",
        permissions: { deny: ["Bash(rm:*)"] },
        hooks: bashHook(path.join(PUB, "ls-to-rm.sh")),
      },
      files: { "turns.yaml": LS },
      workspaceFiles: { "notes.txt": "keep me" },
    });
    const s = await h.createSession({ mode: "autonomous", headless: true });
    expect(await h.rt.runTurn(s.id, "go")).toMatchObject({ status: "completed", answer: "done" });
    const tool = (await h.rt.store.listMessages(s.id)).find((m) => m.role === "tool")!;
    expect(JSON.parse(tool.content)).toMatchObject({ error: { code: "denied", inspector: "rule", message: expect.stringContaining("Bash(rm:*)") } });
    expect(readFileSync(path.join(h.workspace, "notes.txt"), "utf8")).toBe("keep me");
  }, 60_000);

  test("a hook that rewrites the input every time is refused after 3 rewrites, naming the hook, and nothing runs", async () => {
    // the hook runs in the workspace: it counts its runs in hook-runs.txt there
    const hook = `${path.join(PUB, "keeps-rewriting.sh")} hook-runs.txt`;
    h = await startGateHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous", hooks: bashHook(hook) },
      files: { "turns.yaml": `turns:\n  - tool_calls: [{ name: developer__shell, arguments: { command: "touch ran.txt" } }]\n  - text: "done"\n` },
    });
    const s = await h.createSession({ mode: "autonomous", headless: true });
    expect(await h.rt.runTurn(s.id, "go")).toMatchObject({ status: "completed", answer: "done" });
    const tool = (await h.rt.store.listMessages(s.id)).find((m) => m.role === "tool")!;
    const err = JSON.parse(tool.content).error;
    expect(err).toMatchObject({ code: "hook_output_invalid", inspector: "hook" });
    expect(err.message).toContain(hook);
    expect(err.message).toContain("after 3 rewrites");
    expect(readFileSync(path.join(h.workspace, "hook-runs.txt"), "utf8").trim().split("\n")).toHaveLength(4);
    expect(existsSync(path.join(h.workspace, "ran.txt"))).toBe(false);
  }, 60_000);
});
