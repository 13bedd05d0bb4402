/**
 * @module test/security/session-suggestions-never-cover-other-programs
 * "Allow for this session" offers the narrowest rule that covers the call. For a program that runs the
 * command after its own options (`watch`, `flock`, `strace`, `taskset`, `unshare` …) or a versioned
 * interpreter (`python3.12 -c …`, `node22 x.js`), a `Bash(prog:*)` rule would allow every command or
 * script for the rest of the session, far more than the call a person saw: no rule is offered.
 */
import { describe, expect, test } from "bun:test";
import { suggestRule } from "../../src/gate/rules/suggest.ts";

const SHELL = { name: "developer__shell" };

describe("no session rule is offered for a program that runs other programs", () => {
  test.each([
    "watch -n 1 ls",
    "watch ls",
    "flock /tmp/lock make",
    "strace -f ls",
    "taskset 1 ls",
    "unshare -r id",
    "fakeroot make install",
    "chrt 1 ls",
    "parallel echo ::: a b",
    "python3.12 -c 'print(1)'",
    "node22 build.js",
    "perl5.36 -e 1",
    "npx -y some-tool",
  ])("%s → no suggestion", (command) => {
    expect(suggestRule(SHELL, { command }, "/tmp")).toBeNull();
  });

  test("ordinary programs still get their narrow rule, `watch` none", () => {
    expect(suggestRule(SHELL, { command: "watch make build" }, "/tmp")).toBeNull();
    expect(suggestRule(SHELL, { command: "npm test" }, "/tmp")).toBe("Bash(npm test:*)");
    expect(suggestRule(SHELL, { command: "make build" }, "/tmp")).toBe("Bash(make build:*)");
  });
});
