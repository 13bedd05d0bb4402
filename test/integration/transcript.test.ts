/**
 * Each session's transcript (`<dataDir>/transcripts/<id>.jsonl`, Claude Code's JSONL shape) over the
 * real runtime with the scripted provider: the lines of a shell call and a final answer in order, read
 * the way public hook scripts read Claude Code's transcripts (Python), a subagent's own file, a
 * transcript that lags the store or holds a torn line brought back in step by the next process, and a
 * real PreToolUse hook (under bubblewrap) that already finds the previous call's result on disk.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { transcriptPath } from "../../src/store/transcript.ts";
import { openSse, startHarness, type Harness } from "../harness.ts";
import { spawnServe } from "../harness-serve.ts";

let h: Harness | undefined;
const dirs: string[] = [];
const procs: Bun.Subprocess[] = [];
afterEach(async () => {
  for (const p of procs.splice(0)) {
    p.kill("SIGKILL");
    await p.exited;
  }
  await h?.close();
  h = undefined;
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const SCRIPT = `
turns:
  - text: "Let me look."
    tool_calls:
      - name: developer__shell
        arguments: { command: "echo transcript-needle-41" }
  - text: "The shell said transcript-needle-41."
`;

const lines = (file: string) =>
  readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l));

describe("session transcripts", () => {
  test("a shell call and a final answer are four lines in Claude Code's shape, in order, chained by parentUuid", async () => {
    h = await startHarness({ config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous" }, files: { "turns.yaml": SCRIPT } });
    const s = await h.createSession({ mode: "autonomous" });
    const r = await h.rt.runTurn(s.id, "run the echo");
    expect(r.status).toBe("completed");
    const file = await h.rt.transcriptPath(s.id);
    const real = join(h.rt.transcripts.dir, `${s.id}.jsonl`);
    expect(file).toBe(real);
    expect(file).toBe(transcriptPath(h.rt.transcripts.dir.replace(/\/transcripts$/, ""), s.id));
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(h.rt.transcripts.dir).mode & 0o777).toBe(0o700);
    const msgs = await h.rt.store.listMessages(s.id);
    const got = lines(file);
    expect(got.length).toBe(4);
    const ws = realpathSync(h.workspace);
    const common = (i: number) => ({ sessionId: s.id, uuid: msgs[i]!.id, parentUuid: i === 0 ? null : msgs[i - 1]!.id, timestamp: msgs[i]!.created_at, cwd: ws, isSidechain: false });
    expect(got[0]).toMatchObject({ ...common(0), type: "user", message: { role: "user", content: [{ type: "text", text: "run the echo" }] } });
    const call = msgs[1]!.tool_calls![0]!;
    expect(got[1]).toMatchObject({
      ...common(1),
      type: "assistant",
      message: { role: "assistant", content: [{ type: "text", text: "Let me look." }, { type: "tool_use", id: call.id, name: "Bash", input: { command: "echo transcript-needle-41" } }] },
    });
    expect(got[2]).toMatchObject({ ...common(2), type: "user", message: { role: "user", content: [{ type: "tool_result", tool_use_id: call.id, is_error: false }] } });
    expect(got[2].message.content[0].content).toContain("transcript-needle-41");
    expect(got[3]).toMatchObject({ ...common(3), type: "assistant", message: { role: "assistant", content: [{ type: "text", text: "The shell said transcript-needle-41." }] } });
    for (const l of got) expect(new Date(l.timestamp).toISOString()).toBe(l.timestamp);
  }, 60_000);

  test("a Python reader written like the public Stop hooks gets the last assistant text and the tool_use count", async () => {
    h = await startHarness({ config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous" }, files: { "turns.yaml": SCRIPT } });
    const s = await h.createSession({ mode: "autonomous" });
    expect((await h.rt.runTurn(s.id, "run the echo")).status).toBe("completed");
    const py = [
      "import json, sys",
      "last, uses, results = None, [], 0",
      "with open(sys.argv[1]) as f:",
      "    for line in f:",
      "        line = line.strip()",
      "        if not line: continue",
      "        e = json.loads(line)",
      "        content = e.get('message', {}).get('content', [])",
      "        if isinstance(content, str): content = [{'type': 'text', 'text': content}]",
      "        if e.get('type') == 'assistant':",
      "            texts = [b['text'] for b in content if b.get('type') == 'text' and b.get('text')]",
      "            if texts: last = '\\n'.join(texts)",
      "            uses += [b['name'] for b in content if b.get('type') == 'tool_use']",
      "        results += sum(1 for b in content if b.get('type') == 'tool_result')",
      "print(json.dumps({'last': last, 'tool_uses': len(uses), 'names': uses, 'results': results}))",
    ].join("\n");
    const p = Bun.spawn(["python3", "-c", py, await h.rt.transcriptPath(s.id)], { stdout: "pipe", stderr: "pipe" });
    const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    expect({ code, err }).toEqual({ code: 0, err: "" });
    expect(JSON.parse(out)).toEqual({ last: "The shell said transcript-needle-41.", tool_uses: 1, names: ["Bash"], results: 1 });
  }, 60_000);

  test("a subagent's session gets its own transcript, marked as a sidechain", async () => {
    h = await startHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous" },
      files: {
        "turns.yaml": `
turns:
  - tool_calls: [{ name: subagent__spawn, arguments: { instructions: "say child" } }]
  - text: "parent done"
subagents:
  - turns: [{ text: "child done" }]
`,
      },
    });
    const s = await h.createSession({ mode: "autonomous" });
    expect((await h.rt.runTurn(s.id, "spawn one")).status).toBe("completed");
    const child = (await h.rt.store.listSessions({ parent: s.id }))[0]!;
    const parent = lines(await h.rt.transcriptPath(s.id));
    const mine = lines(await h.rt.transcriptPath(child.id));
    expect(parent.map((l) => l.sessionId)).toEqual([s.id, s.id, s.id, s.id]);
    expect(parent[1].message.content[0]).toMatchObject({ type: "tool_use", name: "subagent__spawn", input: { instructions: "say child" } });
    expect(mine.map((l) => [l.type, l.sessionId, l.isSidechain])).toEqual([
      ["user", child.id, true],
      ["assistant", child.id, true],
    ]);
    expect(mine[1].message.content).toEqual([{ type: "text", text: "child done" }]);
  }, 60_000);

  test("a transcript that lags the store, or ends in a torn line, is brought back in step by the next process", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "airlock-transcript-"));
    dirs.push(dataDir);
    const opts = { config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous" }, files: { "turns.yaml": SCRIPT }, dataDir };
    h = await startHarness(opts);
    const s = await h.createSession({ mode: "autonomous" });
    expect((await h.rt.runTurn(s.id, "run the echo")).status).toBe("completed");
    const file = await h.rt.transcriptPath(s.id);
    const full = readFileSync(file, "utf8");
    await h.close();
    // killed between the store's commit and the append: the last two lines are missing
    const kept = full.split("\n").slice(0, 2).join("\n") + "\n";
    writeFileSync(file, kept);
    h = await startHarness(opts);
    expect(await h.rt.transcriptPath(s.id)).toBe(file);
    expect(readFileSync(file, "utf8")).toBe(full);
    await h.close();
    // a torn last line, and a file left world-readable: rebuilt whole, 0600
    writeFileSync(file, full.slice(0, full.length - 40));
    chmodSync(file, 0o644);
    h = await startHarness(opts);
    await h.rt.transcriptPath(s.id);
    expect(readFileSync(file, "utf8")).toBe(full);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    // a new turn appends after the rebuilt lines, its first line chained to the last one
    const before = lines(file).length;
    await h.rt.runTurn(s.id, "again");
    const after = lines(file);
    expect(after.length).toBeGreaterThanOrEqual(before + 2);
    expect(after[before].parentUuid).toBe(after[before - 1].uuid);
    expect(after[before]).toMatchObject({ type: "user", message: { content: [{ type: "text", text: "again" }] } });
  }, 60_000);

  test("a PreToolUse hook (real bubblewrap) already finds the previous call's result in the transcript", async () => {
    const two = `
turns:
  - tool_calls: [{ name: developer__shell, arguments: { command: "echo first-result-77" } }]
  - tool_calls: [{ name: developer__shell, arguments: { command: "echo second" } }]
  - text: "done"
`;
    const dataDir = mkdtempSync(join(tmpdir(), "airlock-transcript-hook-"));
    dirs.push(dataDir);
    const saw = join(dataDir, "hook-saw.txt");
    const command = `{ cat "$AIRLOCK_CONFIG_DIR"/transcripts/*.jsonl; echo ---; } >> ${saw}`;
    h = await startHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous", hooks: { PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command, timeout: 30 }] }] } },
      files: { "turns.yaml": two },
      dataDir,
    });
    const s = await h.createSession({ mode: "autonomous" });
    expect((await h.rt.runTurn(s.id, "two calls")).status).toBe("completed");
    const runs = readFileSync(saw, "utf8").split("---\n").filter((x) => x !== "");
    expect(runs.length).toBe(2);
    const at = (i: number) => runs[i]!.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l));
    // first call: the prompt and the assistant line asking for it; second call: the first result too
    expect(at(0).map((l) => l.type)).toEqual(["user", "assistant"]);
    expect(at(1).map((l) => l.type)).toEqual(["user", "assistant", "user", "assistant"]);
    expect(at(1)[2].message.content[0].content).toContain("first-result-77");
  }, 60_000);

  test("after kill -9 of a serve with a call parked on a card, the next process's crash recovery adds the interrupted result line", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "airlock-transcript-kill-"));
    dirs.push(dataDir);
    const ws = join(dataDir, "ws");
    const yaml = `mode: smart\nprovider: { name: scripted, script: turns.yaml }\n`;
    writeFileSync(join(dataDir, "airlock.yaml"), yaml);
    writeFileSync(join(dataDir, "turns.yaml"), `turns:\n  - tool_calls: [{ name: developer__write_file, arguments: { path: "x.txt", content: "x" } }]\n  - text: done\n`);
    mkdirSync(ws);
    const main = join(import.meta.dir, "../../src/main.ts");
    const sp = await spawnServe([process.execPath, main, "serve", "--port", "0", "--data-dir", dataDir, "--config", join(dataDir, "airlock.yaml")]);
    procs.push(sp.proc);
    const headers = { authorization: `Bearer ${readFileSync(join(dataDir, "api-token"), "utf8").trim()}`, "content-type": "application/json" };
    const created = await fetch(`${sp.url}/sessions`, { method: "POST", headers, body: JSON.stringify({ workspace: ws }) });
    const session = (await created.json()) as { id: string };
    const reply = await openSse(`${sp.url}/sessions/${session.id}/reply`, { method: "POST", headers, body: JSON.stringify({ message: "write x" }) });
    await reply.waitFor((e) => e.event === "action_required", 60_000);
    const file = join(realpathSync(dataDir), "transcripts", `${session.id}.jsonl`);
    // the prompt and the assistant's tool_use are on disk while the call is parked
    expect(lines(file).map((l) => l.type)).toEqual(["user", "assistant"]);
    sp.proc.kill("SIGKILL");
    await sp.proc.exited;
    await reply.ended;
    h = await startHarness({ config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "smart" }, dataDir });
    const got = lines(await h.rt.transcriptPath(session.id));
    expect(got.map((l) => l.type)).toEqual(["user", "assistant", "user"]);
    const call = got[1].message.content.find((b: any) => b.type === "tool_use");
    expect(call).toMatchObject({ name: "Write", input: { file_path: join(realpathSync(ws), "x.txt"), content: "x" } });
    expect(got[2].message.content[0]).toMatchObject({ type: "tool_result", tool_use_id: call.id, is_error: true });
    expect(got[2].message.content[0].content).toContain("interrupted");
    expect(got[2].parentUuid).toBe(got[1].uuid);
  }, 90_000);
});
