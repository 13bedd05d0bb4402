/**
 * @module test/integration/cli
 * The CLI as a user meets it: `bun src/main.ts …` as a real subprocess — version, help, usage errors
 * (exit 2 on stderr naming the flag), `token`, and a config error surfacing with exit 2.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };

const MAIN = join(import.meta.dir, "..", "..", "src", "main.ts");
const dirs: string[] = [];
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), "airlock-cli-"));
  dirs.push(d);
  return d;
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI with a clean data-dir environment (never the real home) and stdin closed. */
async function airlock(args: string[], env: Record<string, string> = {}): Promise<Ran> {
  const home = tempDir();
  const proc = Bun.spawn([process.execPath, MAIN, ...args], {
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, AIRLOCK_HOME: join(home, "data"), ...env },
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

describe("airlock --version / --help", () => {
  test("--version prints package.json's version on stdout and exits 0", async () => {
    const r = await airlock(["--version"]);
    expect(r).toEqual({ code: 0, stdout: `${pkg.version}\n`, stderr: "" });
  });

  test("--help lists every command with a description and examples", async () => {
    const r = await airlock(["--help"]);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe("");
    for (const cmd of ["serve", "run", "sessions", "actions", "schedule", "token", "console"]) {
      expect(r.stdout).toMatch(new RegExp(`^  ${cmd}\\b.*\\S`, "m"));
    }
    expect(r.stdout).toContain("Examples:");
    expect(r.stdout).not.toContain("__script-exec");
  });

  test("`help run` prints the run command's help and exits 0", async () => {
    const r = await airlock(["help", "run"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toStartWith("Usage: airlock run [options] [prompt]");
  });

  test("run --help documents its flags, their choices and the exit codes", async () => {
    const r = await airlock(["run", "--help"]);
    expect(r.code).toBe(0);
    for (const flag of ["--recipe", "--param", "--headless", "--output-format", "--mode", "--sandbox", "--workspace", "--provider", "--model", "--data-dir", "--config"]) {
      expect(r.stdout).toContain(flag);
    }
    expect(r.stdout).toContain('"stream-json"');
    expect(r.stdout).toContain("3 blocked");
    // PROMPT "-" reads the prompt from stdin: said where PROMPT is described, and shown in an example
    expect(r.stdout).toMatch(/prompt\s+what to ask; - reads it from stdin/);
    expect(r.stdout).toContain("airlock run - < task.txt");
  });
});

describe("usage errors exit 2 on stderr, naming what was wrong and pointing to --help", () => {
  const cases: [string[], RegExp][] = [
    [["run", "--bogus"], /unknown option '--bogus'/],
    [["frobnicate"], /unknown command 'frobnicate'/],
    [["run", "hi", "--output-format", "xml"], /'--output-format <format>' argument 'xml' is invalid\. Allowed choices are text, json, stream-json/],
    [["run", "hi", "--mode", "yolo"], /'--mode <mode>' argument 'yolo' is invalid/],
    [["run", "hi", "--sandbox", "none"], /'--sandbox <policy>' argument 'none' is invalid/],
    [["serve", "--port", "70000"], /'--port <port>' argument '70000' is invalid\. expected an integer from 0 to 65535/],
    [["serve", "--port", "http"], /'--port <port>' argument 'http' is invalid/],
    [["run", "--param", "novalue"], /'--param <key=value>' argument 'novalue' is invalid/],
    [["sessions", "show"], /missing required argument 'id'/],
    [["actions", "answer", "act_1"], /one of --allow-once, --allow-session or --deny is required/],
    [["actions", "answer", "act_1", "--session", "ses_1"], /one of --allow-once, --allow-session or --deny is required/],
    [["actions", "answer", "act_1", "--session", "ses_1", "--deny", "--allow-once"], /'--allow-once' cannot be used with option '--deny'/],
    [["schedule", "add", "--recipe", "x.yaml"], /required option '--cron <expr>' not specified/],
  ];
  for (const [args, expected] of cases) {
    test(`airlock ${args.join(" ")}`, async () => {
      const r = await airlock(args);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe("");
      expect(r.stderr).toMatch(/^airlock: usage: /);
      expect(r.stderr).toMatch(expected);
      expect(r.stderr).toMatch(/Run 'airlock( \w+)* --help' for usage\./);
    });
  }

  test("a misspelt flag gets a suggestion", async () => {
    const r = await airlock(["run", "--hedless"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("(Did you mean --headless?)");
  });

  test("a command group without its subcommand prints its help on stderr and exits 2", async () => {
    const r = await airlock(["schedule"]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("Usage: airlock schedule");
  });

  test("an invalid cron expression is refused naming --cron", async () => {
    const recipe = join(tempDir(), "r.yaml");
    writeFileSync(recipe, "name: r\ninstructions: hi\n");
    const r = await airlock(["schedule", "add", "--cron", "every tuesday", "--recipe", recipe]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^airlock: usage: --cron "every tuesday" is not a valid cron expression/);
  });
});

describe("config errors exit 2", () => {
  test("an invalid airlock.yaml lists every bad key", async () => {
    const data = tempDir();
    writeFileSync(join(data, "airlock.yaml"), "mode: yolo\nlimits:\n  max_concurrent_calls: eight\n");
    const r = await airlock(["serve", "--data-dir", data]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toStartWith(`airlock: config_invalid: ${join(data, "airlock.yaml")} is invalid (2 problems):`);
    expect(r.stderr).toContain('mode: expected one of "autonomous" | "smart" | "approve" | "chat", got "yolo" (line 1, column 7)');
    expect(r.stderr).toContain('limits.max_concurrent_calls: expected number, got "eight" (line 3, column 25)');
  });

  test("a missing --config file exits 2 naming it", async () => {
    const r = await airlock(["run", "hi", "--config", "/nonexistent/airlock.yaml"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("/nonexistent/airlock.yaml (given by --config) does not exist");
  });
});

describe("airlock token", () => {
  test("creates both tokens with mode 0600 in the data dir and prints their paths", async () => {
    const data = join(tempDir(), "fresh");
    const r = await airlock(["token", "--data-dir", data]);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe("");
    const api = join(data, "api-token");
    const approver = join(data, "approver-token");
    expect(r.stdout).toContain(`API token:      ${api}\n`);
    expect(r.stdout).toContain(`approver token: ${approver}\n`);
    for (const f of [api, approver]) {
      expect(statSync(f).mode & 0o777).toBe(0o600);
      expect(readFileSync(f, "utf8")).toMatch(/^[0-9a-f]{64}\n$/);
    }
    expect(statSync(data).mode & 0o777).toBe(0o700);
    // The token values themselves are never printed.
    expect(r.stdout).not.toContain(readFileSync(api, "utf8").trim());
  });

  test("uses $AIRLOCK_HOME, is stable across runs, and --json gives the paths", async () => {
    const data = join(tempDir(), "home");
    const first = await airlock(["token", "--json"], { AIRLOCK_HOME: data });
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout)).toEqual({ data_dir: data, api_token_path: join(data, "api-token"), approver_token_path: join(data, "approver-token") });
    const token = readFileSync(join(data, "api-token"), "utf8");
    const second = await airlock(["token"], { AIRLOCK_HOME: data });
    expect(second.code).toBe(0);
    expect(readFileSync(join(data, "api-token"), "utf8")).toBe(token);
  });
});
