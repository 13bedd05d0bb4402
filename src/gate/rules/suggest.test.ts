/**
 * "Allow for this session" suggestions: the narrowest rule covering a call, in Claude Code's syntax. A
 * property-style table: every suggestion parses with the rules parser and, as the only allow rule,
 * allows the call it was made for; calls no single safe rule covers get none.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { compileRules, parseRule } from "./index.ts";
import { SUGGEST_MAX_CHARS, suggestRule } from "./suggest.ts";

const ws = realpathSync(mkdtempSync(path.join(tmpdir(), "airlock-suggest-")));
/** The workspace, for the absolute paths session rules name. */
const WS = ws;
afterAll(() => rmSync(ws, { recursive: true, force: true }));

const SHELL = { name: "developer__shell" };
const READ = { name: "developer__read_file" };
const LIST = { name: "developer__list_dir" };
const WRITE = { name: "developer__write_file" };
const EDIT = { name: "developer__edit_file" };
const MCP = { name: "github__create_issue" };
const PY = { name: "interpreter__python" };

type Def = { name: string };
/** [tool, arguments (a path is relative to the workspace unless absolute), the rule expected or null]. */
const CASES: [Def, Record<string, unknown>, string | null][] = [
  [SHELL, { command: "npm run test -- --watch" }, "Bash(npm run test:*)"],
  [SHELL, { command: "npm run test" }, "Bash(npm run test:*)"],
  [SHELL, { command: "npm test" }, "Bash(npm test:*)"],
  [SHELL, { command: "git status" }, "Bash(git status:*)"],
  [SHELL, { command: "git commit -m 'fix it'" }, "Bash(git commit:*)"],
  // an option before the subcommand: Bash(git:*) would allow `git -c alias.x='!sh …'`, so none
  [SHELL, { command: "git -C sub log" }, null],
  [SHELL, { command: "ls -la src" }, "Bash(ls:*)"],
  [SHELL, { command: "touch one.txt" }, "Bash(touch:*)"],
  [SHELL, { command: "docker compose up -d web" }, "Bash(docker compose up:*)"],
  [SHELL, { command: "make" }, "Bash(make:*)"],
  [SHELL, { command: "./scripts/build.sh --fast" }, "Bash(./scripts/build.sh:*)"],
  [SHELL, { command: "cargo build --release" }, "Bash(cargo build:*)"],
  [SHELL, { command: "npm run build && npm run build -- --prod" }, "Bash(npm run build:*)"],
  [SHELL, { command: "npm test | tee log.txt" }, null],
  [SHELL, { command: "npm run test && rm -rf x" }, null],
  [SHELL, { command: "npm test > out.txt" }, null],
  [SHELL, { command: "echo $(whoami)" }, null],
  [SHELL, { command: "FOO=1 npm test" }, null],
  [SHELL, { command: "sudo npm test" }, null],
  [SHELL, { command: "timeout 5 npm test" }, null],
  [SHELL, { command: "bash -c 'npm test'" }, null],
  [SHELL, { command: "xargs rm" }, null],
  [SHELL, { command: "python3 x.py" }, null],
  [SHELL, { command: "'un quoted' x" }, null],
  [SHELL, { command: "if true; then x; fi" }, null],
  [SHELL, { command: "echo 'unterminated" }, null],
  [READ, { path: "src/a.ts" }, `Read(/${WS}/src/a.ts)`],
  [READ, { path: "./notes.md" }, `Read(/${WS}/notes.md)`],
  [READ, { path: "/etc/hostname" }, "Read(//etc/hostname)"],
  [READ, { path: "src/[id].ts" }, null],
  [READ, { path: "a b.txt" }, null],
  // a Read rule on a folder covers every file below it: a listing gets none
  [LIST, { path: "src" }, null],
  [WRITE, { path: "out/x.txt", content: "x" }, `Edit(/${WS}/out/x.txt)`],
  [EDIT, { path: "src/a.ts", old_string: "a", new_string: "b" }, `Edit(/${WS}/src/a.ts)`],
  [WRITE, { path: "/tmp/elsewhere.txt", content: "x" }, "Edit(//tmp/elsewhere.txt)"],
  [MCP, { title: "x" }, "mcp__github__create_issue"],
  [PY, { code: "print(1)" }, null],
];

describe("suggested rules", () => {
  test.each(CASES.map(([d, a, r]) => [d.name, JSON.stringify(a), d, a, r] as const))("%s %s", (_n, _a, def, args, want) => {
    expect(suggestRule(def, args, ws)).toBe(want);
  });

  test("a rule longer than a card can show is not offered (a model-chosen program word or path of any length)", () => {
    const word = `./${"a".repeat(SUGGEST_MAX_CHARS)}`;
    expect(suggestRule(SHELL, { command: `${word} build` }, ws)).toBeNull();
    expect(suggestRule(WRITE, { path: "d/".repeat(SUGGEST_MAX_CHARS), content: "x" }, ws)).toBeNull();
    expect(suggestRule(SHELL, { command: "./run build" }, ws)).toBe("Bash(./run build:*)");
  });

  test("a read or write pointed at a folder gets no rule (a Read or Edit rule on a folder covers every file below it)", () => {
    expect(suggestRule(READ, { path: "." }, ws)).toBeNull();
    expect(suggestRule(WRITE, { path: ws, content: "x" }, ws)).toBeNull();
    expect(suggestRule(READ, { path: "/etc" }, ws)).toBeNull();
  });

  test("every suggestion parses and, alone in allow, allows the very call it was made for, and not another command", () => {
    for (const [def, args, want] of CASES) {
      const got = suggestRule(def, args, ws);
      if (got === null) continue;
      expect(parseRule(got, { home: "/home/x" }).ok).toBe(true);
      expect(compileRules({ allow: [got], ask: [], deny: [] }).judge(def, args, ws)).toEqual({ list: "allow", rule: got });
      // it is narrower than the whole tool: another tool's call, or a different command, is not covered
      if (def === SHELL) expect(compileRules({ allow: [got], ask: [], deny: [] }).judge(def, { command: "rm -rf /tmp/zz" }, ws)).toBeNull();
    }
  });
});
