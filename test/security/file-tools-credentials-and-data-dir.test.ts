/**
 * @module test/security/file-tools-credentials-and-data-dir
 * The file tools (`developer__read_file`, `developer__list_dir`) against credential stores, other
 * processes' `/proc/<pid>/environ`, and airlock's own data dir, through a real `airlock run --headless`
 * process (real gate, real floor), once as root and once as nobody. A credential read is an ask (so
 * headless refuses it as `no_human_surface`, never a silent read); the data dir is refused outright
 * (`data_dir_refused`, no card) in every mode; listing the data dir's parent is fine.
 */
import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { stringify } from "yaml";
import { dataDirFor, sharedTempDir, testUsers } from "../as-user.ts";

const MAIN = path.join(import.meta.dir, "../../src/main.ts");
const NEEDLE = "needle-secret-6d1f";

/** Every credential store the issue names: read_file of each must ask. */
const CRED_FILES = [
  ".kube/config",
  ".docker/config.json",
  ".config/gcloud/application_default_credentials.json",
  ".git-credentials",
  ".npmrc",
  ".pgpass",
  ".gnupg/private-keys-v1.d/ABC.key",
  ".config/gh/hosts.yml",
  ".cargo/credentials.toml",
  ".azure/accessTokens.json",
  ".pypirc",
  ".netrc",
];
const CRED_DIRS = [".gnupg", ".kube", ".config/gh", ".docker"];

function box(mode: string) {
  const base = sharedTempDir("airlock-creds-ft-");
  const home = path.join(base, "home");
  const data = path.join(base, "data");
  const ws = path.join(base, "ws");
  for (const d of [home, data, ws]) {
    mkdirSync(d);
    chmodSync(d, 0o777);
  }
  for (const f of CRED_FILES) {
    mkdirSync(path.dirname(path.join(home, f)), { recursive: true });
    writeFileSync(path.join(home, f), `${NEEDLE} ${f}\n`);
  }
  writeFileSync(path.join(ws, "notes.txt"), "plain notes\n");
  symlinkSync(path.join(data, "approver-token"), path.join(ws, "innocent.txt"));
  symlinkSync(data, path.join(ws, "d"));
  const calls = [
    ...CRED_FILES.map((f) => ({ name: "developer__read_file", arguments: { path: path.join(home, f) } })),
    ...CRED_DIRS.map((d) => ({ name: "developer__list_dir", arguments: { path: path.join(home, d) } })),
    // a link in the workspace to a credential file
    { name: "developer__read_file", arguments: { path: "kube-link" } },
    // other processes' environment and memory (airlock's parent; pid 1; self/../N)
    { name: "developer__read_file", arguments: { path: "/proc/1/environ" } },
    { name: "developer__read_file", arguments: { path: `/proc/self/../1/environ` } },
    { name: "developer__read_file", arguments: { path: "/proc/self/environ" } },
    { name: "developer__read_file", arguments: { path: "/proc/1/mem" } },
    // the data dir: by name, relative with .., through links, listed
    { name: "developer__read_file", arguments: { path: path.join(data, "approver-token") } },
    { name: "developer__read_file", arguments: { path: "../data/api-token" } },
    { name: "developer__read_file", arguments: { path: "innocent.txt" } },
    { name: "developer__read_file", arguments: { path: "d/airlock.db" } },
    { name: "developer__list_dir", arguments: { path: data } },
    { name: "developer__list_dir", arguments: { path: "d" } },
    { name: "developer__list_dir", arguments: { path: `${ws}/../data/.` } },
    { name: "developer__write_file", arguments: { path: "d/approver-token", content: "mine" } },
    // allowed: the parent of the data dir, and a plain workspace file
    { name: "developer__list_dir", arguments: { path: base } },
    { name: "developer__read_file", arguments: { path: "notes.txt" } },
  ];
  symlinkSync(path.join(home, ".kube/config"), path.join(ws, "kube-link"));
  writeFileSync(path.join(data, "airlock.yaml"), stringify({ provider: { name: "scripted", script: "turns.yaml" }, mode, sandbox: "workspace-write" }));
  writeFileSync(path.join(data, "turns.yaml"), stringify({ turns: [{ tool_calls: calls }, { text: "done" }] }));
  chmodSync(path.join(data, "airlock.yaml"), 0o644);
  return { base, home, data, ws, calls };
}

async function runAs(prefix: string[], b: ReturnType<typeof box>) {
  const p = Bun.spawn([...prefix, process.execPath, MAIN, "run", "go", "--headless", "--output-format", "json", "--data-dir", b.data], {
    cwd: b.ws,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: process.env.PATH, HOME: b.home, AIRLOCK_HOME: "", OPENAI_API_KEY: `sk-${NEEDLE}` },
  });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (code !== 0) throw new Error(`airlock run exited ${code}: ${stderr}\n${stdout}`);
  return JSON.parse(stdout) as { status: string; refused_calls: { tool: string; code: string; inspector?: string; reason: string }[] };
}

function toolMessages(data: string): string[] {
  const db = new Database(path.join(data, "airlock.db"), { readonly: true });
  try {
    return db.query<{ content: string }, []>("SELECT content FROM messages WHERE role = 'tool' ORDER BY rowid").all().map((r) => r.content);
  } finally {
    db.close();
  }
}

for (const user of testUsers()) {
  describe(`file tools as ${user.name}`, () => {
    for (const mode of ["autonomous", "smart"]) {
      test(`${mode}: credential stores and other processes' environ ask; the data dir is refused with no card; the parent lists`, async () => {
        const b = box(mode);
        dataDirFor(b.data, user);
        const r = await runAs(user.prefix, b);
        expect(r.status).toBe("completed");
        const codes = r.refused_calls.map((c) => c.code);
        const asks = r.refused_calls.filter((c) => c.code === "no_human_surface");
        const refusals = r.refused_calls.filter((c) => c.code === "data_dir_refused");
        // every file, every folder, the link, and four /proc reads (a file tool is airlock: its /proc/self too)
        expect(asks.length).toBe(CRED_FILES.length + CRED_DIRS.length + 1 + 4);
        for (const a of asks) expect(a.inspector).toBe("sensitive_ops");
        expect(refusals.length).toBe(8);
        for (const x of refusals) expect(x.inspector).toBe("sensitive_ops");
        expect(codes.length).toBe(asks.length + refusals.length);
        const tool = toolMessages(b.data).join("\n");
        expect(tool).not.toContain(NEEDLE);
        expect(tool).toContain("plain notes");
        // the parent of the data dir lists, showing the data dir's name
        expect(tool).toMatch(/"name":\s*"data"/);
        // no token file was written or read; the data dir is unchanged by the write attempt
        expect(readdirSync(b.data).sort()).toContain("approver-token");
        expect(readFileSync(path.join(b.data, "approver-token"), "utf8")).not.toBe("mine");
      }, 60_000);
    }
  });
}
