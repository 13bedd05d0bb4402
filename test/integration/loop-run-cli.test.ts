/**
 * `airlock run` as a real subprocess with the scripted provider: stdout carries only the answer, one
 * JSON result object, or NDJSON events ending with the result; logs go to stderr; exit codes per SPEC §2.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const MAIN = join(import.meta.dir, "../../src/main.ts");
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "airlock-run-"));
  mkdirSync(join(dir, "ws"));
  writeFileSync(join(dir, "ws", "a.txt"), "alpha");
  writeFileSync(join(dir, "airlock.yaml"), "provider: { name: scripted, script: turns.yaml }\nmode: autonomous\n");
  writeFileSync(
    join(dir, "turns.yaml"),
    `turns:
  - tool_calls: [{ name: developer__list_dir, arguments: { path: "." } }]
  - text: "Listed the workspace."
`,
  );
  writeFileSync(join(dir, "failing.yaml"), "turns:\n  - error: model exploded\n");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function airlock(args: string[]) {
  const p = Bun.spawn([process.execPath, MAIN, ...args, "--data-dir", dir], { cwd: join(dir, "ws"), stdin: "ignore", stdout: "pipe", stderr: "pipe", env: { ...process.env, AIRLOCK_HOME: "" } });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { stdout, stderr, code };
}

describe("airlock run", () => {
  test("--output-format json prints exactly one result object on stdout", async () => {
    const r = await airlock(["run", "list the files", "--output-format", "json"]);
    expect(r.code).toBe(0);
    const obj = JSON.parse(r.stdout);
    expect(obj).toMatchObject({ status: "completed", result: "Listed the workspace.", tool_calls: 1, refused_calls: [], error: null });
    expect(obj.session_id).toStartWith("ses_");
    expect(typeof obj.duration_ms).toBe("number");
    expect(r.stderr).toContain("developer__list_dir");
  });

  test("text prints only the answer; stream-json prints one event per line ending with the result", async () => {
    const t = await airlock(["run", "list the files"]);
    expect(t.code).toBe(0);
    expect(t.stdout).toBe("Listed the workspace.\n");
    const s = await airlock(["run", "list the files", "--output-format", "stream-json"]);
    expect(s.code).toBe(0);
    const lines = s.stdout.trimEnd().split("\n").map((l) => JSON.parse(l));
    expect(lines[0].type).toBe("turn_started");
    expect(lines.map((l) => l.type)).toContain("tool_request");
    expect(lines.at(-2).type).toBe("turn_finished");
    expect(lines.at(-1)).toMatchObject({ type: "result", status: "completed", result: "Listed the workspace." });
  });

  test("a provider failure exits 1 with the error on stderr and the failed result on stdout", async () => {
    const r = await airlock(["run", "go", "--output-format", "json", "--config", writeCfg("cfg-fail.yaml", "failing.yaml")]);
    expect(r.code).toBe(1);
    const obj = JSON.parse(r.stdout);
    expect(obj.status).toBe("failed");
    expect(obj.error.code).toBe("provider_error");
    expect(r.stderr).toContain("model exploded");
  });

  test("a bad flag value exits 2; no prompt and no stdin is a usage error", async () => {
    const bad = await airlock(["run", "x", "--mode", "yolo"]);
    expect(bad.code).toBe(2);
    expect(bad.stdout).toBe("");
    const none = await airlock(["run", "--output-format", "json"]);
    expect(none.code).toBe(2);
    expect(JSON.parse(none.stdout)).toMatchObject({ status: "invalid", error: { code: "usage" } });
    expect(none.stderr).toContain("no prompt");
  });
});

function writeCfg(name: string, script: string): string {
  const p = join(dir, name);
  writeFileSync(p, `provider: { name: scripted, script: ${script} }\nmode: autonomous\n`);
  return p;
}
