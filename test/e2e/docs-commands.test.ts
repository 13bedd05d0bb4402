/**
 * Every shell block in the docs runs as written (the first hour): each ```sh / ```bash block of
 * docs/*.md, README.md and examples/README.md, and the `airlock …` commands in the comments of the files
 * under examples/, is either run, line by line as one bash script with
 * `set -euo pipefail`, against the real compiled binary (on PATH as `airlock`), a real `airlock serve`
 * and a scripted model, or skipped with a reason listed below. A block that is in neither list fails the
 * test, so a new page's commands cannot go untested unnoticed. docs/quickstart.md runs whole, in order,
 * in quickstart.test.ts.
 *
 * What the runner changes, and only this: port 7420 becomes a free port; `ses_…` / `sch_…` placeholders
 * become a real session / the schedule the block just added; lines that cannot run here are left out,
 * each with its reason (a foreground `airlock serve` — the test's own is running —, the interactive
 * `airlock attach`, an `act_…` card that needs a pending call, a recipe that needs an OpenAI key).
 */
import { afterAll, expect, test } from "bun:test";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { stringify } from "yaml";
import { compiledBinary, REPO } from "../harness-binary.ts";

const FS_SERVER = join(REPO, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");

/** Blocks not run here, by `file#index` (index among that file's sh/bash blocks), with the reason. */
const SKIPPED: Record<string, string> = {
  "docs/quickstart.md#*": "run whole, in order, by test/e2e/quickstart.test.ts",
  "docs/performance.md#0": "benchmarks: minutes of load on the machine (npm run bench)",
  "docs/providers.md#0": "needs real API keys and the network (the opt-in live test)",
  "docs/scale-out.md#0": "needs the PostgreSQL server it names; the same setting ($AIRLOCK_DATABASE_URL) is run against a throwaway cluster by test/e2e/postgres-storage.test.ts",
  "docs/acp.md#0": "an ACP handshake by hand; the protocol is driven by the SDK's own client in test/e2e/acp.test.ts",
  "docs/hooks.md#0": "the body of a hook script (run by test/integration/hooks-public-style.test.ts in this style), not a command",
  "README.md#0": "the installer line: run as written against a loopback server serving a real release folder in test/security/installer-installs-only-a-verified-binary.test.ts",
  "README.md#1": "the manual download: run as written against a loopback server serving a real release folder in test/security/installer-installs-only-a-verified-binary.test.ts",
  "README.md#2": "npm install / npm start (a foreground server) / npm test (this suite)",
  "README.md#3": "installs a system package: needs root and the network",
  "README.md#5": "development commands: the build, the suite, the typecheck this suite runs beside",
};

/** Blocks run here. */
const RUN = ["docs/api.md#0", "docs/attach.md#0", "docs/console.md#0", "docs/recipes.md#0", "README.md#4"];

/** Lines left out of a run block: the first rule a line matches gives the reason. */
const LEFT_OUT: [RegExp, string][] = [
  [/^airlock serve\b/, "a foreground server: the test's own airlock serve is running"],
  [/^airlock attach\b/, "interactive: follows a session until q (tested in test/integration/attach-*.test.ts)"],
  [/act_…/, "needs a pending card (the quickstart answers one)"],
  [/^airlock (run .*nightly|schedule run )/, "runs the nightly recipe, whose provider is OpenAI: needs OPENAI_API_KEY and the network"],
];

/** The ```sh / ```bash blocks of a Markdown page, in order. */
function shellBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```(?:sh|bash)\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
}

/** The commands in the examples' comments (`#   airlock run --recipe examples/recipes/…`), as one block per file. */
function exampleCommentBlocks(): { key: string; block: string }[] {
  const out: { key: string; block: string }[] = [];
  const walk = (dir: string): void => {
    for (const e of readdirSync(join(REPO, dir), { withFileTypes: true })) {
      const rel = `${dir}/${e.name}`;
      if (e.isDirectory()) walk(rel);
      else if (/\.(ya?ml|sh|ts)$/.test(e.name)) {
        const lines = readFileSync(join(REPO, rel), "utf8").split("\n").flatMap((l) => /^(?:#|\/\/)\s+(airlock \S.*)$/.exec(l)?.[1] ?? []);
        if (lines.length) out.push({ key: `${rel} (comments)`, block: lines.join("\n") });
      }
    }
  };
  walk("examples");
  return out;
}

/** The pages whose commands a user would run. */
function pages(): string[] {
  return [...readdirSync(join(REPO, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`), "README.md", "examples/README.md"];
}

/** A block as the bash script run: placeholders filled, lines that cannot run here left out (returned with their reasons). */
function prepare(block: string, port: number): { script: string; leftOut: string[] } {
  const leftOut: string[] = [];
  const lines: string[] = [];
  for (const raw of block.split("\n")) {
    const line = raw.replace(/\s{2,}#.*$/, "").replace(/^\s*#.*$/, ""); // comments after a command
    const rule = LEFT_OUT.find(([re]) => re.test(line.trim()));
    if (rule) {
      leftOut.push(`${line.trim()} — ${rule[1]}`);
      continue;
    }
    let l = line.replaceAll("7420", String(port)).replace(/ses_(0193)?…/g, "$SESSION").replace(/sch_(0193)?…/g, "$SCH");
    if (/^airlock schedule add\b/.test(l)) l = `SCH=$(${l}); echo "$SCH"`;
    if (/^airlock policy explain\b/.test(l)) l = `${l} || [ $? -le 2 ]`; // exit 0/1/2 = allow/deny/ask, as the page says
    lines.push(l);
  }
  return { script: ["set -euo pipefail", ...lines].join("\n"), leftOut };
}

const base = mkdtempSync(join("/var/tmp", "airlock-docs-cmds-"));
afterAll(() => rmSync(base, { recursive: true, force: true }));

async function freePort(): Promise<number> {
  const s = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("") });
  const port = s.port!;
  await s.stop(true);
  return port;
}

test("every sh/bash block in docs/, README.md and examples/README.md is run here or skipped with a listed reason", () => {
  const unlisted: string[] = [];
  for (const page of pages()) {
    shellBlocks(readFileSync(join(REPO, page), "utf8")).forEach((block, i) => {
      const key = `${page}#${i}`;
      if (!RUN.includes(key) && !SKIPPED[key] && !SKIPPED[`${page}#*`]) unlisted.push(`${key}: ${block.split("\n")[0]}`);
    });
  }
  expect(unlisted).toEqual([]);
  for (const key of RUN) {
    const [page, i] = key.split("#");
    expect(shellBlocks(readFileSync(join(REPO, page!), "utf8"))[Number(i)]).toBeDefined();
  }
});

test("the runnable blocks work as written against the compiled binary, a real airlock serve and a scripted model", async () => {
  const bin = await compiledBinary();
  const port = await freePort();
  const home = join(base, "home");
  const data = join(home, ".local", "share", "airlock"); // the default data dir: docs/api.md reads the token from there
  mkdirSync(data, { recursive: true, mode: 0o700 });
  writeFileSync(join(data, "turns.yaml"), "turns:\n  - text: done\n");
  writeFileSync(
    join(data, "airlock.yaml"),
    stringify({ provider: { name: "scripted", script: "turns.yaml" }, server: { port }, mcp_servers: { fs: { command: process.execPath, args: [FS_SERVER, "."], sandbox: "read-only" } } }),
  );
  // the folder the commands run in: the repository's examples/, a README.md, and a user's own nightly.yaml
  const cwd = join(base, "work");
  mkdirSync(cwd);
  symlinkSync(join(REPO, "examples"), join(cwd, "examples"));
  writeFileSync(join(cwd, "README.md"), "# a project\n");
  copyFileSync(join(REPO, "examples", "recipes", "nightly-triage.yaml"), join(cwd, "nightly.yaml"));
  const env = { PATH: `${dirname(bin)}:/usr/local/bin:/usr/bin:/bin`, HOME: home, LANG: "C.UTF-8" };

  const server = Bun.spawn([bin, "serve"], { cwd, env, stdin: "ignore", stdout: "ignore", stderr: "pipe" });
  const serverErr = new Response(server.stderr).text();
  try {
    for (let i = 0; ; i++) {
      const ok = await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok).catch(() => false);
      if (ok) break;
      if (i > 600 || server.exitCode !== null) throw new Error(`airlock serve did not start: ${await serverErr}`);
      await Bun.sleep(100);
    }
    // a session to stand for the pages' ses_… placeholders
    const first = Bun.spawn([bin, "run", "--output-format", "json", "hello"], { cwd, env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    const session = JSON.parse(await new Response(first.stdout).text()).session_id as string;
    expect(await first.exited).toBe(0);

    const failures: string[] = [];
    const leftOut: string[] = [];
    for (const key of RUN) {
      const [page, i] = key.split("#");
      const block = shellBlocks(readFileSync(join(REPO, page!), "utf8"))[Number(i)]!;
      const prepared = prepare(block, port);
      leftOut.push(...prepared.leftOut.map((l) => `${key}: ${l}`));
      const p = Bun.spawn(["bash", "-c", prepared.script], { cwd, env: { ...env, SESSION: session }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
      const killer = setTimeout(() => p.kill("SIGKILL"), 120_000);
      const [code, out, err] = await Promise.all([p.exited, new Response(p.stdout).text(), new Response(p.stderr).text()]);
      clearTimeout(killer);
      if (code !== 0) failures.push(`${key} exited ${code}\n--- script\n${prepared.script}\n--- stdout\n${out}\n--- stderr\n${err}`);
    }
    for (const { key, block } of exampleCommentBlocks()) {
      const prepared = prepare(block, port);
      leftOut.push(...prepared.leftOut.map((l) => `${key}: ${l}`));
      const p = Bun.spawn(["bash", "-c", prepared.script], { cwd, env: { ...env, SESSION: session }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
      const [code, out, err] = await Promise.all([p.exited, new Response(p.stdout).text(), new Response(p.stderr).text()]);
      if (code !== 0) failures.push(`${key} exited ${code}\n--- script\n${prepared.script}\n--- stdout\n${out}\n--- stderr\n${err}`);
    }
    expect(exampleCommentBlocks().map((b) => b.key)).toContain("examples/recipes/demo-scripted.yaml (comments)");
    console.error(`lines left out, with their reasons:\n${leftOut.map((l) => `  ${l}`).join("\n")}`);
    expect(failures).toEqual([]);
  } finally {
    server.kill("SIGTERM");
    await server.exited;
  }
}, 600_000);
