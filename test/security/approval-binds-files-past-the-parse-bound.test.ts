/**
 * @module test/security/approval-binds-files-past-the-parse-bound
 * An approved call is bound to the content of the workspace files it runs (card/bound-files.ts): changed
 * between the card and the run, the call is refused. Which files: gate/named-files.ts, through the shell
 * parser. A command past the parser's bound (`MAX_COMMAND_CHARS`) is not parsed, and it named no file:
 * `echo <600 KB>; ./run.sh` was asked for (too long) and, approved, ran whatever run.sh held by then — the
 * base parsed it and bound run.sh. Every command shape the parser names must still be named.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, realpathSync, rmSync, writeFileSync, chmodSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { namedFiles } from "../../src/gate/named-files.ts";
import { MAX_COMMAND_CHARS, splitCommands } from "../../src/shell/words.ts";

const ws = realpathSync(mkdtempSync(path.join(os.tmpdir(), "airlock-bind-long-")));
afterAll(() => rmSync(ws, { recursive: true, force: true }));
for (const f of ["run.sh", "tool.py", "lib.sh"]) {
  writeFileSync(path.join(ws, f), "echo hi\n");
  chmodSync(path.join(ws, f), 0o755);
}
const big = "x".repeat(MAX_COMMAND_CHARS);
const named = (command: string) => namedFiles({ name: "developer__shell" }, { command }, ws).map((f) => f.rel).sort();

describe("a command too long to parse binds its approval to the files it runs", () => {
  test.each([
    [`echo ${big}; ./run.sh`, ["run.sh"]],
    [`echo ${big} && bash run.sh`, ["run.sh"]],
    [`echo ${big}\ntimeout 5 python3 tool.py`, ["tool.py"]],
    [`echo ${big}; source lib.sh`, ["lib.sh"]],
    [`echo ${big}; bash -c 'python3 tool.py'`, ["tool.py"]],
    [`echo ${big}; cat run.sh | sh`, ["run.sh"]],
    [`echo ${big}; sh < run.sh`, ["run.sh"]],
  ])("%#", (command, files) => {
    expect(splitCommands(command).ok).toBe(false);
    expect(named(command)).toEqual(files);
    // the same shape under the bound is parsed and names the same
    const short = command.replace(big, "x");
    expect(splitCommands(short).ok).toBe(true);
    expect(named(short)).toEqual(files);
  });
});
