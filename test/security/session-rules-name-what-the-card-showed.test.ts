/**
 * An "Allow for this session" rule holds for the whole session tree, so it must mean in every session of the
 * tree what the person saw on the card:
 * - a path rule names the absolute path: `Edit(./out/x.txt)` added in workspace /A would have allowed writing
 *   /B/out/x.txt in a child created with workspace /B (POST /sessions lets a child pick its own workspace);
 * - no rule on a bare program whose options before the subcommand run commands: `git -C sub log` was offered
 *   `Bash(git:*)`, which allows `git -c alias.x='!touch p' x`.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { compileRules } from "../../src/gate/rules/index.ts";
import { suggestRule } from "../../src/gate/rules/suggest.ts";

const root = realpathSync(mkdtempSync(path.join(tmpdir(), "airlock-session-rule-")));
const A = path.join(root, "A");
const B = path.join(root, "B");
mkdirSync(A);
mkdirSync(B);
afterAll(() => rmSync(root, { recursive: true, force: true }));

test("a session path rule added in workspace /A does not allow the same relative path in a child whose workspace is /B", () => {
  const write = { name: "developer__write_file" };
  const rule = suggestRule(write, { path: "out/x.txt", content: "x" }, A);
  expect(rule).toBe(`Edit(/${A}/out/x.txt)`);
  const set = compileRules({ allow: [rule!], ask: [], deny: [] });
  expect(set.judge(write, { path: "out/x.txt", content: "x" }, A)).toMatchObject({ list: "allow" });
  expect(set.judge(write, { path: "out/x.txt", content: "x" }, B)).toBeNull();
});

test("no session rule broader than every program git can run is offered for `git -C sub log`", () => {
  expect(suggestRule({ name: "developer__shell" }, { command: "git -C sub log" }, A)).toBeNull();
  expect(suggestRule({ name: "developer__shell" }, { command: "git log --oneline" }, A)).toBe("Bash(git log:*)");
});
