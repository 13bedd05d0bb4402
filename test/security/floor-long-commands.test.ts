/**
 * @module test/security/floor-long-commands
 * The model writes a shell command's length: a 4,000-line heredoc took the gate ~24 s of its one thread
 * (every session waited) before the card appeared — the shell splitter tested a regex against the end of
 * its growing output for every character (quadratic), and the floor walked PATH (a `stat` per folder) for
 * every word. Judging is now linear; this checks that the floor still sees every command in such texts
 * (a long heredoc, a 100 KB one-liner, deep `$( $( … ) )`, 20,000 `;`) and allows the harmless ones.
 * Timing is in scripts/bench/long-command.ts, never asserted here.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { judgeCall, securityFloor, type FloorEnv } from "../../src/gate/inspectors/security-floor.ts";
import { MAX_COMMAND_CHARS, splitCommands } from "../../src/shell/words.ts";
import { isKnownReadOnlyCommand } from "../../src/tool/read-only-commands.ts";

const root = mkdtempSync(path.join(os.tmpdir(), "airlock-floor-long-"));
const ws = path.join(root, "ws");
mkdirSync(ws);
afterAll(() => rmSync(root, { recursive: true, force: true }));
const env: FloorEnv = { workspace: ws, policy: "workspace-write", home: path.join(root, "home"), PATH: process.env.PATH };
const judge = (command: string) => judgeCall({ kind: "shell", command }, env);

const lines = (n: number, at?: number, line?: string) =>
  Array.from({ length: n }, (_, i) => (i === at ? line! : `- item ${i}: see section ${i % 97} of "the guide", cost $${i}.00 (${i * 7} units)`)).join("\n");
const words = (kb: number) => Array.from({ length: Math.ceil((kb * 1024) / 8) }, (_, i) => `w${i.toString(36).padStart(6, "0")}`).join(" ");

describe("a long heredoc", () => {
  test("of harmless lines is allowed, every line read", () => {
    const command = `cat > notes.txt <<'EOF'\n${lines(4000)}\nEOF`;
    expect(judge(command)).toEqual([]);
    expect(securityFloor({ name: "developer__shell" }, { command }, env).kind).toBe("allow");
    const parsed = splitCommands(command);
    expect(parsed.ok && parsed.commands.length).toBeGreaterThanOrEqual(4002); // `(…)` in a line is a subshell too
  });
  test("with a recursive delete on line 3,000 asks", () => {
    expect(judge(`cat > notes.txt <<'EOF'\n${lines(4000, 3000, "rm -rf ~")}\nEOF`).join("\n")).toContain("recursive delete of broad target ~");
  });
  test("unquoted, with a substitution that writes a protected file on its last line, asks", () => {
    expect(judge(`cat > notes.txt <<EOF\n${lines(4000, 3999, "$(echo x > ~/.bashrc)")}\nEOF`).join("\n")).toContain(".bashrc");
  });
  test("whose last line comments out nothing after a word-internal #", () => {
    expect(judge(`cat > notes.txt <<'EOF'\n${lines(4000, 3999, "a#b; rm -rf /")}\nEOF`).length).toBeGreaterThan(0);
  });
});

describe("a 100 KB one-liner", () => {
  test("of harmless words is allowed", () => {
    expect(judge(`echo ${words(100)}`)).toEqual([]);
  });
  test("ending in a delete of the root asks", () => {
    expect(judge(`echo ${words(100)}; rm -rf /`).join("\n")).toContain("recursive delete of broad target /");
  });
  test("ending in a redirect to /etc asks", () => {
    expect(judge(`echo ${words(100)} > /etc/passwd`).join("\n")).toContain("/etc/passwd");
  });
  test("with a fd redirect at its end still reads the fd, not an argument", () => {
    expect(judge(`echo ${words(100)} 2>/dev/null`)).toEqual([]);
    expect(judge(`echo ${words(100)} 2>/etc/x`).join("\n")).toContain("/etc/x");
  });
});

describe("a command past the parser's bound", () => {
  test("a 600 KB heredoc asks, saying why", () => {
    const command = `cat > notes.txt <<'EOF'\n${"harmless words on a line\n".repeat(24_000)}EOF`;
    expect(command.length).toBeGreaterThan(MAX_COMMAND_CHARS);
    expect(judge(command).join("\n")).toContain(`more than the ${MAX_COMMAND_CHARS} the floor reads`);
    expect(isKnownReadOnlyCommand(`ls ${"a ".repeat(1000)}`)).toBe(true);
    expect(isKnownReadOnlyCommand(`ls ${"a ".repeat(MAX_COMMAND_CHARS / 2)}`)).toBe(false);
  });
});

describe("deep substitutions", () => {
  test("200 nested $( … ) around a delete ask", () => {
    expect(judge(`${"echo $(".repeat(200)}rm -rf /${")".repeat(200)}`).join("\n")).toContain("recursive delete of broad target /");
    expect(judge(`${"echo $(".repeat(200)}true${")".repeat(200)}`)).toEqual([]);
  });
  test("quoted substitutions nested 20 deep around a delete ask", () => {
    expect(judge(`${'echo "$('.repeat(20)}rm -rf ~${')"'.repeat(20)}`).length).toBeGreaterThan(0);
  });
  test("bash -c nested past the bound asks, with the reason", () => {
    let command = "true";
    for (let i = 0; i < 12; i++) command = `bash -c ${JSON.stringify(command)}`;
    expect(judge(command).join("\n")).toContain("nests shells too deeply to judge");
  });
});

describe("words that name commands", () => {
  // each command name among a command's words is judged again with the words after it (an unlisted wrapper
  // hides nothing): `echo rm rm rm …` took 2 minutes for 2,000 words before this was bounded
  test("2,000 `rm` words ask as too complex to judge", () => {
    expect(judge(`echo ${"rm ".repeat(2000)}`).join("\n")).toContain("too complex to judge");
    expect(judge(`echo ${"bash -c x ".repeat(2000)}`).join("\n")).toContain("too complex to judge");
  });
  test("a few still judge each as a command", () => {
    expect(judge("echo a rm b tee c")).toEqual([]);
    expect(judge(`echo ${"x ".repeat(100)} setsid rm -rf /`).join("\n")).toContain("recursive delete of broad target /");
  });
  test("more symlinks than the floor follows ask", () => {
    const links = Array.from({ length: 300 }, (_, i) => `ln -s a${i} b${i}`).join("; ");
    expect(judge(links).join("\n")).toContain("too many for the floor to follow");
    expect(judge(Array.from({ length: 200 }, (_, i) => `ln -s a${i} b${i}`).join("; "))).toEqual([]);
  });
});

describe("many commands", () => {
  test("20,000 `;` then a delete asks; without it, allowed", () => {
    expect(judge(`${"true; ".repeat(20_000)}rm -rf ~`).join("\n")).toContain("recursive delete of broad target ~");
    expect(judge(`${"true; ".repeat(20_000)}echo done`)).toEqual([]);
  });
});
