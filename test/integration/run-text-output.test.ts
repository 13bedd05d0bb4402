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
    const listed = lines.indexOf("airlock: refused_calls (calls that were not run, and why):");
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
    expect(r.stderr.split("\n").filter((l) => l.startsWith("airlock: refused_calls"))).toEqual([]);
    expect(r.stderr).toContain("airlock: ✗ developer__shell rm -rf build — no_human_surface: ");
  });

  test("a subagent's calls name their chain; a script's ✗ line is indented as its → line; the blocked line counts only the calls refused for want of a person", async () => {
    // root: a subagent, and a call of a tool that does not exist (unknown_tool: not for want of a person); then no answer.
    // The subagent's script asks for a shell command smart mode would ask about: refused no_human_surface.
    const sub = join(dir, "sub");
    mkdirSync(sub);
    writeFileSync(join(sub, "airlock.yaml"), "provider: { name: scripted, script: turns.yaml }\nmode: smart\n");
    const code = "try { await tools.developer__shell({ command: 'rm -rf build' }); } catch (e) {} return 'tried';";
    writeFileSync(
      join(sub, "turns.yaml"),
      `turns:
  - tool_calls:
      - { name: subagent__spawn, arguments: { instructions: "tidy up" } }
      - { name: nope__tool, arguments: {} }
  - text: ""
subagents:
  - turns:
      - tool_calls: [{ name: code_execution__execute, arguments: { code: ${JSON.stringify(code)} } }]
      - text: "could not"
`,
    );
    const r = await airlock(["run", "--headless", "tidy the project"], sub);
    expect(r.code).toBe(3);
    const lines = r.stderr.trimEnd().split("\n");
    // the root's own calls: no label
    expect(lines).toContain("airlock: → subagent__spawn tidy up");
    expect(lines.filter((l) => l.startsWith("airlock: ✗ nope__tool — unknown_tool: "))).toHaveLength(1);
    // the subagent's: its chain, as airlock attach and airlock acp say it; the script's call and its ✗ indented alike
    expect(lines).toContain(`airlock: → [root›subagent#0] code_execution__execute ${code.slice(0, 79)}…`);
    expect(lines).toContain("airlock:   script → [root›subagent#0] developer__shell rm -rf build");
    expect(lines.filter((l) => l.startsWith("airlock:   ✗ [root›subagent#0] developer__shell rm -rf build — no_human_surface: "))).toHaveLength(1);
    expect(lines.some((l) => /→ developer__shell|^airlock: ✗ developer__shell/.test(l))).toBe(false);
    // the list names each call as its → line did
    const listed = lines.findIndex((l) => l.startsWith("airlock: refused_calls"));
    expect(lines.slice(listed + 1, -1)).toEqual(["airlock:   nope__tool — unknown_tool", "airlock:   [root›subagent#0] developer__shell rm -rf build — no_human_surface"]);
    // one of the two refusals was for want of a person; the other is not blamed on that
    const blocked = lines.at(-1)!;
    expect(blocked).toStartWith("airlock: blocked: no_human_surface: the run ended without an answer after 1 call(s) were refused because no person could approve them (and 1 other call(s) for other reasons");
    expect(blocked).not.toContain("2 call(s)");
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

  test("--model without --provider: the error says the provider is what is missing", async () => {
    const empty = join(dir, "modelonly");
    mkdirSync(empty);
    const r = await airlock(["run", "--model", "gpt-4o", "summarise README.md"], empty);
    expect(r.code).toBe(2);
    expect(r.stderr).toStartWith('airlock: config_invalid: no model configured: provider.model is "gpt-4o", but no provider is named to run it');
    expect(r.stderr).toContain("--provider openai, openai-responses or anthropic");
    expect(r.stderr).not.toContain("also takes --provider and --model");
    expect(r.stderr.trimEnd().split("\n")).toHaveLength(1);
  });
});
