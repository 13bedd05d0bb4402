/**
 * Permission rules against Claude Code's documented behaviour ("Permission rule syntax", "Tool-specific
 * permission rules"): a table of rule/call cases — whole tools, exact, `:*` prefix and `*` wildcards,
 * compound commands (every part for allow, any part for deny), substitutions, path forms (`./`, bare
 * gitignore names, `~/`, `//abs`, `/settings-relative`, folders covering their subtree, symlinks), MCP
 * forms and precedence (deny > ask > allow) — and malformed rules.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { AirlockError } from "../../errors.ts";
import { compileRules, resolveSettingsRelative, type RuleLists } from "./index.ts";

let ws: string;
const HOME = "/home/rules-test-user";

beforeAll(() => {
  ws = realpathSync(mkdtempSync(path.join(tmpdir(), "airlock-rules-")));
  mkdirSync(path.join(ws, "secret"));
  writeFileSync(path.join(ws, "secret", "k"), "key");
  mkdirSync(path.join(ws, "pub"));
  symlinkSync("../secret/k", path.join(ws, "pub", "l"));
  symlinkSync("secret", path.join(ws, "link"));
});
afterAll(() => rmSync(ws, { recursive: true, force: true }));

type Lists = Partial<RuleLists>;
const SHELL = { name: "developer__shell" };
const READ = { name: "developer__read_file" };
const LIST = { name: "developer__list_dir" };
const WRITE = { name: "developer__write_file" };
const EDIT = { name: "developer__edit_file" };

/** The list whose rule decides, or null when no rule applies. */
function decide(lists: Lists, def: { name: string }, args: unknown): string | null {
  const rs = compileRules({ allow: [], ask: [], deny: [], ...lists }, { home: HOME });
  return rs.judge(def, args, ws)?.list ?? null;
}
const sh = (command: string) => ({ command });
const p = (file: string) => ({ path: file });

type Case = [what: string, lists: Lists, def: { name: string }, args: unknown, expected: "allow" | "ask" | "deny" | null];

