/**
 * @module test/security/rule-wildcards-never-hang-airlock
 * A `Bash(…)` permission rule with `*` wildcards is tested, in airlock's own thread, against the text of every
 * shell command the model runs. An UNTRUSTED repository's `.claude/settings.json` brings deny and ask rules
 * (they are applied, `permissions.import_claude_settings`), and the model writes the command: with the rule
 * `Bash(*a*a*a*a*a*a*b)` and a command of 300 `a`s, the rule's regular expression backtracked for minutes,
 * freezing the gate, the API and every other session of `airlock serve`; so did a path rule
 * (`Read(./**\/*a*a*a*a*a*a*a*b)`, picomatch's expression) against a 200-character file name. Wildcards are
 * matched by a linear walk. The real runtime and gate, in a bounded child process: a hang fails the test instead of stalling it.
 */
import { expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { sharedTempDir } from "../as-user.ts";

const MAIN = path.join(import.meta.dir, "../../src/main.ts");

test("an untrusted repository's deny rule built to backtrack judges a long command at once, and still denies what it names", async () => {
  const base = sharedTempDir("airlock-rule-wildcard-");
  const data = path.join(base, "data");
  const ws = path.join(base, "ws");
  mkdirSync(data);
  mkdirSync(path.join(ws, ".claude"), { recursive: true });
  writeFileSync(path.join(ws, ".claude", "settings.json"), JSON.stringify({ permissions: { deny: ["Bash(*a*a*a*a*a*a*a*a*b)"] } }));
  const long = `echo ${"a".repeat(300)}`;
  writeFileSync(
    path.join(data, "airlock.yaml"),
    `mode: autonomous\npermissions: { import_claude_settings: true }\nprovider: { name: scripted, script: turns.yaml }\n`,
  );
  writeFileSync(
    path.join(data, "turns.yaml"),
    `turns:\n  - tool_calls: [{ name: developer__shell, arguments: { command: "${long}" } }, { name: developer__shell, arguments: { command: "echo a1a2a3a4a5a6a7a8b" } }]\n  - text: "done"\n`,
  );
  const p = Bun.spawn([process.execPath, MAIN, "run", "go", "--headless", "--output-format", "json", "--data-dir", data], {
    cwd: ws,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: base, AIRLOCK_HOME: "" },
  });
  // generous: the run takes seconds; the hang it replaces takes minutes per call
  const bound = setTimeout(() => p.kill("SIGKILL"), 90_000);
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  clearTimeout(bound);
  expect({ code, err: code === 0 ? "" : err }).toEqual({ code: 0, err: "" });
  const r = JSON.parse(out);
  expect(r.status).toBe("completed");
  // the long command matched no rule and ran; the one the rule names was denied by it
  expect(r.refused_calls).toMatchObject([{ tool: "developer__shell", code: "denied", inspector: "rule" }]);
  expect(r.refused_calls[0].reason).toContain("Bash(*a*a*a*a*a*a*a*a*b)");
}, 120_000);

test("an untrusted repository's path rule built to backtrack judges a long path at once, and still denies what it names", async () => {
  const base = sharedTempDir("airlock-rule-path-wildcard-");
  const data = path.join(base, "data");
  const ws = path.join(base, "ws");
  mkdirSync(data);
  mkdirSync(path.join(ws, ".claude"), { recursive: true });
  mkdirSync(path.join(ws, "x"));
  writeFileSync(path.join(ws, "x", "a".repeat(200)), "long");
  writeFileSync(path.join(ws, "x", "a1a2a3a4a5a6a7a8b"), "named");
  writeFileSync(path.join(ws, ".claude", "settings.json"), JSON.stringify({ permissions: { deny: ["Read(./**/*a*a*a*a*a*a*a*b)"] } }));
  writeFileSync(path.join(data, "airlock.yaml"), `mode: autonomous\npermissions: { import_claude_settings: true }\nprovider: { name: scripted, script: turns.yaml }\n`);
  writeFileSync(
    path.join(data, "turns.yaml"),
    `turns:\n  - tool_calls: [{ name: developer__read_file, arguments: { path: "x/${"a".repeat(200)}" } }, { name: developer__read_file, arguments: { path: "x/a1a2a3a4a5a6a7a8b" } }]\n  - text: "done"\n`,
  );
  const p = Bun.spawn([process.execPath, MAIN, "run", "go", "--headless", "--output-format", "json", "--data-dir", data], {
    cwd: ws,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: base, AIRLOCK_HOME: "" },
  });
  const bound = setTimeout(() => p.kill("SIGKILL"), 90_000);
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  clearTimeout(bound);
  expect({ code, err: code === 0 ? "" : err }).toEqual({ code: 0, err: "" });
  const r = JSON.parse(out);
  expect(r.status).toBe("completed");
  expect(r.refused_calls).toMatchObject([{ tool: "developer__read_file", code: "denied", inspector: "rule" }]);
  expect(r.refused_calls[0].reason).toContain("*a*a*a*a*a*a*a*b");
}, 120_000);
