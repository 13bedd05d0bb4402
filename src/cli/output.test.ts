/**
 * @module cli/output.test
 * The output helpers in a real subprocess: every JSON line reaches a pipe reader even when the
 * process exits right after writing, and errors go to stderr as `airlock: <code>: <message>`.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const dir = mkdtempSync(join(tmpdir(), "airlock-output-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const OUTPUT = JSON.stringify(join(import.meta.dir, "output.ts"));
const ERRORS = JSON.stringify(join(import.meta.dir, "..", "errors.ts"));

/** Reads a stream to the end, pausing between chunks so the writer meets a full pipe (back-pressure), as a slow consumer would. */
async function readSlowly(stream: ReadableStream<Uint8Array>): Promise<string> {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    await Bun.sleep(1);
  }
  return Buffer.concat(chunks).toString("utf8");
}

async function runScript(source: string, slow = false): Promise<{ code: number; stdout: string; stderr: string }> {
  const file = join(dir, `s-${Math.random().toString(36).slice(2)}.ts`);
  writeFileSync(file, source);
  const p = Bun.spawn([process.execPath, file], { stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  const out = slow ? readSlowly(p.stdout) : new Response(p.stdout).text();
  const [stdout, stderr, code] = await Promise.all([out, new Response(p.stderr).text(), p.exited]);
  return { code, stdout, stderr };
}

describe("cli/output", () => {
  test("writeJsonLine: 20,000 lines (several MB) all reach a slow reader although the process exits at once", async () => {
    const r = await runScript(`import { writeJsonLine } from ${OUTPUT};
      for (let i = 0; i < 20000; i++) writeJsonLine({ type: "delta", i, text: "x".repeat(200) });
      process.exit(0);`, true);
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines).toHaveLength(20000);
    expect(JSON.parse(lines[19999]!)).toEqual({ type: "delta", i: 19999, text: "x".repeat(200) });
  });

  test("printError writes `airlock: <code>: <message>` on stderr only, and maps non-airlock errors to internal", async () => {
    const r = await runScript(`import { printError } from ${OUTPUT}; import { AirlockError } from ${ERRORS};
      const a = printError(new AirlockError("config_invalid", "airlock.yaml: mode: expected one of ..."));
      const b = printError(new Error("boom"));
      process.stdout.write(a.code + " " + b.code);`);
    expect(r).toEqual({
      code: 0,
      stdout: "config_invalid internal",
      stderr: "airlock: config_invalid: airlock.yaml: mode: expected one of ...\nairlock: internal: boom\n",
    });
  });
});
