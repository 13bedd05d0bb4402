/**
 * @module test/security/transcripts-hidden-from-tools-readable-by-hooks
 * Each session's transcript (`<dataDir>/transcripts/<id>.jsonl`) holds the whole conversation. Hooks
 * get its path (`transcript_path`) and must read it; nothing the model drives may. Under
 * `danger-full-access` a tool process or MCP server saw the whole data dir but its tokens and database,
 * so the transcripts were readable there, and an MCP server naming the data dir in its `credentials`
 * brought them back under any policy. Now the folder is behind an empty tmpfs for tools and MCP servers
 * in every policy, the file tools refuse it (`data_dir_refused`), and a hook (real bubblewrap,
 * `HOOK_PROCESS`) still reads it. Run as root and as nobody through the real launcher, McpManager and
 * hook runner (test/security/probe.ts), and end to end through the runtime with the scripted provider.
 */
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { testUsers } from "../as-user.ts";
import { startHarness, type Harness } from "../harness.ts";
import { ownedDir, probeEnv, removeTempDirs, runProbe, tempBase } from "./probe.ts";

afterAll(removeTempDirs);

const NEEDLE = "transcript-secret-5d2b";
const POLICIES = ["read-only", "workspace-write", "danger-full-access"] as const;

/** A data dir holding one transcript (and a token), owned by `user`, with a workspace beside it. */
function box(user: Parameters<typeof ownedDir>[0]) {
  const base = tempBase("airlock-transcripts-");
  const home = ownedDir(user, base, "home");
  const data = ownedDir(user, base, "data", { "approver-token": "APPROVER-SECRET\n" });
  const dir = ownedDir(user, data, "transcripts", { "ses_probe.jsonl": `{"type":"user","message":{"role":"user","content":[{"type":"text","text":"${NEEDLE}"}]}}\n` });
  const ws = ownedDir(user, base, "ws");
  return { home, data, dir, ws, file: join(dir, "ses_probe.jsonl") };
}

/** Prints the transcript (if readable), then `listing:` and the folder's entries (if any), then `end`. */
const readScript = (b: { dir: string; file: string }) => `cat ${b.file} 2>/dev/null; echo "listing:$(ls -A ${b.dir} 2>/dev/null | tr '\\n' ' ')"; echo end`;
/** What a process that can neither read nor list the folder prints. */
const NOTHING = "listing:\nend\n";

for (const user of testUsers()) {
  describe(`transcripts as ${user.name}`, () => {
    for (const policy of POLICIES) {
      test(`a ${policy} tool process reads and lists nothing in the transcripts folder`, async () => {
        const b = box(user);
        const r = await runProbe(user, { kind: "launch", policy, argv: ["/bin/sh", "-c", readScript(b)], cwd: b.ws, dataDir: b.data }, probeEnv(b.home));
        expect(r.stdout).toBe(NOTHING);
      }, 60_000);
    }

    for (const [policy, credentials] of [
      ["danger-full-access", []],
      ["read-only", ["DATA"]],
      ["read-only", ["DATA/transcripts"]],
    ] as const) {
      test(`a ${policy} MCP server${credentials.length ? ` naming ${credentials[0]}` : ""} reads and lists nothing in the transcripts folder`, async () => {
        const b = box(user);
        const named = credentials.map((c) => c.replace("DATA", b.data));
        const r = await runProbe(user, { kind: "mcp", policy, script: readScript(b), cwd: b.ws, dataDir: b.data, credentials: named }, probeEnv(b.home));
        expect(r.stdout).toBe(NOTHING);
      }, 60_000);
    }

    test("a hook (real bubblewrap) reads the transcript", async () => {
      const b = box(user);
      const seen = join(b.ws, "seen.txt");
      const verdict = await runProbe(user, { kind: "hook", command: `{ ${readScript(b)}; } > ${seen}`, cwd: b.ws, dataDir: b.data }, probeEnv(b.home));
      expect(verdict).toEqual({ kind: "allow", inspector: "hook" });
      const out = readFileSync(seen, "utf8");
      expect(out).toContain(NEEDLE);
      expect(out).toContain("listing:ses_probe.jsonl \nend\n");
    }, 60_000);
  });
}

describe("through the runtime", () => {
  let h: Harness | undefined;
  const dirs: string[] = [];
  afterEach(async () => {
    await h?.close();
    h = undefined;
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  for (const sandbox of ["workspace-write", "danger-full-access"] as const) {
    test(`a ${sandbox} shell call cannot read or list its own session's transcript`, async () => {
      const dataDir = mkdtempSync(join(tmpdir(), "airlock-transcripts-rt-"));
      dirs.push(dataDir);
      const t = join(dataDir, "transcripts");
      const script = `
turns:
  - tool_calls: [{ name: developer__shell, arguments: { command: "echo ${NEEDLE}" } }]
  - tool_calls: [{ name: developer__shell, arguments: { command: "cat ${t}/*.jsonl 2>&1; ls -A ${t} 2>&1; echo end" } }]
  - text: done
`;
      h = await startHarness({ config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous", sandbox }, files: { "turns.yaml": script }, dataDir });
      const s = await h.createSession({ mode: "autonomous", sandbox });
      expect((await h.rt.runTurn(s.id, "go")).status).toBe("completed");
      const results = (await h.rt.store.listMessages(s.id)).filter((m) => m.role === "tool").map((m) => JSON.parse(m.content));
      expect(results[0].stdout).toContain(NEEDLE);
      expect(results[1].stdout).toContain("end");
      expect(results[1].stdout).not.toContain(NEEDLE);
      expect(results[1].stdout).not.toContain(s.id);
      // the transcript is there all the same, holding both calls
      expect(readFileSync(await h.rt.transcriptPath(s.id), "utf8")).toContain(NEEDLE);
    }, 60_000);
  }

  test("the file tools refuse the transcripts folder and a transcript in it (data_dir_refused, no card)", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "airlock-transcripts-ft-"));
    dirs.push(dataDir);
    const t = join(dataDir, "transcripts");
    mkdirSync(t, { mode: 0o700 });
    writeFileSync(join(t, "ses_planted.jsonl"), `${NEEDLE}\n`, { mode: 0o600 });
    const script = `
turns:
  - tool_calls:
      - { name: developer__read_file, arguments: { path: "${t}/ses_planted.jsonl" } }
      - { name: developer__list_dir, arguments: { path: "${t}" } }
      - { name: developer__read_file, arguments: { path: "../transcripts/ses_planted.jsonl" } }
  - text: done
`;
    h = await startHarness({ config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous", sandbox: "danger-full-access" }, files: { "turns.yaml": script }, dataDir });
    const s = await h.createSession({ mode: "autonomous", sandbox: "danger-full-access" });
    expect((await h.rt.runTurn(s.id, "go")).status).toBe("completed");
    const results = (await h.rt.store.listMessages(s.id)).filter((m) => m.role === "tool");
    expect(results.map((m) => [m.is_error, JSON.parse(m.content).error?.code])).toEqual([
      [true, "data_dir_refused"],
      [true, "data_dir_refused"],
      [true, "data_dir_refused"],
    ]);
    for (const m of results) expect(m.content).not.toContain(NEEDLE);
  }, 60_000);
});
