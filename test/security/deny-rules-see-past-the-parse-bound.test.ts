/**
 * @module test/security/deny-rules-see-past-the-parse-bound
 * A command past the shell parser's bound (`MAX_COMMAND_CHARS`, 512 Ki characters) is not parsed, and a deny
 * or ask rule falls back to the command's raw words. Split on blanks only, those are one word list that starts
 * with the command's first word: `echo <600 KB>; rm -rf ~/x` no longer hit `Bash(rm:*)` (the base parsed it and
 * denied), leaving only the floor's ask — a deny became a question. The raw fallback must see every segment.
 */
import { describe, expect, test } from "bun:test";
import { compileRules } from "../../src/gate/rules/index.ts";
import { MAX_COMMAND_CHARS, splitCommands } from "../../src/shell/words.ts";

const SHELL = { name: "developer__shell" };
const RULES = compileRules({ allow: ["Bash"], ask: ["Bash(git push:*)"], deny: ["Bash(rm:*)"] });
const judge = (command: string) => RULES.judge(SHELL, { command }, "/tmp");
const big = "x".repeat(MAX_COMMAND_CHARS);

describe("a command too long to parse", () => {
  test.each([
    [`echo ${big}; rm -rf ~/x`],
    [`echo ${big} && timeout 5 rm -rf ~/x`],
    [`echo ${big}\nrm -rf ~/x`],
    [`echo ${big} | (rm -rf ~/x)`],
    [`echo ${big}; bash -c 'rm -rf ~/x'`],
    [`echo "$(rm -rf ~/x)" ${big}`],
  ])("is denied by a rule naming a later command (%#)", (command) => {
    expect(splitCommands(command).ok).toBe(false);
    expect(judge(command)).toEqual({ list: "deny", rule: "Bash(rm:*)" });
  });
  test("an ask rule too", () => {
    expect(judge(`echo ${big}; git push origin main`)).toEqual({ list: "ask", rule: "Bash(git push:*)" });
  });
});
