/**
 * What `airlock run --output-format text` says, as a new user reads it (real `airlock run` subprocesses, the
 * scripted provider): each `→` and `✗` line on stderr names WHICH call it is (its command or path, one line,
 * cut, control characters escaped so a model-written argument cannot forge a line or drive the terminal); a
 * blocked run lists its refused calls on stderr before the line that points at them; a run with no answer
 * prints nothing on stdout (not an empty line); a run with no model configured says so once.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const MAIN = join(import.meta.dir, "../../src/main.ts");
let dir: string;

/** A command the model wrote to forge output: an ESC sequence that clears the line, a CR, a line break, a bidi override. */
const FORGING = "touch x\u001b[2K\rairlock: refused_calls:\nairlock: \u202eevil";
const LONG = `echo ${"y".repeat(200)} > long.txt`;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "airlock-run-text-"));
  mkdirSync(join(dir, "ws"));
  // smart mode, headless: every call that changes state is refused no_human_surface; the model then answers nothing
  writeFileSync(join(dir, "airlock.yaml"), "provider: { name: scripted, script: turns.yaml }\nmode: smart\n");
  writeFileSync(
    join(dir, "turns.yaml"),
    `turns:
  - tool_calls:
      - { name: developer__shell, arguments: { command: "npm install left-pad" } }
      - { name: developer__shell, arguments: { command: "rm -rf build" } }
      - { name: developer__write_file, arguments: { path: "notes/todo.md", content: "x" } }
      - { name: developer__shell, arguments: { command: ${JSON.stringify(FORGING)} } }
      - { name: developer__shell, arguments: { command: ${JSON.stringify(LONG)} } }
  - text: ""
`,
  );
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function airlock(args: string[], dataDir = dir) {
  const p = Bun.spawn([process.execPath, MAIN, ...args, "--data-dir", dataDir], { cwd: join(dir, "ws"), stdin: "ignore", stdout: "pipe", stderr: "pipe", env: { ...process.env, AIRLOCK_HOME: "" } });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { stdout, stderr, code };
}

describe("airlock run, text output", () => {
  test("a blocked run: → and ✗ name each call; the refused calls are listed before the blocked line; nothing on stdout", async () => {
    const r = await airlock(["run", "--headless", "set the project up"]);
    expect(r.code).toBe(3);
    expect(r.stdout).toBe(""); // no answer: no empty line either
    const lines = r.stderr.trimEnd().split("\n");
    // which call each line is about
    expect(lines).toContain("airlock: → developer__shell npm install left-pad");
    expect(lines).toContain("airlock: → developer__shell rm -rf build");
    expect(lines).toContain("airlock: → developer__write_file notes/todo.md");
    expect(lines.filter((l) => l.startsWith("airlock: ✗ developer__shell rm -rf build — no_human_surface: "))).toHaveLength(1);
    expect(lines.filter((l) => l.startsWith("airlock: ✗ developer__write_file notes/todo.md — no_human_surface: "))).toHaveLength(1);

    // the forging command stays on its own line, escaped: no control character reaches the terminal, no line is faked
    expect(r.stderr).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e]/);
    expect(lines.filter((l) => !l.startsWith("airlock: "))).toEqual([]);
    expect(lines.filter((l) => l.startsWith("airlock: refused_calls"))).toHaveLength(1);
    expect(lines).toContain("airlock: → developer__shell touch x\\u001b[2K\\u000dairlock: refused_calls:\\u000aairlock: \\u202eevil");
    // a long command is cut to one short line
    const long = lines.find((l) => l.startsWith("airlock: → developer__shell echo yyy"))!;
    expect(long).toEndWith("…");
    expect(long.length).toBeLessThanOrEqual("airlock: → developer__shell ".length + 80);

    // the refused calls, listed before the line that points at them
    const listed = lines.indexOf("airlock: refused_calls:");
    const blocked = lines.findIndex((l) => l.startsWith("airlock: blocked: no_human_surface: "));
    expect(listed).toBeGreaterThan(-1);
    expect(blocked).toBe(lines.length - 1);
    expect(lines[blocked]).toContain("see refused_calls");
    expect(lines.slice(listed + 1, blocked)).toEqual([
      "airlock:   developer__shell npm install left-pad — no_human_surface",
      "airlock:   developer__shell rm -rf build — no_human_surface",
      "airlock:   developer__write_file notes/todo.md — no_human_surface",
      "airlock:   developer__shell touch x\\u001b[2K\\u000dairlock: refused_calls:\\u000aairlock: \\u202eevil — no_human_surface",
      `${long.replace("airlock: → ", "airlock:   ")} — no_human_surface`,
    ]);
  });

  test("json output: the refused calls are in the result object, not listed again on stderr", async () => {
    const r = await airlock(["run", "--headless", "--output-format", "json", "set the project up"]);
    expect(r.code).toBe(3);
    expect(JSON.parse(r.stdout).refused_calls).toHaveLength(5);
    expect(r.stderr).not.toContain("airlock: refused_calls:\n");
    expect(r.stderr).toContain("airlock: ✗ developer__shell rm -rf build — no_human_surface: ");
  });

  test("no model configured: said once, as the error (exit 2), nothing else on stderr", async () => {
    const empty = join(dir, "nomodel");
    mkdirSync(empty);
    const r = await airlock(["run", "summarise README.md"], empty);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr.match(/no model configured/g)).toHaveLength(1);
    expect(r.stderr).toStartWith("airlock: config_invalid: no model configured");
    expect(r.stderr.trimEnd().split("\n")).toHaveLength(1);
  });
});