const CASES: Case[] = [
  // whole tools
  ["Bash matches every command", { allow: ["Bash"] }, SHELL, sh("npm test"), "allow"],
  ["Bash(*) is the same as Bash", { allow: ["Bash(*)"] }, SHELL, sh("rm -rf build"), "allow"],
  // exact
  ["exact command", { allow: ["Bash(npm run build)"] }, SHELL, sh("npm run build"), "allow"],
  ["exact does not match more arguments", { allow: ["Bash(npm run build)"] }, SHELL, sh("npm run build --prod"), null],
  ["exact compares words, not quoting", { allow: ['Bash(git commit -m "fix bug")'] }, SHELL, sh("git commit -m 'fix bug'"), "allow"],
  // legacy :* prefix
  ["prefix :* matches the bare prefix", { allow: ["Bash(npm run test:*)"] }, SHELL, sh("npm run test"), "allow"],
  ["prefix :* matches more arguments", { allow: ["Bash(npm run test:*)"] }, SHELL, sh("npm run test -- --watch"), "allow"],
  ["prefix :* keeps a word boundary", { allow: ["Bash(npm run test:*)"] }, SHELL, sh("npm run testing"), null],
  // wildcards
  ["`ls *` matches ls -la", { allow: ["Bash(ls *)"] }, SHELL, sh("ls -la"), "allow"],
  ["`ls *` matches ls alone", { allow: ["Bash(ls *)"] }, SHELL, sh("ls"), "allow"],
  ["`ls *` does not match lsof (space = word boundary)", { allow: ["Bash(ls *)"] }, SHELL, sh("lsof -i"), null],
  ["`ls*` matches lsof", { allow: ["Bash(ls*)"] }, SHELL, sh("lsof -i"), "allow"],
  ["wildcard in the middle", { allow: ["Bash(git * main)"] }, SHELL, sh("git push origin main"), "allow"],
  ["wildcard in the middle, other end", { allow: ["Bash(git * main)"] }, SHELL, sh("git push origin dev"), null],
  // compound commands
  ["allow prefix does not allow `&& rm`", { allow: ["Bash(git status:*)"] }, SHELL, sh("git status && rm -rf x"), null],
  ["allow covers a list when every part matches", { allow: ["Bash(git:*)"] }, SHELL, sh("git status; git log --oneline"), "allow"],
  ["a pipe needs every stage allowed", { allow: ["Bash(git:*)"] }, SHELL, sh("git log | head -5"), null],
  ["a pipe with every stage allowed", { allow: ["Bash(git:*)", "Bash(head:*)"] }, SHELL, sh("git log | head -5"), "allow"],
  ["deny matches any part of a compound", { allow: ["Bash(git status:*)"], deny: ["Bash(rm:*)"] }, SHELL, sh("git status && rm -rf x"), "deny"],
  ["deny looks through env and wrappers", { deny: ["Bash(curl:*)"] }, SHELL, sh("FOO=1 timeout 5 curl http://x"), "deny"],
  ["deny looks inside bash -c", { deny: ["Bash(rm:*)"] }, SHELL, sh("bash -lc 'cd x && rm -rf y'"), "deny"],
  ["deny looks inside eval", { deny: ["Bash(rm:*)"] }, SHELL, sh("eval rm -rf y"), "deny"],
  ["deny looks inside if/then, loops and brace groups", { deny: ["Bash(rm:*)"] }, SHELL, sh("if true; then rm -rf y; fi; for i in 1; do rm z; done; { rm w; }"), "deny"],
  ["deny looks through xargs", { deny: ["Bash(rm:*)"] }, SHELL, sh("ls | xargs -0 rm -f"), "deny"],
  ["allow does not look through wrappers", { allow: ["Bash(git status)"] }, SHELL, sh("timeout 5 git status"), null],
  // substitutions and redirections
  ["a substitution never matches allow", { allow: ["Bash(echo:*)"] }, SHELL, sh("echo $(rm -rf x)"), null],
  ["backticks never match allow", { allow: ["Bash(echo:*)"] }, SHELL, sh("echo `id`"), null],
  ["deny sees inside a substitution", { deny: ["Bash(rm:*)"] }, SHELL, sh("echo $(rm -rf x)"), "deny"],
  ["unreadable command never matches allow", { allow: ["Bash"] }, SHELL, sh("echo 'unbalanced"), "allow"],
  ["unreadable command never matches a prefix allow", { allow: ["Bash(echo:*)"] }, SHELL, sh("echo 'unbalanced"), null],
  ["a write redirection never matches allow", { allow: ["Bash(cat:*)"] }, SHELL, sh("cat a > b"), null],
  ["stderr to /dev/null and 2>&1 still match", { allow: ["Bash(cat:*)"] }, SHELL, sh("cat a 2>/dev/null; cat b 2>&1"), "allow"],
  // precedence
  ["ask beats allow", { allow: ["Bash"], ask: ["Bash(git push:*)"] }, SHELL, sh("git push origin main"), "ask"],
  ["deny beats ask", { ask: ["Bash(git:*)"], deny: ["Bash(git push:*)"] }, SHELL, sh("git push origin"), "deny"],
  ["deny beats allow", { allow: ["Bash(npm:*)"], deny: ["Bash(npm publish:*)"] }, SHELL, sh("npm publish"), "deny"],
  ["airlock's name for the shell", { allow: ["developer__shell(git status)"] }, SHELL, sh("git status"), "allow"],
  // paths
  ["Read(./.env) hits .env", { deny: ["Read(./.env)"] }, READ, p(".env"), "deny"],
  ["Read(./.env) is anchored at the workspace", { deny: ["Read(./.env)"] }, READ, p("sub/.env"), null],
  ["Read(.env) (no slash) matches at any depth", { deny: ["Read(.env)"] }, READ, p("sub/.env"), "deny"],
  ["Read(~/.zshrc) is under home", { deny: ["Read(~/.zshrc)"] }, READ, p(`${HOME}/.zshrc`), "deny"],
  ["Read(//etc/passwd) is absolute", { deny: ["Read(//etc/passwd)"] }, READ, p("/etc/passwd"), "deny"],
  ["Read(//etc/**) covers list_dir below it", { deny: ["Read(//etc/**)"] }, LIST, p("/etc/ssl"), "deny"],
  ["Read(/secret/**) without a settings folder is the workspace", { deny: ["Read(/secret/**)"] }, READ, p("secret/k"), "deny"],
  ["Edit(src/**/*.ts) allows write_file", { allow: ["Edit(src/**/*.ts)"] }, WRITE, p("src/a/b.ts"), "allow"],
  ["Edit(src/**/*.ts) covers edit_file", { allow: ["Edit(src/**/*.ts)"] }, EDIT, p("src/b.ts"), "allow"],
  ["Edit(src/**/*.ts) not a .js file", { allow: ["Edit(src/**/*.ts)"] }, WRITE, p("src/a/b.js"), null],
  ["a folder covers its subtree", { deny: ["Edit(docs)"] }, WRITE, p("docs/a/b.md"), "deny"],
  ["Edit rules do not apply to reads", { deny: ["Edit"] }, READ, p("README.md"), null],
  ["Read rules cover list_dir", { allow: ["Read"] }, LIST, p("."), "allow"],
  ["deny follows a symlinked folder", { deny: ["Read(./secret/**)"] }, READ, p("link/k"), "deny"],
  ["allow needs the real path too", { allow: ["Read(./pub/**)"] }, READ, p("pub/l"), null],
  [".. cannot climb out of an allow", { allow: ["Read(./pub/**)"] }, READ, p("pub/../secret/k"), null],
  // MCP
  ["mcp__server covers its tools", { allow: ["mcp__github"] }, { name: "github__create_issue" }, {}, "allow"],
  ["mcp__server is not a prefix of another server", { allow: ["mcp__github"] }, { name: "githubx__create_issue" }, {}, null],
  ["mcp__server never covers a built-in", { deny: ["mcp__developer"] }, SHELL, sh("ls"), null],
  ["mcp__server__tool is that tool", { deny: ["mcp__github__create_issue"] }, { name: "github__create_issue" }, {}, "deny"],
  ["mcp__server__tool is only that tool", { deny: ["mcp__github__create_issue"] }, { name: "github__list_issues" }, {}, null],
  ["mcp__server__* covers its tools", { ask: ["mcp__github__*"] }, { name: "github__list_issues" }, {}, "ask"],
  ["airlock's server__tool name", { allow: ["github__list_issues"] }, { name: "github__list_issues" }, {}, "allow"],
  ["interpreter__python by name", { allow: ["interpreter__python"] }, { name: "interpreter__python" }, { code: "1" }, "allow"],
  ["subagent__spawn by name", { deny: ["subagent__spawn"] }, { name: "subagent__spawn" }, { prompt: "x" }, "deny"],
];

