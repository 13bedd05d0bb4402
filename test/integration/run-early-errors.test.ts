/**
 * @module test/integration/run-early-errors
 * `airlock run --headless --output-format json|stream-json` prints one result object with
 * `status: "invalid"` and `error: {code, message}` on stdout (the last line for stream-json) when the run
 * cannot start — a bad flag, a bad config, a bad recipe or parameter, a missing workspace — and keeps
 * the exit code (2). Runs the real CLI (src/main.ts) in a fresh process per input.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";

const MAIN = join(import.meta.dir, "../../src/main.ts");
const root = mkdtempSync(join(tmpdir(), "airlock-early-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let n = 0;
/** A fresh data dir (with `config` as airlock.yaml unless null) and workspace. */
function box(config: Record<string, unknown> | null = { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous" }) {
  const dir = join(root, `b${n++}`);
  const ws = join(dir, "ws");
  mkdirSync(ws, { recursive: true });
  if (config) writeFileSync(join(dir, "airlock.yaml"), stringify(config));
  writeFileSync(join(dir, "turns.yaml"), stringify({ turns: [{ text: "done" }] }));
  writeFileSync(
    join(dir, "recipe.yaml"),
    stringify({ name: "r", instructions: "look at {{ project }}", parameters: { project: { type: "string", required: true } }, provider: { name: "scripted", script: "turns.yaml" } }),
  );
  return { dir, ws };
}

async function airlock(cwd: string, args: string[]) {
  const p = Bun.spawn([process.execPath, MAIN, ...args], { cwd, stdin: "ignore", stdout: "pipe", stderr: "pipe", env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: root, LANG: "C.UTF-8" } });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { stdout, stderr, code };
}

/** Every early-error input: the args after `run`, and the error code the result must carry. */
const CASES: { name: string; args: (b: { dir: string; ws: string }) => string[]; config?: Record<string, unknown> | null; code: string }[] = [
  { name: "a bad config key", config: { provider: { name: "scripted", script: "turns.yaml" }, modee: "smart" }, args: () => ["go"], code: "config_invalid" },
  { name: "a bad --mode", args: () => ["go", "--mode", "yolo"], code: "usage" },
  { name: "a bad --sandbox", args: () => ["go", "--sandbox", "none"], code: "usage" },
  { name: "an unknown flag", args: () => ["go", "--frobnicate"], code: "usage" },
  { name: "a malformed --param", args: (b) => ["--recipe", join(b.dir, "recipe.yaml"), "--param", "=x"], code: "usage" },
  { name: "a missing recipe parameter", args: (b) => ["--recipe", join(b.dir, "recipe.yaml")], code: "recipe_invalid" },
  { name: "a missing recipe file", args: (b) => ["--recipe", join(b.dir, "nope.yaml")], code: "recipe_invalid" },
  { name: "--param without --recipe", args: () => ["go", "--param", "a=b"], code: "usage" },
  { name: "a missing --config file", args: (b) => ["go", "--config", join(b.dir, "missing.yaml")], code: "config_invalid" },
  { name: "a missing workspace", args: (b) => ["go", "--workspace", join(b.dir, "no-such-dir")], code: "bad_request" },
  { name: "no prompt", args: () => [], code: "usage" },
  { name: "a prompt of spaces only (as an empty stdin with '-' is)", args: () => ["   "], code: "usage" },
  { name: "a missing provider script", config: { provider: { name: "scripted", script: "absent.yaml" } }, args: () => ["go"], code: "config_invalid" },
];

describe("airlock run: early errors in machine output", () => {
  for (const c of CASES) {
    for (const format of ["json", "stream-json"] as const) {
      test(`${c.name} (${format}): exit 2, one result object with status invalid and error.code ${c.code}`, async () => {
        const b = box(c.config === undefined ? undefined : c.config);
        const r = await airlock(b.ws, ["run", ...c.args(b), "--headless", "--output-format", format, "--data-dir", b.dir]);
        expect(r.code).toBe(2);
        expect(r.stdout.endsWith("\n")).toBe(true);
        const lines = r.stdout.trimEnd().split("\n");
        const last = JSON.parse(lines.at(-1)!);
        if (format === "json") expect(lines).toHaveLength(1);
        else for (const l of lines) JSON.parse(l);
        expect(last).toMatchObject({
          ...(format === "stream-json" ? { type: "result" } : {}),
          session_id: null,
          status: "invalid",
          result: null,
          tool_calls: 0,
          refused_calls: [],
          error: { code: c.code },
        });
        expect(typeof last.error.message).toBe("string");
        expect(last.error.message.length).toBeGreaterThan(0);
        expect(typeof last.duration_ms).toBe("number");
        expect(r.stderr).toContain("airlock:");
      }, 60_000);
    }
  }

  test("text output keeps stdout empty on an early error", async () => {
    const b = box();
    const r = await airlock(b.ws, ["run", "go", "--mode", "yolo", "--headless", "--data-dir", b.dir]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
  }, 60_000);

  test("a run that starts prints exactly one result object, not an invalid one", async () => {
    const b = box();
    const r = await airlock(b.ws, ["run", "go", "--headless", "--output-format", "json", "--data-dir", b.dir]);
    expect(r.code).toBe(0);
    expect(r.stdout.trimEnd().split("\n")).toHaveLength(1);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: "completed", result: "done" });
  }, 60_000);
});
