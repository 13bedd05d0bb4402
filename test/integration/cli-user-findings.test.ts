/**
 * @module test/integration/cli-user-findings
 * What a new user ran into with the CLI, as real subprocesses (`bun src/main.ts …`): `serve` on a taken
 * port (exit 2, says what to do), `run --param` without `--recipe` (exit 2), a PROMPT given with
 * `--recipe` gets the recipe's substitution, an unreachable server is `server_unreachable` with the fix,
 * and server messages that name HTTP routes are followed by the CLI command to run instead.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startHarness, type Harness } from "../harness.ts";

const MAIN = join(import.meta.dir, "..", "..", "src", "main.ts");
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "airlock-findings-"));
  mkdirSync(join(dir, "ws"));
  writeFileSync(join(dir, "airlock.yaml"), "provider: { name: scripted, script: turns.yaml }\nmode: autonomous\n");
  writeFileSync(join(dir, "turns.yaml"), 'turns:\n  - text: "done"\n');
  writeFileSync(
    join(dir, "triage.yaml"),
    'name: triage\ninstructions: "Summarise {{ project }}"\nparameters:\n  project: { type: string, default: "." }\n  count: { type: integer, default: 3 }\n',
  );
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the CLI with `dir` as data dir (unless the args name another), stdin closed, no $AIRLOCK_URL. */
async function airlock(args: string[], env: Record<string, string> = {}) {
  const withDir = args.includes("--data-dir") ? args : [...args, "--data-dir", dir];
  const p = Bun.spawn([process.execPath, MAIN, ...withDir], {
    cwd: join(dir, "ws"),
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, AIRLOCK_HOME: "", AIRLOCK_URL: "", ...env },
  });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { stdout, stderr, code };
}

describe("airlock serve on a port that is taken", () => {
  test("exits 2 with a usage error naming the port and how to pick another", async () => {
    const other = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("someone else") });
    try {
      const r = await airlock(["serve", "--port", String(other.port)]);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe("");
      expect(r.stderr).toBe(`airlock: usage: port ${other.port} on 127.0.0.1 is in use; pick another with --port N (npm start -- --port N) or stop what is using it\n`);
    } finally {
      await other.stop(true);
    }
  });
});

describe("airlock run --param / --recipe", () => {
  test("--param without --recipe is a usage error (exit 2), not silently ignored", async () => {
    const r = await airlock(["run", "hello", "--param", "project=api"]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("airlock: usage: airlock run: --param needs --recipe");
    expect(r.stderr).toContain("--param project");
  });

  test("a PROMPT given with --recipe gets the recipe's {{ name }} substitution", async () => {
    const r = await airlock(["run", "look at {{ project }}, {{count}} items", "--recipe", join(dir, "triage.yaml"), "--param", "project=api", "--output-format", "json"]);
    expect(r.code).toBe(0);
    const result = JSON.parse(r.stdout) as { session_id: string; result: string };
    expect(result.result).toBe("done");
    const shown = await airlock(["sessions", "show", result.session_id, "--json"]);
    expect(shown.code).toBe(0);
    const { messages } = JSON.parse(shown.stdout) as { messages: { role: string; content: string }[] };
    expect(messages.find((m) => m.role === "user")?.content).toBe("look at api, 3 items");
  });

  test("a placeholder in PROMPT the recipe does not declare is the instructions' error, exit 2", async () => {
    const r = await airlock(["run", "look at {{ projct }}", "--recipe", join(dir, "triage.yaml")]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain(`prompt: {{ projct }} names no declared parameter; declare it under parameters`);
  });
});

describe("talking to airlock serve", () => {
  test("nothing listening: server_unreachable (exit 1), saying how to start or point at the server", async () => {
    const gone = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") });
    const url = `http://127.0.0.1:${gone.port}`;
    await gone.stop(true);
    for (const [args, env] of [
      [["actions", "list", "--url", url], {}],
      [["schedule", "list"], { AIRLOCK_URL: url }],
    ] as const) {
      const r = await airlock([...args], env);
      expect(r.code).toBe(1);
      expect(r.stdout).toBe("");
      // plain sentences: the URL and the cause in a few words, where the URL came from, what to do (no Bun
      // "Is the computer able to access the url?", no parentheses inside parentheses)
      expect(r.stderr).toBe(
        `airlock: server_unreachable: cannot reach airlock serve at ${url}: the connection was refused, so nothing listens on that port.\n` +
          `  The URL came from ${"AIRLOCK_URL" in env ? "$AIRLOCK_URL" : "--url"}.\n` +
          `  To start one, run in another terminal: airlock serve --data-dir ${dir}\n` +
          `  If one runs already, pass its URL with --url http://HOST:PORT (or export AIRLOCK_URL=http://HOST:PORT),\n` +
          `  with --data-dir set to that server's data dir, where its API token is.\n`,
      );
    }
  });

  describe("server messages naming HTTP routes get a CLI hint", () => {
    let h: Harness;
    beforeAll(async () => {
      h = await startHarness();
    });
    afterAll(async () => {
      await h.close();
    });

    test("an unknown card: 'airlock actions list --session …' after the server's message", async () => {
      const s = await h.createSession();
      const r = await airlock(["actions", "answer", "act_nope", "--session", s.id, "--deny", "--url", h.url, "--data-dir", h.dataDir]);
      expect(r.code).toBe(1);
      expect(r.stderr).toBe(
        `airlock: not_found: no card act_nope; list the cards you may answer with GET /sessions/${s.id}/actions\n` +
          `airlock: hint: list the cards you may answer with: airlock actions list --session ${s.id}\n`,
      );
    });

    test("an unknown schedule: 'airlock schedule list' after the server's message (remove and run)", async () => {
      for (const sub of ["remove", "run"]) {
        const r = await airlock(["schedule", sub, "sch_nope", "--data-dir", h.dataDir], { AIRLOCK_URL: h.url });
        expect(r.code).toBe(1);
        const lines = r.stderr.trimEnd().split("\n");
        expect(lines[0]).toStartWith("airlock: not_found: no schedule sch_nope; list schedules with GET /schedules");
        // the hint line, unless the server's own message already names the command
        if (!lines[0]!.includes("airlock schedule list")) expect(lines).toEqual([lines[0]!, "airlock: hint: list the schedules with: airlock schedule list"]);
        else expect(lines).toHaveLength(1);
      }
    });
  });
});

describe("help", () => {
  test("--url of the client commands names $AIRLOCK_URL and the data dir's serve.lock; the docs line lists recipes, mcp and console", async () => {
    for (const cmd of [["actions", "list"], ["actions", "answer"], ["schedule", "add"], ["schedule", "list"], ["schedule", "remove"], ["schedule", "run"], ["schedule", "runs"], ["console"], ["attach"]]) {
      const r = await airlock([...cmd, "--help"]);
      expect(r.code).toBe(0);
      expect(r.stdout.replace(/\s+/g, " ")).toContain(
        "--url <url> the running airlock serve (default: $AIRLOCK_URL, else the live airlock serve recorded in the data dir's serve.lock, else http://<server.host>:<server.port> from the config, sent a token only once it proves it holds the data dir's API token)",
      );
    }
    const top = await airlock(["--help"]);
    expect(top.stdout).toContain("Docs: README.md and docs/ (quickstart, configuration, recipes, console, mcp, api, providers, scale-out, security-model, performance; spec.md is the contract).");
    expect(top.stdout).toContain("$ airlock console");
  });
});
