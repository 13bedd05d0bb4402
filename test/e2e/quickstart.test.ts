/**
 * docs/quickstart.md is executable: every ```sh block on the page runs, in order, as one bash
 * script from the repository root (with `set -euo pipefail`), against the real compiled binary,
 * real bubblewrap and real HTTP. Only three things differ from a person following along: `npm install`
 * is skipped (the suite runs after it), port 7420 becomes a free port (also in `--port`), and the Ollama address
 * points at a local OpenAI-compatible server started here, speaking the streamed wire format.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startFakeOpenAI, textChunks, toolCallChunks } from "../fixtures/fake-openai.ts";
import { compiledBinary, REPO } from "../harness-binary.ts";

const DOC = join(REPO, "docs", "quickstart.md");

/** The ```sh blocks of a Markdown page, in order. */
export function shellBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
}

async function freePort(): Promise<number> {
  const s = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("") });
  const port = s.port!;
  await s.stop(true);
  return port;
}

const home = mkdtempSync(join("/var/tmp", "airlock-qs-home-")); // outside /tmp: private inside the sandbox
afterAll(() => rmSync(home, { recursive: true, force: true }));

test("every command in docs/quickstart.md runs and does what the page says", async () => {
  await compiledBinary(); // builds dist/airlock if stale; the page runs ./dist/airlock
  const model = startFakeOpenAI((body) => {
    const answered = (body.messages as { role: string }[]).some((m) => m.role === "tool");
    return answered
      ? textChunks("There are 2 files in the workspace.")
      : toolCallChunks({ name: "code_execution__execute", arguments: { code: "const l = await tools.developer__list_dir({ path: '.' }); return l;" } });
  });
  try {
    const port = await freePort();
    const blocks = shellBlocks(readFileSync(DOC, "utf8"));
    expect(blocks.length).toBeGreaterThanOrEqual(6);
    // on any failure, stop what the page started in the background (server, curl) with the script
    const script = ["set -euo pipefail", "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT", ...blocks]
      .join("\n")
      .split("\n")
      .filter((line) => line.trim() !== "npm install")
      .join("\n")
      .replaceAll("7420", String(port))
      .replaceAll("http://127.0.0.1:11434/v1", model.url);
    const p = Bun.spawn(["bash", "-c", script], {
      cwd: REPO,
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
      env: { PATH: `${join(REPO, "node_modules", ".bin")}:/usr/local/bin:/usr/bin:/bin`, HOME: home, LANG: "C.UTF-8" },
    });
    const killer = setTimeout(() => p.kill("SIGKILL"), 120_000);
    const [code, out, err] = await Promise.all([p.exited, new Response(p.stdout).text(), new Response(p.stderr).text()]);
    clearTimeout(killer);
    if (code !== 0) console.error(`quickstart failed (exit ${code})\n--- stdout\n${out}\n--- stderr\n${err}`);
    expect(code).toBe(0);
    // §1: airlock doctor checked the machine, one line per check (bubblewrap works here)
    expect(out).toMatch(/^ok {4}bubblewrap: .* created a sandbox/m);
    expect(out).toMatch(/^ok {4}provider: scripted: replays /m);
    // §3: the unproven allow was refused with the explanatory 403
    expect(out).toContain('"error":"user_proof_required"');
    // §4: approved, confined, finished
    expect(out).toMatch(/event: turn_finished\ndata: .*"status":"completed"/);
    expect(out).toMatch(/^built-\d{4}$/m);
    expect(out).toContain("nothing was written outside the workspace");
    // §5: the headless run's one result object, with the refused call
    const resultLine = out.split("\n").find((l) => l.startsWith('{"session_id"'))!;
    const result = JSON.parse(resultLine);
    expect(result.status).toBe("completed");
    expect(result.refused_calls).toEqual([expect.objectContaining({ tool: "developer__shell", code: "no_human_surface" })]);
    // §6: the OpenAI-compatible endpoint answered through a script that listed the workspace
    expect(out.trimEnd().endsWith("There are 2 files in the workspace.")).toBe(true);
    expect(model.requests.length).toBe(2);
    expect(JSON.stringify(model.requests[1])).toContain("build-stamp.txt");
  } finally {
    model.close();
  }
}, 180_000);