describe("rule/call table (Claude Code's documented behaviour)", () => {
  test(`holds at least 40 cases`, () => expect(CASES.length).toBeGreaterThanOrEqual(40));
  for (const [what, lists, def, args, expected] of CASES) {
    test(what, () => expect(decide(lists, def, args)).toBe(expected));
  }
});

describe("the verdict names the deciding rule", () => {
  test("first matching rule of the deciding list", () => {
    const rs = compileRules({ allow: ["Bash(git:*)"], ask: [], deny: ["Bash(npm:*)", "Bash(git push:*)"] }, { home: HOME });
    expect(rs.judge(SHELL, sh("git push"), ws)).toEqual({ list: "deny", rule: "Bash(git push:*)" });
  });
});

describe("settings-relative paths", () => {
  test("/path becomes //<settings folder>/path; other rules are unchanged", () => {
    expect(resolveSettingsRelative("Read(/src/**)", "/proj")).toBe("Read(//proj/src/**)");
    expect(resolveSettingsRelative("Edit(/a.txt)", "/proj/")).toBe("Edit(//proj/a.txt)");
    expect(resolveSettingsRelative("Read(//etc/x)", "/proj")).toBe("Read(//etc/x)");
    expect(resolveSettingsRelative("Bash(/bin/ls)", "/proj")).toBe("Bash(/bin/ls)");
  });
});

describe("malformed rules are config_invalid, naming the rule", () => {
  const bad: [string, string][] = [
    ["Bash(", "not a rule"],
    ["Bash()", "empty specifier"],
    ["Bsh(ls)", 'unknown tool "Bsh"'],
    ["mcp__github(x)", "MCP rules take no specifier"],
    ["Read(../x)", "no '..'"],
    ["interpreter__python(print)", "takes no specifier"],
    ["Bash(git status && rm x)", "one simple command"],
    ["Write(src/x)", "Edit(path)"],
    ["WebFetch(domain:example.com)", "airlock has no WebFetch tool"],
  ];
  for (const [rule, why] of bad) {
    test(rule, () => {
      let err: unknown;
      try {
        compileRules({ allow: [], ask: [], deny: [rule] });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(AirlockError);
      expect((err as AirlockError).code).toBe("config_invalid");
      expect((err as AirlockError).message).toContain(`permissions.deny: ${JSON.stringify(rule)}`);
      expect((err as AirlockError).message).toContain(why);
    });
  }
});
